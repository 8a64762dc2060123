"""The message browser: read a few messages of a topic from a position, with a consumer that joins no group.

Where to start is worked out first with ListOffsets (the partition's start and end, or the offset of a
timestamp), so reading stops at the end of each partition instead of waiting for messages that never
come. Nothing is committed: the console's reading is invisible to the cluster's consumer groups.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from odradek.cli.client import Admin
from odradek.cli.errors import CliError, kafka_error_message
from odradek.cli.group_offsets import Partition
from odradek.console.data.offsets import LogRange, log_ranges, offsets_for_timestamp

START_KINDS = ("newest", "oldest", "offset", "timestamp")
MAX_LIMIT = 500
#: librdkafka's group.id is required by its consumer even when it only assigns partitions; nothing is
#: committed under it.
BROWSER_GROUP = "odradek-console-browser"
TIMESTAMP_TYPES = {0: "none", 1: "CreateTime", 2: "LogAppendTime"}


@dataclass(frozen=True)
class BrowsedMessage:
    partition: int
    offset: int
    timestamp_ms: int | None
    timestamp_type: str
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]


@dataclass(frozen=True)
class Position:
    """Where to start reading: the newest messages, the oldest, an offset, or a timestamp (epoch ms)."""

    kind: str = "newest"
    value: int | None = None


def browse(
    admin: Admin, topic: str, partitions: list[int], position: Position, limit: int
) -> list[BrowsedMessage]:
    """Up to `limit` messages of the partitions from `position`: oldest first, or newest first for newest."""
    if position.kind not in START_KINDS:
        raise CliError(f"unknown start {position.kind!r}")
    limit = max(1, min(limit, MAX_LIMIT))
    wanted: list[Partition] = [(topic, p) for p in partitions]
    ranges = log_ranges(admin, wanted)
    starts = _starts(admin, ranges, position, limit)
    to_read = {p: start for p, start in starts.items() if start < ranges[p].log_end_offset}
    messages = _read(admin, to_read, {p: ranges[p].log_end_offset for p in to_read}, limit)
    if position.kind == "newest":
        messages.sort(key=lambda m: (m.timestamp_ms or 0, m.offset), reverse=True)
    else:
        messages.sort(key=lambda m: (m.timestamp_ms or 0, m.partition, m.offset))
    return messages[:limit]


def _starts(
    admin: Admin, ranges: dict[Partition, LogRange], position: Position, limit: int
) -> dict[Partition, int]:
    if position.kind == "newest":
        return {p: max(r.log_start_offset, r.log_end_offset - limit) for p, r in ranges.items()}
    if position.kind == "oldest":
        return {p: r.log_start_offset for p, r in ranges.items()}
    if position.value is None:
        raise CliError(f"starting at an {position.kind} needs a value")
    if position.kind == "offset":
        return {p: min(max(position.value, r.log_start_offset), r.log_end_offset) for p, r in ranges.items()}
    found = offsets_for_timestamp(admin, list(ranges), position.value)
    return {p: found[p] if found.get(p, -1) >= 0 else r.log_end_offset for p, r in ranges.items()}


def _read(
    admin: Admin, starts: dict[Partition, int], ends: dict[Partition, int], limit: int
) -> list[BrowsedMessage]:
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    if not starts:
        return []
    settings: dict[str, str | int | float | bool] = {
        "group.id": BROWSER_GROUP,
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "client.id": "odradek-console",
    }
    config = {**admin.config, **settings}
    consumer = Consumer(config)
    messages: list[BrowsedMessage] = []
    remaining = {p: min(ends[p] - start, limit) for p, start in starts.items()}
    deadline = time.monotonic() + admin.timeout
    try:
        consumer.assign([TopicPartition(t, p, starts[(t, p)]) for t, p in sorted(starts)])
        while any(count > 0 for count in remaining.values()) and time.monotonic() < deadline:
            message: Any
            for message in consumer.consume(num_messages=min(limit, 500), timeout=0.5):
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        continue
                    raise CliError(kafka_error_message(error, admin.bootstrap, "Fetch"))
                partition: Partition = (message.topic(), message.partition())
                if remaining.get(partition, 0) <= 0 or message.offset() >= ends[partition]:
                    continue
                remaining[partition] -= 1
                if message.offset() + 1 >= ends[partition]:
                    remaining[partition] = 0
                messages.append(_browsed(message))
            _stop_at_end(consumer, ends, remaining)
    finally:
        consumer.close()
    return messages


def _stop_at_end(consumer: Any, ends: dict[Partition, int], remaining: dict[Partition, int]) -> None:
    """Partitions whose position passed their end are done, though their last offsets held no message
    (transaction markers, compacted records)."""
    from confluent_kafka import TopicPartition

    active = [TopicPartition(t, p) for (t, p), count in remaining.items() if count > 0]
    for tp in consumer.position(active) if active else []:
        if tp.offset >= ends[(tp.topic, tp.partition)]:
            remaining[(tp.topic, tp.partition)] = 0


def _browsed(message: Any) -> BrowsedMessage:
    kind, timestamp = message.timestamp()
    headers = message.headers() or []
    pairs = headers.items() if isinstance(headers, dict) else headers
    return BrowsedMessage(
        partition=message.partition(),
        offset=message.offset(),
        timestamp_ms=timestamp if kind else None,
        timestamp_type=TIMESTAMP_TYPES.get(kind, "none"),
        key=_bytes(message.key()),
        value=_bytes(message.value()),
        headers=tuple((name, _bytes(value)) for name, value in pairs),
    )


def _bytes(data: bytes | str | None) -> bytes | None:
    return data.encode() if isinstance(data, str) else data
