"""ListOffsets: the offset for a timestamp, the earliest and latest offsets, and the max timestamp.

A timestamp search finds the first segment whose largest timestamp reaches the target, starts at the
position its time index and offset index give, and reads only the batches whose max timestamp reaches
the target, to return the first record at or after it (records inside a batch need not be in
timestamp order, so the batch is searched record by record).

Finding the batch reads headers and indexes; searching its records decompresses and decodes them,
which for a batch of many records takes long in Python. So ``plan_offset_by_timestamp`` does the
first on the caller's thread and hands back a ``RecordSearch`` for the second, which only reads the
bytes it holds (a record worker runs it); a search that finds nothing, under a header claiming more
than its records, is planned again past that batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from odradek.protocol.records import (
    NO_TIMESTAMP,
    Progress,
    RecordBatchHeader,
    TimestampType,
    records_section,
)
from odradek.protocol.records.record import iter_records
from odradek.storage.fetch import FetchIsolation
from odradek.storage.log_view import ReadableLog
from odradek.storage.record_workers import Checkpoint
from odradek.storage.segment import LogSegment
from odradek.storage.segment_reads import translate_offset

LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL_TIMESTAMP = -4


@dataclass(frozen=True, slots=True)
class TimestampAndOffset:
    timestamp: int
    offset: int
    leader_epoch: int | None


def fetch_offset_by_timestamp(
    log: ReadableLog, target_timestamp: int, isolation: FetchIsolation = FetchIsolation.LOG_END
) -> TimestampAndOffset | None:
    """Kafka's answer for one ListOffsets partition; None means "no such offset" (-1 on the wire),
    record searches included (on the caller's thread).

    ``isolation`` bounds what a consumer may see: LATEST is that bound (HW or LSO), and a timestamp or
    max-timestamp result at or past it is not returned, as Kafka's Partition does.
    """
    planned = plan_offset_by_timestamp(log, target_timestamp)
    while isinstance(planned, RecordSearch):
        found = planned.run()
        planned = found if found is not None or planned.last else planned.next_plan(log)
    return within_bound(log, planned, target_timestamp, isolation)


@dataclass(frozen=True, slots=True)
class RecordSearch:
    """A batch whose records hold the answer, to search: only its bytes are read."""

    batch: bytes
    epoch: int | None
    target: int
    starting_offset: int
    #: MAX_TIMESTAMP's search: the record with exactly ``target``, else ``fallback`` (the batch's offset).
    fallback: TimestampAndOffset | None = None

    @property
    def last(self) -> bool:
        """Whether no batch is left to search if this one holds no answer."""
        return self.fallback is not None

    def __call__(self, checkpoint: Checkpoint) -> TimestampAndOffset | None:
        """``run`` as a record worker's job."""
        return self.run(lambda _: checkpoint())

    def run(self, progress: Progress | None = None) -> TimestampAndOffset | None:
        """The first record at or after the target (exactly it for the max timestamp), if any."""
        header = RecordBatchHeader.read(self.batch)
        appended = header.timestamp_type is TimestampType.LOG_APPEND_TIME
        section = records_section(self.batch, header, progress=progress)
        base = (header.base_offset, header.base_timestamp)
        log_append_time = header.max_timestamp if appended else None
        for record in iter_records(
            section, header.records_count, *base, log_append_time, self.starting_offset
        ):
            if record.timestamp == self.target or (self.fallback is None and record.timestamp > self.target):
                return TimestampAndOffset(record.timestamp, record.offset, self.epoch)
        return self.fallback

    def next_plan(self, log: ReadableLog) -> TimestampAndOffset | RecordSearch | None:
        """The search after this batch, which held nothing at or after the target."""
        after = RecordBatchHeader.read(self.batch).next_offset
        return plan_offset_by_timestamp(log, self.target, max(after, self.starting_offset))


def plan_offset_by_timestamp(
    log: ReadableLog, target_timestamp: int, starting_offset: int | None = None
) -> TimestampAndOffset | RecordSearch | None:
    """The answer when headers and indexes give it, else the batch to search (``RecordSearch``)."""
    epochs = log.leader_epoch_cache
    if target_timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
        start = log.log_start_offset
        return TimestampAndOffset(NO_TIMESTAMP, start, epochs.epoch_for_offset(start))
    if target_timestamp == LATEST_TIMESTAMP:
        return None  # the bound: within_bound answers it
    if target_timestamp == MAX_TIMESTAMP:
        return _max_timestamp(log.segments)
    if target_timestamp >= 0:
        start = log.log_start_offset if starting_offset is None else starting_offset
        return _first_at_or_after(log.segments, target_timestamp, start)
    raise ValueError(f"unsupported ListOffsets timestamp {target_timestamp}")


def within_bound(
    log: ReadableLog, found: TimestampAndOffset | None, target_timestamp: int, isolation: FetchIsolation
) -> TimestampAndOffset | None:
    """The answer as a client of ``isolation`` may see it: LATEST is the bound, nothing at or past it."""
    bound = {
        FetchIsolation.LOG_END: log.log_end_offset,
        FetchIsolation.HIGH_WATERMARK: log.high_watermark,
        FetchIsolation.TXN_COMMITTED: log.last_stable_offset,
    }[isolation]
    epochs = log.leader_epoch_cache
    if target_timestamp == LATEST_TIMESTAMP:
        return TimestampAndOffset(NO_TIMESTAMP, bound, epochs.epoch_for_offset(bound) or epochs.latest_epoch)
    if target_timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
        return found
    if found is None or found.offset >= bound:
        return None
    return found


def _first_at_or_after(
    segments: Sequence[LogSegment], target: int, starting_offset: int
) -> RecordSearch | None:
    for segment in segments:
        if segment.largest_timestamp >= target and segment.next_offset > starting_offset:
            indexed = segment.time_index.lookup(target)
            position = segment.offset_index.lookup(max(indexed.offset, starting_offset)).position
            for _, header, view in segment.batches(position):
                if header.max_timestamp < target or header.last_offset < starting_offset:
                    continue
                epoch = _epoch(header.partition_leader_epoch)
                return RecordSearch(bytes(view), epoch, target, starting_offset)
    return None


def _max_timestamp(segments: Sequence[LogSegment]) -> TimestampAndOffset | RecordSearch | None:
    best = None
    for segment in segments:
        if segment.max_timestamp >= 0 and (best is None or segment.max_timestamp > best.max_timestamp):
            best = segment
    if best is None:
        return None
    timestamp, batch_offset = best.max_timestamp_and_offset
    fallback = TimestampAndOffset(timestamp, batch_offset, None)
    found = translate_offset(best, batch_offset)
    if found is None:
        return fallback
    for _, header, view in best.batches(found.position, found.position + found.size):
        return RecordSearch(bytes(view), _epoch(header.partition_leader_epoch), timestamp, 0, fallback)
    return fallback


def _epoch(partition_leader_epoch: int) -> int | None:
    return partition_leader_epoch if partition_leader_epoch >= 0 else None
