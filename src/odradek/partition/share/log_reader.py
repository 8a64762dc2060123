"""How share partitions read a partition's log: the one place they call the storage read path.

They read what a consumer's Fetch reads (`Log.read`, up to the high watermark, or the last stable
offset for read_committed) and need, besides the bytes, each batch's offsets and whether it may be
delivered: a control batch (a transaction marker) never is, nor, for read_committed, a batch of an
aborted transaction. Batch headers are read with the codec's `RecordBatchHeader`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from odradek.protocol.records.header import RecordBatchHeader
from odradek.storage.fetch import FetchIsolation
from odradek.storage.log import Log
from odradek.storage.txn_index import AbortedTxn


@dataclass(frozen=True, slots=True)
class LogBatch:
    """One batch read: its offsets, and whether its records may be delivered to a share consumer."""

    base_offset: int
    last_offset: int
    deliverable: bool


@dataclass(frozen=True, slots=True)
class LogChunk:
    """Whole batches read from `fetch_offset` on (empty when there is nothing past it yet)."""

    records: bytes
    batches: tuple[LogBatch, ...]


def read_batches(
    log: Log, fetch_offset: int, max_bytes: int, read_committed: bool, min_one_message: bool = True
) -> LogChunk:
    """Whole batches from `fetch_offset` (with `min_one_message`, at least one whole batch whatever
    `max_bytes`); raises the storage's OffsetOutOfRangeError outside the log."""
    isolation = FetchIsolation.TXN_COMMITTED if read_committed else FetchIsolation.HIGH_WATERMARK
    info = log.read(fetch_offset, max_bytes, isolation=isolation, min_one_message=min_one_message)
    data = info.read_bytes()
    aborted = info.aborted_transactions or ()
    batches = []
    position = 0
    while position < len(data):
        header = RecordBatchHeader.read(data, position)
        deliverable = not header.is_control and not (
            read_committed and header.is_transactional and _aborted(header, aborted)
        )
        batches.append(LogBatch(header.base_offset, header.last_offset, deliverable))
        position = header.end
    return LogChunk(data, tuple(batches))


def log_bounds(log: Log) -> tuple[int, int]:
    """(log start offset, high watermark): where `share.auto.offset.reset` starts a share partition."""
    return log.log_start_offset, log.high_watermark


def _aborted(header: RecordBatchHeader, aborted: Iterable[AbortedTxn]) -> bool:
    return any(
        txn.producer_id == header.producer_id and txn.first_offset <= header.base_offset <= txn.last_offset
        for txn in aborted
    )
