"""The architecture census of src/odradek: what issue #28 counts before and after (docs/architecture.md).

    .venv/bin/python tools/architecture_census.py          # the report, every finding with its line
    .venv/bin/python tools/architecture_census.py --json   # the same as JSON
    .venv/bin/python tools/architecture_census.py --write  # rewrite docs/architecture-census.json
    .venv/bin/python tools/architecture_census.py --check  # exit 1 on an import-rule violation that is
                                                            # new, or allow-listed and gone (as the test)

Static analysis of the source with `ast`; nothing is imported. The import rules and their allow-list
are enforced by tests/unit/architecture/test_import_rules.py.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tools.architecture import known_violations  # noqa: E402 - after the path is set
from tools.architecture.census import report, take  # noqa: E402
from tools.architecture.layers import violations  # noqa: E402
from tools.architecture.modules import read_package  # noqa: E402

PACKAGE = REPO / "src" / "odradek"
BASELINE = REPO / "docs" / "architecture-census.json"
KNOWN = REPO / "tests" / "unit" / "architecture" / "known_violations.toml"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--json", action="store_true", help="print the census as JSON")
    what.add_argument("--write", action="store_true", help=f"write the JSON to {BASELINE.relative_to(REPO)}")
    what.add_argument("--check", action="store_true", help="compare the import rules with the allow-list")
    args = parser.parse_args(argv)
    if args.check:
        found = violations(read_package(PACKAGE))
        comparison = known_violations.compare(found, known_violations.load(KNOWN))
        for violation in comparison.new:
            print(f"new {violation.rule}: {violation.key} [{'; '.join(violation.sites)}]")
        for rule, key in comparison.stale:
            print(f"gone, remove from {KNOWN.relative_to(REPO)}: [{rule}] {key}")
        return 1 if comparison.new or comparison.stale else 0
    census = take(PACKAGE)
    if args.json or args.write:
        text = json.dumps(census.to_json(), indent=1) + "\n"
        if args.write:
            BASELINE.write_text(text, encoding="utf-8")
        else:
            sys.stdout.write(text)
        return 0
    sys.stdout.write(report(census))
    return 0


if __name__ == "__main__":
    sys.exit(main())
