"""ListOffsets: the offset for a timestamp, the earliest and latest offsets, and the max timestamp.

A timestamp search finds the first segment whose largest timestamp reaches the target, starts at the
position its time index and offset index give, and decodes only the batches whose max timestamp
reaches the target, to return the first record at or after it (records inside a batch need not be
in timestamp order, so the batch is searched record by record).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from odradek.protocol.records import NO_TIMESTAMP, RecordBatch
from odradek.storage.fetch import FetchIsolation
from odradek.storage.segment import LogSegment

if TYPE_CHECKING:
    from odradek.storage.log import Log

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
    log: Log, target_timestamp: int, isolation: FetchIsolation = FetchIsolation.LOG_END
) -> TimestampAndOffset | None:
    """Kafka's answer for one ListOffsets partition; None means "no such offset" (-1 on the wire).

    ``isolation`` bounds what a consumer may see: LATEST is that bound (HW or LSO), and a timestamp or
    max-timestamp result at or past it is not returned, as Kafka's Partition does.
    """
    bound = {
        FetchIsolation.LOG_END: log.log_end_offset,
        FetchIsolation.HIGH_WATERMARK: log.high_watermark,
        FetchIsolation.TXN_COMMITTED: log.last_stable_offset,
    }[isolation]
    epochs = log.leader_epoch_cache
    if target_timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
        start = log.log_start_offset
        return TimestampAndOffset(NO_TIMESTAMP, start, epochs.epoch_for_offset(start))
    if target_timestamp == LATEST_TIMESTAMP:
        return TimestampAndOffset(NO_TIMESTAMP, bound, epochs.epoch_for_offset(bound) or epochs.latest_epoch)
    if target_timestamp == MAX_TIMESTAMP:
        result = _max_timestamp(log.segments)
    elif target_timestamp >= 0:
        result = _first_at_or_after(log.segments, target_timestamp, log.log_start_offset)
    else:
        raise ValueError(f"unsupported ListOffsets timestamp {target_timestamp}")
    if result is None or result.offset >= bound:
        return None
    return result


def _first_at_or_after(
    segments: Sequence[LogSegment], target: int, starting_offset: int
) -> TimestampAndOffset | None:
    for segment in segments:
        if segment.largest_timestamp >= target:
            found = _search_segment(segment, target, starting_offset)
            if found is not None:
                return found
    return None


def _search_segment(segment: LogSegment, target: int, starting_offset: int) -> TimestampAndOffset | None:
    indexed = segment.time_index.lookup(target)
    position = segment.offset_index.lookup(max(indexed.offset, starting_offset)).position
    for _, header, view in segment.batches(position):
        if header.max_timestamp < target or header.last_offset < starting_offset:
            continue
        for record in RecordBatch.decode(view, verify_crc=False).records:
            if record.timestamp >= target and record.offset >= starting_offset:
                return TimestampAndOffset(
                    record.timestamp, record.offset, _epoch(header.partition_leader_epoch)
                )
    return None


def _max_timestamp(segments: Sequence[LogSegment]) -> TimestampAndOffset | None:
    best = None
    for segment in segments:
        if segment.max_timestamp >= 0 and (best is None or segment.max_timestamp > best.max_timestamp):
            best = segment
    if best is None:
        return None
    timestamp, batch_offset = best.max_timestamp_and_offset
    found = best.translate_offset(batch_offset)
    if found is not None:
        for _, header, view in best.batches(found.position, found.position + found.size):
            for record in RecordBatch.decode(view, verify_crc=False).records:
                if record.timestamp == timestamp:
                    return TimestampAndOffset(timestamp, record.offset, _epoch(header.partition_leader_epoch))
    return TimestampAndOffset(timestamp, batch_offset, None)


def _epoch(partition_leader_epoch: int) -> int | None:
    return partition_leader_epoch if partition_leader_epoch >= 0 else None
