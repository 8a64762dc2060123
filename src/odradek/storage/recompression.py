"""Batches whose codec differs from the topic's compression.type are stored in the topic's codec, as
Kafka's LogValidator rebuilds them (``validateMessagesAndAssignOffsetsCompressed`` when the source and
target codecs differ). Batches already in that codec, and every batch of a ``producer`` topic, keep
the no-copy path: their bytes are patched in place and written.

Each batch is rewritten on its own (one batch in, one batch out), its header kept but for the codec
bits, length and CRC (see ``protocol.records.recompress``), so producer ids, epochs and sequences mean
what they meant. Control batches (transaction markers) are never rewritten: Kafka keeps an uncompressed
one as it is, and would drop the control flag of a compressed one it rebuilt; a coordinator only
writes them uncompressed.

Compressing can take long (seconds for a large batch at a high zstd level), so a caller on the event
loop may ``prepare_recompression`` in a worker thread first and hand the result to ``Log.append``,
which uses it if the topic's codec and level are still the ones it was made for, and otherwise
rewrites the batches itself.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

from odradek.protocol.records import (
    Compression,
    DecompressedSizeError,
    RecordBatchHeader,
    RecordsError,
    TargetCompression,
    iter_batch_headers,
    recompress_batch,
)
from odradek.storage.config import LogConfig
from odradek.storage.errors import CorruptRecordError, RecordTooLargeError

Buffer = bytes | bytearray | memoryview

K = TypeVar("K", bound=Hashable)

#: Threads rewriting batches at once: a bound on the memory they hold (up to MAX_DECOMPRESSED_BYTES
#: each, and the result), and on the cores they take from the event loop.
WORKERS = 2

#: The most a batch may decompress to when the broker rewrites it (unless compression.type is
#: uncompressed: then max.message.bytes). Kafka has no such bound; without one a small batch could hold
#: the broker for minutes (a 1 MiB batch of zeros decompresses to gigabytes).
MAX_DECOMPRESSED_BYTES = 128 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class RecompressedBatches:
    """Batches rewritten ahead of their append, with what they were made from and for."""

    target: TargetCompression
    source: tuple[tuple[int, int], ...]
    """(size, CRC) of each batch as sent: the append checks it is given the result for its own bytes."""
    records: bytearray | None
    error: RecordsError | None = None
    """Why the batches could not be rewritten (the append raises it instead of trying again)."""


class RecompressionWorkers:
    """Threads of their own that rewrite batches ahead of their appends (``prepare_recompression``):
    many large or slow rewrites at once then wait for one another, and never take the threads that
    flushes, cleaning and ZooKeeper calls run in."""

    def __init__(self, workers: int = WORKERS) -> None:
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="odradek-recompress")

    def prepare(self, work: Sequence[tuple[K, Buffer, LogConfig]]) -> Future[dict[K, RecompressedBatches]]:
        """Each (key, records, config) prepared in a worker; the keys of those with something to use."""
        return self._executor.submit(_prepare_each, work)

    def shutdown(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)


def _prepare_each(work: Sequence[tuple[K, Buffer, LogConfig]]) -> dict[K, RecompressedBatches]:
    prepared = ((key, prepare_recompression(records, config)) for key, records, config in work)
    return {key: result for key, result in prepared if result is not None}


def needs_recompression(records: Buffer, config: LogConfig) -> bool:
    """Whether appending ``records`` would rewrite a batch (header reads only: cheap on the loop)."""
    target = config.compression
    if target is None:
        return False
    try:
        return any(_needs_rewrite(h, target) for h in iter_batch_headers(records))
    except RecordsError:
        return False  # not v2 batches: the append converts or refuses them


def prepare_recompression(records: Buffer, config: LogConfig) -> RecompressedBatches | None:
    """The batches of ``records`` rewritten for ``config``'s codec, or None when none needs it or the
    bytes are not whole, CRC-valid v2 batches (the append refuses those itself). Reads ``records`` and
    nothing else: safe in a worker thread while the event loop runs."""
    target = config.compression
    if target is None:
        return None
    try:
        headers = list(iter_batch_headers(records))
        if not headers or headers[-1].end != len(records):
            return None
        if not any(_needs_rewrite(h, target) for h in headers):
            return None
        if not all(h.crc_is_valid(records) for h in headers):
            return None
    except RecordsError:
        return None
    source = tuple((h.size, h.crc) for h in headers)
    try:
        rewritten = _rewrite(records, headers, target, _decompression_bound(config))
    except RecordsError as error:
        return RecompressedBatches(target, source, None, error)
    return RecompressedBatches(target, source, rewritten)


def recompress_for_append(
    records: bytearray | memoryview,
    headers: list[RecordBatchHeader],
    config: LogConfig,
    prepared: RecompressedBatches | None = None,
) -> tuple[bytearray | memoryview, list[RecordBatchHeader]]:
    """``records`` (validated: whole, CRC-valid batches) as the log stores them, with their headers:
    the same buffer when no batch needs another codec, else a new one (``prepared`` if it was made
    from these batches for this codec and level).

    Raises RecordTooLargeError for a rewritten batch over ``max.message.bytes``, a rewritten append
    over ``segment.bytes`` or a batch decompressing past the bound; CorruptRecordError for a payload
    that does not decompress; UnsupportedCompressionError (UNSUPPORTED_COMPRESSION_TYPE) for a codec id
    no codec has.
    """
    target = config.compression
    if target is None or not any(_needs_rewrite(h, target) for h in headers):
        return records, headers
    if (
        prepared is not None
        and prepared.target == target
        and prepared.source == tuple((h.size, h.crc) for h in headers)
    ):
        if prepared.error is not None:
            raise _storage_error(prepared.error, config)
        assert prepared.records is not None
        rewritten = prepared.records
    else:
        try:
            rewritten = _rewrite(records, headers, target, _decompression_bound(config))
        except RecordsError as error:
            raise _storage_error(error, config) from error
    new_headers = list(iter_batch_headers(rewritten))
    # Kafka checks again what a rebuild may have grown (LogValidator's messageSizeMaybeChanged).
    for header in new_headers:
        if header.size > config.max_message_bytes:
            raise RecordTooLargeError(header.size, config.max_message_bytes)
    if len(rewritten) > config.segment_bytes:
        raise RecordTooLargeError(len(rewritten), config.segment_bytes, "segment.bytes")
    return rewritten, new_headers


def _needs_rewrite(header: RecordBatchHeader, target: TargetCompression) -> bool:
    return not header.is_control and header.compression is not target.compression


def _rewrite(
    records: Buffer, headers: Sequence[RecordBatchHeader], target: TargetCompression, bound: int
) -> bytearray:
    view = memoryview(records)
    out = bytearray()
    for header in headers:
        if _needs_rewrite(header, target):
            out += recompress_batch(records, header.pos, target, bound)
        else:
            out += view[header.pos : header.end]
    return out


def _decompression_bound(config: LogConfig) -> int:
    target = config.compression
    if target is not None and target.compression is Compression.NONE:
        return min(config.max_message_bytes, MAX_DECOMPRESSED_BYTES)
    return MAX_DECOMPRESSED_BYTES


def _storage_error(error: RecordsError, config: LogConfig) -> RecordTooLargeError | CorruptRecordError:
    if isinstance(error, DecompressedSizeError):
        limit = _decompression_bound(config)
        what = "max.message.bytes" if limit == config.max_message_bytes else "the bound on a rewritten batch"
        return RecordTooLargeError(
            -1, limit, what, message=f"record batch decompresses to more than {what} ({limit} bytes)"
        )
    return CorruptRecordError(str(error))
