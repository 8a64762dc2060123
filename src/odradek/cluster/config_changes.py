"""Configs and config changes as one line for the broker's log: what was set and what was removed, with
the value of a password config never shown (Kafka's sensitive configs, shown as `[hidden]`), and every
name and value cut short (a config znode may hold about 1 MB)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final

from odradek.config.types import ConfigKey
from odradek.logs import shortened

HIDDEN = "[hidden]"
#: The most configs one line lists; the rest are counted.
SHOWN_CONFIGS: Final = 20


def describe_change(
    before: Mapping[str, str],
    after: Mapping[str, str],
    key_of: Callable[[str], ConfigKey | None],
) -> str:
    """``retention.ms=86400000, cleanup.policy removed``; "no change" when there is none. A name
    `key_of` does not know is treated as sensitive: its value might be a secret."""
    parts = [
        f"{shortened(name)}={_shown(name, value, key_of)}"
        for name, value in sorted(after.items())
        if before.get(name) != value
    ]
    parts += [f"{shortened(name)} removed" for name in sorted(before) if name not in after]
    if len(parts) > SHOWN_CONFIGS:
        parts[SHOWN_CONFIGS:] = [f"and {len(parts) - SHOWN_CONFIGS} more"]
    return ", ".join(parts) or "no change"


def describe_configs(configs: Mapping[str, str], key_of: Callable[[str], ConfigKey | None]) -> str:
    """``retention.ms=86400000, ssl.key.password=[hidden]``: a whole set of configs; "none" if empty."""
    return describe_change({}, configs, key_of) if configs else "none"


def _shown(name: str, value: str, key_of: Callable[[str], ConfigKey | None]) -> str:
    key = key_of(name)
    return HIDDEN if key is None or key.sensitive else shortened(value)
