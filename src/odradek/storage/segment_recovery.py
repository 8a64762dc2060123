"""A segment's recovery after a crash, as Kafka's LogSegment.recover: opened with empty indexes, every
batch validated (structure, CRC-32C, offsets) and indexed again, the file cut at the first invalid byte.
``log_loader.py`` decides which segments are recovered and replays producer state through the visitor."""

from __future__ import annotations

import os
from pathlib import Path

from odradek.protocol.records import RecordsError
from odradek.storage.config import LogConfig
from odradek.storage.errors import CorruptIndexError
from odradek.storage.files import INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX
from odradek.storage.index import NO_TIMESTAMP, OffsetIndex, TimeIndex, TimestampOffset
from odradek.storage.segment import BatchVisitor, LogSegment
from odradek.storage.txn_index import TransactionIndex


def open_for_recovery(
    directory: Path, base_offset: int, config: LogConfig, now_ms: int, *, suffix: str = ""
) -> LogSegment:
    """Open a segment whose indexes will be rebuilt by ``recover``: index files start empty."""
    segment = LogSegment(
        directory,
        base_offset,
        config,
        now_ms,
        suffix=suffix,
        roll_jitter_ms=config.random_segment_jitter(),
    )
    size = config.segment_index_bytes
    segment.offset_index = OffsetIndex(segment.path_of(INDEX_SUFFIX), base_offset, size)
    segment.time_index = TimeIndex(segment.path_of(TIME_INDEX_SUFFIX), base_offset, size)
    try:
        segment.txn_index = TransactionIndex.load(segment.path_of(TXN_INDEX_SUFFIX))
    except CorruptIndexError:
        segment.txn_index_lost = True
    return segment


def recover(
    segment: LogSegment, on_batch: BatchVisitor | None = None, *, keep_txn_index: bool = False
) -> int:
    """Validate every batch (structure, CRC-32C, offsets), rebuild the indexes, and cut the file at
    the first invalid byte. ``on_batch`` sees each valid batch in order (and rebuilds the transaction
    index through producer state, unless ``keep_txn_index``). Returns the bytes truncated."""
    segment.offset_index.reset()
    segment.time_index.reset()
    if not keep_txn_index:
        segment.txn_index.reset()
    segment.max_timestamp_and_offset = TimestampOffset(NO_TIMESTAMP, segment.base_offset)
    valid_bytes = last_index_entry = 0
    segment.next_offset = segment.base_offset
    try:
        for position, header, view in segment.batches(0):
            if (
                not header.crc_is_valid(view)
                or header.base_offset < segment.next_offset
                or header.last_offset_delta < 0
                or not segment.offset_index.can_append_offset(header.last_offset)
            ):
                break
            if header.max_timestamp > segment.max_timestamp:
                segment.max_timestamp_and_offset = TimestampOffset(header.max_timestamp, header.last_offset)
            if position - last_index_entry > segment.index_interval_bytes:
                segment.offset_index.append(header.last_offset, position)
                segment.time_index.maybe_append(*segment.max_timestamp_and_offset, skip_full_check=True)
                last_index_entry = position
            valid_bytes = position + header.size
            segment.next_offset = header.next_offset
            if on_batch is not None:
                on_batch(header, view)
    except RecordsError:
        pass  # a bad magic or impossible length: the valid part ends here
    truncated = segment.size - valid_bytes
    os.ftruncate(segment.fd, valid_bytes)
    segment.size = valid_bytes
    segment.preallocated = False
    segment.bytes_since_last_index_entry = valid_bytes - last_index_entry
    segment.rolling_based_timestamp = None
    segment.time_index.maybe_append(*segment.max_timestamp_and_offset, skip_full_check=True)
    if keep_txn_index:
        segment.txn_index.truncate_to(segment.next_offset)
    return truncated
