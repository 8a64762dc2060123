"""The record work of an append, done ahead of it: what a produce's batches need beyond their headers.

Kafka's LogValidator reads the records of a batch it rebuilds or checks. Here, a batch whose codec
differs from the topic's compression.type is rewritten in it (decompressed, its records walked and
checked, compressed again: ``protocol.records.recompress``); a batch stored as it came has its
records walked only when a rule of the log needs them (``record_rules``); an old producer's message
set becomes one v2 batch in the topic's codec and level (``up_convert``). Batches already in the
topic's codec, and every batch of a ``producer`` topic, keep the no-copy path.

That work is slow in Python (a batch's records decompress to up to 128 MiB), so the produce handler
runs ``prepare_append`` (or ``prepare_message_set``) in a record worker (``record_workers``) and hands
the result to ``Log.append``, which uses it if it was made from the same bytes for the config the log
still has, and otherwise does the work itself, on its caller's thread (the coordinators' small
appends do so). ``prepare_append`` reads the bytes it is given and nothing else: safe in a thread
while the event loop runs.

Bounds, beyond Kafka's (which has none; without them a few hundred bytes could hold the broker for
minutes): a batch may decompress to 128 MiB (``max.message.bytes`` when it is stored uncompressed)
and hold 1,000,000 records (``log_append.MAX_RECORDS_PER_BATCH``, checked from the header); one
request's work may take 256 MiB decompressed and 4,000,000 records (``RecordBudget``). Past them the
partition is MESSAGE_TOO_LARGE, on which producers split their batches. A rewritten batch stops
being compressed as soon as it passes ``max.message.bytes``.
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from odradek.protocol.records import (
    DEFAULT_MAX_DECOMPRESSED_SIZE,
    CompressedSizeError,
    Compression,
    DecompressedSizeError,
    InvalidRecordsError,
    Progress,
    RecordBatchHeader,
    RecordsError,
    TargetCompression,
    TimestampType,
    TooManyRecordsError,
    UnsupportedCompressionError,
    iter_batch_headers,
    rebuild_batch,
    records_section,
    walk_records,
)
from odradek.storage.config import LogConfig
from odradek.storage.errors import (
    CorruptRecordError,
    InvalidRecordError,
    RecordListTooLargeError,
    RecordTooLargeError,
    StorageError,
)
from odradek.storage.producer_state import AppendOrigin
from odradek.storage.record_rules import check_records, needs_walk, timestamp_bounds
from odradek.storage.record_workers import Checkpoint

Buffer = bytes | bytearray | memoryview

#: What one request's record work may decompress, and how many records it may read.
REQUEST_MAX_DECOMPRESSED_BYTES = 256 * 1024 * 1024
REQUEST_MAX_RECORDS = 4_000_000
#: Bytes compared at a time when two memoryviews are (memoryview == memoryview goes item by item).
_COMPARED_AT_ONCE = 1024 * 1024


class RecordBudget:
    """What one request's record work may still take (its jobs may run in several threads)."""

    def __init__(self) -> None:
        self._left = {"bytes decompressed": REQUEST_MAX_DECOMPRESSED_BYTES, "records": REQUEST_MAX_RECORDS}
        self._lock = threading.Lock()

    def take_decompressed(self, size: int) -> None:
        self._take("bytes decompressed", size, REQUEST_MAX_DECOMPRESSED_BYTES)

    def take_records(self, count: int) -> None:
        self._take("records", count, REQUEST_MAX_RECORDS)

    def _take(self, what: str, amount: int, limit: int) -> None:
        with self._lock:
            self._left[what] -= amount
            if self._left[what] < 0:
                raise RecordTooLargeError(
                    -1,
                    limit,
                    message=f"the request's record batches take more {what} than the broker "
                    f"allows one request ({limit})",
                )


@dataclass(frozen=True, slots=True)
class PreparedAppend:
    """An append's record work, done: for the v2 batches ``source`` under ``config``."""

    config: LogConfig
    source: Buffer
    #: The batches to store instead of ``source`` (rewritten in the topic's codec); None: ``source``.
    stored: bytearray | None = None
    #: Why the append must be refused; raised by the append (the work is not done again).
    error: StorageError | RecordsError | None = None

    def made_for(self, records: Buffer, config: LogConfig) -> bool:
        """Whether this is the work of appending exactly ``records`` under ``config``."""
        return config == self.config and _same_bytes(self.source, records)

    def records_to_store(
        self, records: bytearray | memoryview, headers: list[RecordBatchHeader]
    ) -> tuple[bytearray | memoryview, list[RecordBatchHeader]]:
        """``records`` with their headers as the log stores them; raises the refusal found."""
        if self.error is not None:
            raise self.error
        if self.stored is None:
            return records, headers
        return self.stored, list(iter_batch_headers(self.stored))


def needs_record_work(records: Buffer, config: LogConfig, now: int, origin: AppendOrigin) -> bool:
    """Whether appending ``records`` reads their records (header reads only: cheap on the loop)."""
    target = config.compression
    client = origin is AppendOrigin.CLIENT
    try:
        return any(
            _needs_rewrite(h, target) or needs_walk(h, config, now, client)
            for h in iter_batch_headers(records)
        )
    except RecordsError:
        return False  # not v2 batches: the append refuses them unread


