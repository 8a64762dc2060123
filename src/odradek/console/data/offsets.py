"""Where each partition's log starts and ends (ListOffsets earliest / latest), asked for many at once."""

from __future__ import annotations

from dataclasses import dataclass

from odradek.cli.client import Admin
from odradek.cli.group_offsets import Partition, log_offsets


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
