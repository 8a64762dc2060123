"""Config changes as one line for the broker's log: what was set and what was removed, with the value
of a password config never shown (Kafka's sensitive configs)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from odradek.config.types import ConfigKey

HIDDEN = "[hidden]"


def describe_change(
    before: Mapping[str, str],
    after: Mapping[str, str],
    key_of: Callable[[str], ConfigKey | None],
) -> str:
    """``retention.ms=86400000, cleanup.policy removed``; "no change" when there is none. A name
    `key_of` does not know is treated as sensitive: its value might be a secret."""
    parts = [
        f"{name}={_shown(name, value, key_of)}"
        for name, value in sorted(after.items())
        if before.get(name) != value
    ]
    parts += [f"{name} removed" for name in sorted(before) if name not in after]
    return ", ".join(parts) or "no change"


def _shown(name: str, value: str, key_of: Callable[[str], ConfigKey | None]) -> str:
    key = key_of(name)
    return HIDDEN if key is None or key.sensitive else value
