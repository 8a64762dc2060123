"""Rule 8 of docs/architecture.md as a test that fails the build: composition with constructor
arguments (no post-construction wiring), no collaborator typed `Any`, no broker module over 400 lines.

The census (tools/architecture) finds each; ALLOWED names what is left on purpose, with its reason, and
an entry that no longer applies fails too (delete it), as the import rules' allow-list does."""

from __future__ import annotations

from pathlib import Path

import pytest
from tools.architecture.census import MAX_LINES, Census, take
from tools.architecture.patterns import ANY, WIRING

from tests.unit.architecture.conftest import PackageMaker

PACKAGE = Path(__file__).resolve().parents[3] / "src" / "odradek"

#: finding → why it stays ("path:line"-free keys, so an edit above it does not break the test).
ALLOWED: dict[str, str] = {}


@pytest.fixture(scope="module")
def census() -> Census:
    return take(PACKAGE)


def _breaches(census: Census) -> set[str]:
    found = {f"{f.pattern} {f.path} {f.text}" for f in census.findings if f.pattern in (WIRING, ANY)}
    broker = set(census.broker_modules)
    found |= {
        f"long-module {path}"
        for path, _ in census.large_modules()
        if path.removesuffix(".py").replace("/", ".") in broker
    }
    return found


def test_the_broker_keeps_rule_eight_beyond_the_allow_list(census: Census) -> None:
    new = sorted(_breaches(census) - set(ALLOWED))
    assert not new, "rule 8 broken (docs/architecture.md; `tools/architecture_census.py` shows where):\n" + (
        "\n".join(f"  {b}" for b in new)
    )


def test_every_allowed_breach_still_exists(census: Census) -> None:
    stale = sorted(set(ALLOWED) - _breaches(census))
    assert not stale, "fixed: delete from ALLOWED:\n" + "\n".join(f"  {b}" for b in stale)


def test_a_long_module_a_wiring_and_an_any_collaborator_each_break_it(make_package: PackageMaker) -> None:
    package = make_package(
        {
            "storage/log.py": "x = 1\n" * (MAX_LINES + 1),
            "server/broker.py": (
                "from odradek.storage.log import x\n"
                "class Broker:\n"
                "    def start(self, services):\n"
                "        services.on_change = lambda: None\n"
            ),
            "coordinator/runtime.py": "from typing import Any\ndef build(writer: Any) -> None: ...\n",
        }
    )
    kinds = {breach.split(" ")[0] for breach in _breaches(take(package))}
    assert kinds == {"long-module", WIRING, ANY}