def prepare_append(
    records: Buffer,
    headers: Sequence[RecordBatchHeader],
    config: LogConfig,
    now: int,
    origin: AppendOrigin = AppendOrigin.CLIENT,
    *,
    budget: RecordBudget | None = None,
    checkpoint: Checkpoint | None = None,
) -> PreparedAppend:
    """The record work of appending ``records`` (whole, CRC-valid v2 batches with these ``headers``),
    refusals included: MESSAGE_TOO_LARGE, INVALID_RECORD, INVALID_TIMESTAMP, CORRUPT_MESSAGE as the
    append would raise them. WorkStopped (from ``checkpoint``) is raised, not kept."""
    try:
        stored = _work(records, headers, config, now, origin, budget, checkpoint)
    except (StorageError, UnsupportedCompressionError) as error:
        return PreparedAppend(config, records, error=error)
    except RecordsError as error:
        return PreparedAppend(config, records, error=storage_error(error, config))
    return PreparedAppend(config, records, stored)


def _work(
    records: Buffer,
    headers: Sequence[RecordBatchHeader],
    config: LogConfig,
    now: int,
    origin: AppendOrigin,
    budget: RecordBudget | None,
    checkpoint: Checkpoint | None,
) -> bytearray | None:
    target = config.compression
    client = origin is AppendOrigin.CLIENT
    bounds = timestamp_bounds(config, now) if client else None
    rewriting = any(_needs_rewrite(h, target) for h in headers)
    stored = bytearray() if rewriting else None
    decompressed = progress_of(budget.take_decompressed if budget else None, checkpoint)
    walked = progress_of(None, checkpoint)
    for header in headers:
        rewrite = _needs_rewrite(header, target)
        if rewrite or needs_walk(header, config, now, client):
            if budget is not None:
                budget.take_records(header.records_count)
            section = records_section(records, header, decompression_bound(config), decompressed)
            create_time = header.timestamp_type is TimestampType.CREATE_TIME
            summary = walk_records(
                section,
                header.records_count,
                header.base_timestamp,
                list_keyless=client and config.compact,
                timestamp_bounds=bounds if create_time else None,
                progress=walked,
            )
            if client:
                check_records(header, summary, config, bounds)
            if rewrite:
                assert stored is not None and target is not None
                room = config.max_message_bytes
                stored += rebuild_batch(
                    records, header, section, summary, target, max_size=room, progress=walked
                )
                continue
        if stored is not None:
            stored += memoryview(records)[header.pos : header.end]
    if stored is not None and len(stored) > config.segment_bytes:
        raise RecordListTooLargeError(len(stored), config.segment_bytes)
    return stored


def _needs_rewrite(header: RecordBatchHeader, target: TargetCompression | None) -> bool:
    # Control batches (transaction markers) are never rewritten: Kafka keeps an uncompressed one as it
    # is, and would drop the control flag of a compressed one it rebuilt.
    return target is not None and not header.is_control and header.compression is not target.compression


def decompression_bound(config: LogConfig) -> int:
    """The most a batch may decompress to (128 MiB; max.message.bytes when stored uncompressed)."""
    target = config.compression
    if target is not None and target.compression is Compression.NONE:
        return min(config.max_message_bytes, DEFAULT_MAX_DECOMPRESSED_SIZE)
    return DEFAULT_MAX_DECOMPRESSED_SIZE


def progress_of(charge: Progress | None, checkpoint: Checkpoint | None) -> Progress | None:
    """One progress hook for the codecs and the walk: the request's budget, then the checkpoint."""
    if charge is None and checkpoint is None:
        return None

    def progress(size: int) -> None:
        if charge is not None:
            charge(size)
        if checkpoint is not None:
            checkpoint()

    return progress


def storage_error(error: RecordsError, config: LogConfig) -> StorageError:
    if isinstance(error, DecompressedSizeError):
        limit = decompression_bound(config)
        what = "max.message.bytes" if limit == config.max_message_bytes else "the bound on a rewritten batch"
        return RecordTooLargeError(
            -1, limit, what, message=f"record batch decompresses to more than {what} ({limit} bytes)"
        )
    if isinstance(error, CompressedSizeError):
        return RecordTooLargeError(
            -1,
            config.max_message_bytes,
            message=f"record batch rewritten in {config.compression_type} exceeds max.message.bytes "
            f"({config.max_message_bytes})",
        )
    if isinstance(error, TooManyRecordsError):
        return RecordTooLargeError(-1, -1, message=str(error))
    if isinstance(error, InvalidRecordsError):
        return InvalidRecordError(str(error))
    return CorruptRecordError(str(error))


def _same_bytes(a: Buffer, b: Buffer) -> bool:
    if a is b:
        return True
    if len(a) != len(b):
        return False
    if not isinstance(a, memoryview):
        return a == b  # bytes and bytearray compare with memcmp, whatever the other side is
    if not isinstance(b, memoryview):
        return bool(operator.eq(b, a))
    return all(
        bytes(a[start : start + _COMPARED_AT_ONCE]) == b[start : start + _COMPARED_AT_ONCE]
        for start in range(0, len(a), _COMPARED_AT_ONCE)
    )
