"""Drift check: compares our message definitions with Apache Kafka's message files, version by version.

    python -m odradek.protocol.check_specs ../shared/kafka-specs/3.9 ../shared/kafka-specs/4.3

For every Kafka file (a directory is read whole) and every version it defines, the wire layout of our
definition at that version must equal Kafka's: the same fields in the same order, with the same types,
nullability, tags, defaults and flexibility. Prints every difference; exits 1 if there is any.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

from odradek.protocol.kafka_specs import KafkaSpec, diff_layouts, our_layout
from odradek.protocol.messages import OTHER_SCHEMAS, REQUESTS, RESPONSES
from odradek.protocol.schema import Message


def find_ours(spec: KafkaSpec) -> type[Message] | None:
    """Our class for a Kafka message: by api key for requests and responses, else by name."""
    if spec.kind == "request" and spec.api_key is not None:
        return REQUESTS.get(spec.api_key)
    if spec.kind == "response" and spec.api_key is not None:
        return RESPONSES.get(spec.api_key)
    return OTHER_SCHEMAS.get(spec.name)


def check_spec(spec: KafkaSpec, versions: Iterable[int]) -> list[str]:
    """Every difference between one Kafka message file and our definition of it, at `versions`."""
    ours = find_ours(spec)
    if ours is None:
        return [f"{spec.name}: not defined by odradek"]
    problems = []
    for version in versions:
        if version not in ours.VERSIONS:
            problems.append(f"{spec.name} v{version}: Kafka defines it, odradek does not ({ours.VERSIONS})")
            continue
        if (version in spec.flexible) != (version in ours.FLEXIBLE):
            problems.append(f"{spec.name} v{version}: flexible in one definition but not the other")
        for line in diff_layouts(our_layout(ours, version), spec.layout(version)):
            problems.append(f"{spec.name} v{version}: {line}")
    return problems


def identity(spec: KafkaSpec) -> tuple[str, int | str]:
    """What makes two files (of different Kafka releases) the same message: kind and api key, else name."""
    if spec.api_key is not None and spec.kind in ("request", "response"):
        return spec.kind, spec.api_key
    return spec.kind, spec.name


def spec_files(paths: Iterable[Path]) -> Iterator[Path]:
    for path in paths:
        if path.is_dir():
            yield from sorted(path.glob("*.json"))
        else:
            yield path


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    # A version is judged against the last file given that defines it: Kafka sometimes renames a field
    # or reshapes an unstable version between releases, and the newer release is the authority.
    authority: dict[tuple[tuple[str, int | str], int], tuple[Path, KafkaSpec]] = {}
    for path in spec_files(Path(a) for a in args):
        spec = KafkaSpec.read(path)
        for version in range(spec.versions.low, spec.versions.high + 1):
            authority[(identity(spec), version)] = (path, spec)
    by_file: dict[Path, list[int]] = {}
    for (_, version), (path, _) in sorted(authority.items(), key=lambda item: (str(item[1][0]), item[0][1])):
        by_file.setdefault(path, []).append(version)
    problems = 0
    for path, versions in by_file.items():
        spec = authority[(identity(KafkaSpec.read(path)), versions[0])][1]
        for line in check_spec(spec, versions):
            problems += 1
            print(f"{path}: {line}")
    print(f"checked {len(authority)} message versions in {len(by_file)} files: {problems} difference(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
