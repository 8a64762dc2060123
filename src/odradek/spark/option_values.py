"""The values of source and sink options, read as Spark's connector reads them: offset limits (a global
timestamp, per-partition timestamps or offsets) and their checks for batch queries, booleans, positive
integers and durations, refused with its wording."""

from __future__ import annotations

import re
from collections.abc import Mapping

from odradek.spark.offsets import (
    OffsetSpec,
    parse_offset_spec,
    parse_timestamp_spec,
)


def offset_limit(
    params: Mapping[str, str], global_key: str, by_timestamp_key: str, offsets_key: str, default: OffsetSpec
) -> OffsetSpec:
    """Spark's precedence: a global timestamp, then per-partition timestamps, then offsets."""
    if global_key in params:
        value = params[global_key].strip()
        try:
            return OffsetSpec(timestamp=int(value))
        except ValueError:
            raise ValueError(f"Invalid value '{value}' for option '{global_key}', must be a long") from None
    if by_timestamp_key in params:
        return parse_timestamp_spec(params[by_timestamp_key])
    if offsets_key in params:
        return parse_offset_spec(params[offsets_key])
    return default


def check_batch_limits(starting: OffsetSpec, ending: OffsetSpec) -> None:
    if starting.kind == "latest":
        raise ValueError("starting offset can't be latest for batch queries on Kafka")
    for (topic, partition), offset in (starting.partition_offsets or {}).items():
        if offset == -1:
            raise ValueError(
                f"startingOffsets for {topic}-{partition} can't be latest for batch queries on Kafka"
            )
    if ending.kind == "earliest":
        raise ValueError("ending offset can't be earliest for batch queries on Kafka")
    for (topic, partition), offset in (ending.partition_offsets or {}).items():
        if offset == -2:
            raise ValueError(
                f"ending offset for {topic}-{partition} can't be earliest for batch queries on Kafka"
            )
    if starting.partition_offsets is not None and ending.partition_offsets is not None:
        start_keys, end_keys = set(starting.partition_offsets), set(ending.partition_offsets)
        if start_keys != end_keys:
            raise ValueError(
                "The specified start and end offsets do not have the same topic-partitions: "
                f"start {sorted(start_keys)}, end {sorted(end_keys)}"
            )
        for tp, start in starting.partition_offsets.items():
            end = ending.partition_offsets[tp]
            if start >= 0 and end >= 0 and start > end:
                raise ValueError(
                    f"The specified starting offset ({start}) is greater than the ending offset ({end}) "
                    f"for topic partition {tp[0]}-{tp[1]}"
                )


def boolean_option(params: Mapping[str, str], key: str, default: bool) -> bool:
    if key not in params:
        return default
    value = params[key].strip().lower()
    if value not in ("true", "false"):
        raise ValueError(f"Invalid value '{params[key]}' for option '{key}', must be true or false")
    return value == "true"


def positive_option(params: Mapping[str, str], key: str, message: str | None = None) -> int | None:
    if key not in params:
        return None
    try:
        value = int(params[key].strip())
    except ValueError:
        raise ValueError(
            f"Invalid value '{params[key]}' for option '{key}', must be a positive integer"
        ) from None
    if value <= 0:
        raise ValueError(message or f"Invalid value '{value}' for option '{key}', must be a positive integer")
    return value


_DURATION = re.compile(r"^\s*(\d+)\s*(ms|s|m|min|h|d)?\s*$")
_UNIT_MS = {None: 1, "ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}


def duration_ms(value: str, name: str) -> int:
    match = _DURATION.match(value.lower())
    if match is None:
        raise ValueError(
            f"Invalid value '{value}' for option '{name}', must be a duration such as 30s or 15m"
        )
    return int(match.group(1)) * _UNIT_MS[match.group(2)]
