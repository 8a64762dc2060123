"""The committed allow-list of import-rule violations (a ratchet): what is found must be on it, and
what is on it must still be found, so the list only shrinks as issue #28 lands.

The file is TOML, one table per rule, one line per violation: its key (`importer -> imported`, or a
cycle's modules joined by ` | `) and why it is allowed for now, naming the issue that removes it.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from tools.architecture.layers import RULES, Violation


@dataclass(frozen=True, slots=True)
class Comparison:
    #: Found and not allowed: each is a new violation to fix (or, reviewed, to add with a reason).
    new: list[Violation]
    #: Allowed and no longer found: fixed, so their lines go.
    stale: list[tuple[str, str]]


class KnownViolationsError(Exception):
    """The allow-list file is malformed: an unknown rule, or an entry without a reason."""


def load(path: Path) -> dict[tuple[str, str], str]:
    """`(rule, key) -> reason` from the file."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    allowed: dict[tuple[str, str], str] = {}
    for rule, entries in data.items():
        if rule not in RULES or not isinstance(entries, dict):
            raise KnownViolationsError(f"{path}: [{rule}] is not one of the rules {', '.join(RULES)}")
        for key, reason in entries.items():
            if not isinstance(reason, str) or not reason.strip():
                raise KnownViolationsError(f"{path}: [{rule}] {key!r} has no reason")
            allowed[(rule, key)] = reason
    return allowed


def compare(found: list[Violation], allowed: dict[tuple[str, str], str]) -> Comparison:
    keys = {(v.rule, v.key) for v in found}
    return Comparison(
        new=[v for v in found if (v.rule, v.key) not in allowed],
        stale=sorted(k for k in allowed if k not in keys),
    )
