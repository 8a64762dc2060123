"""Offset specifications (earliest, latest, per-partition JSON, timestamps) and Spark's offset JSON.

Spark's JSON shapes: offsets `{"topic": {"0": 23, "1": -2}}` (-2 is earliest, -1 latest), timestamps
`{"topic": {"0": 1700000000000}}`, partitions for `assign` `{"topic": [0, 1]}`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

TopicPartition = tuple[str, int]

EARLIEST_OFFSET = -2
LATEST_OFFSET = -1


@dataclass(frozen=True)
class OffsetSpec:
    """Where a range starts or ends: one of earliest, latest, per-partition offsets, one timestamp for all
    partitions, or per-partition timestamps."""

    kind: str = "offsets"
    partition_offsets: dict[TopicPartition, int] | None = None
    timestamp: int | None = None
    partition_timestamps: dict[TopicPartition, int] | None = None

    def __post_init__(self) -> None:
        if self.timestamp is not None:
            object.__setattr__(self, "kind", "timestamp")
        elif self.partition_timestamps is not None:
            object.__setattr__(self, "kind", "partition_timestamps")


EARLIEST = OffsetSpec(kind="earliest")
LATEST = OffsetSpec(kind="latest")


def parse_offset_spec(value: str) -> OffsetSpec:
    text = value.strip()
    if text.lower() == "earliest":
        return EARLIEST
    if text.lower() == "latest":
        return LATEST
    return OffsetSpec(partition_offsets=_partition_numbers(text, "offsets"))


def parse_timestamp_spec(value: str) -> OffsetSpec:
    return OffsetSpec(partition_timestamps=_partition_numbers(value.strip(), "timestamps"))


def parse_partitions(value: str) -> list[TopicPartition]:
    """`{"topicA": [0, 1], "topicB": [2]}` into topic-partitions."""
    data = _json(value, 'partitions, e.g. {"topicA":[0,1],"topicB":[0,1]}')
    result: list[TopicPartition] = []
    if not isinstance(data, dict):
        raise ValueError(f'Expected e.g. {{"topicA":[0,1],"topicB":[0,1]}}, got {value}')
    for topic, partitions in data.items():
        if not isinstance(partitions, list) or not all(isinstance(p, int) for p in partitions):
            raise ValueError(f'Expected e.g. {{"topicA":[0,1],"topicB":[0,1]}}, got {value}')
        result.extend((topic, p) for p in partitions)
    return result


def offsets_from_dict(data: Mapping[str, Any]) -> dict[TopicPartition, int]:
    """Spark's offset JSON (already parsed) into a mapping from topic-partition to offset."""
    return {
        (topic, int(p)): int(offset) for topic, partitions in data.items() for p, offset in partitions.items()
    }


def offsets_to_dict(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    result: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        result.setdefault(topic, {})[str(partition)] = int(offset)
    return result


def _partition_numbers(text: str, what: str) -> dict[TopicPartition, int]:
    example = '{"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}'
    data = _json(text, f"{what}, e.g. {example}")
    if not isinstance(data, dict):
        raise ValueError(f"Expected e.g. {example}, got {text}")
    result: dict[TopicPartition, int] = {}
    for topic, partitions in data.items():
        if not isinstance(partitions, dict):
            raise ValueError(f"Expected e.g. {example}, got {text}")
        for partition, number in partitions.items():
            try:
                result[(topic, int(partition))] = int(number)
            except (TypeError, ValueError):
                raise ValueError(f"Expected e.g. {example}, got {text}") from None
    return result


def _json(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise ValueError(f"Expected {what}, got {text}") from None
