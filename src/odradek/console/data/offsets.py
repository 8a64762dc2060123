"""Where each partition's log starts and ends (ListOffsets earliest / latest), asked for many at once.

A partition the cluster answers with an error (no leader: its broker is down) is left out of the answer
rather than failing the page: the pages show its offsets as unknown and the other partitions as usual.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from odradek.cli.client import Admin
from odradek.cli.errors import CliError
from odradek.cli.group_offsets import Partition


@dataclass(frozen=True)
class LogRange:
    log_start_offset: int
    log_end_offset: int

    @property
    def messages(self) -> int:
        """Offsets between start and end: the message count, give or take compaction and transactions."""
        return max(0, self.log_end_offset - self.log_start_offset)


def log_ranges(admin: Admin, partitions: list[Partition]) -> dict[Partition, LogRange]:
    from confluent_kafka.admin._listoffsets import OffsetSpec

    earliest = log_offsets(admin, partitions, OffsetSpec.earliest())  # type: ignore[no-untyped-call]
    latest = log_end_offsets(admin, partitions)
    return {p: LogRange(earliest[p], latest[p]) for p in partitions if p in earliest and p in latest}


def log_end_offsets(admin: Admin, partitions: list[Partition]) -> dict[Partition, int]:
    from confluent_kafka.admin._listoffsets import OffsetSpec

    return log_offsets(admin, partitions, OffsetSpec.latest())  # type: ignore[no-untyped-call]


def offsets_for_timestamp(
    admin: Admin, partitions: list[Partition], timestamp_ms: int
) -> dict[Partition, int]:
    """The first offset at or after `timestamp_ms` in each partition; -1 where every message is older."""
    from confluent_kafka.admin._listoffsets import OffsetSpec

    return log_offsets(admin, partitions, OffsetSpec.for_timestamp(timestamp_ms))


def log_offsets(admin: Admin, partitions: list[Partition], spec: Any) -> dict[Partition, int]:
    """One ListOffsets answer per partition; a partition answered with a Kafka error is left out."""
    from confluent_kafka import TopicPartition

    if not partitions:
        return {}
    wanted = {TopicPartition(topic, partition): spec for topic, partition in partitions}
    futures = admin.client.list_offsets(wanted, **admin.options)
    found: dict[Partition, int] = {}
    for tp, future in futures.items():
        try:
            found[(tp.topic, tp.partition)] = admin.wait(future, "ListOffsets").offset
        except CliError as error:
            if error.kafka_code is None:  # a timeout, not the partition's own answer
                raise
    return found
