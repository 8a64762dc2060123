"""A config of an entity as DescribeConfigs reports it: what the configs command, the wire-level broker
default calls and the console show."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ConfigRow:
    """One config of an entity as DescribeConfigs reports it; `source` is Kafka's ConfigSource name."""

    name: str
    value: str | None
    source: str
    read_only: bool
    sensitive: bool
    is_default: bool
