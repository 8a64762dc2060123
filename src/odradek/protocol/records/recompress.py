"""Rewriting one v2 batch with another codec, as a broker does for a topic whose compression.type is
not ``producer`` (Kafka's LogValidator when the producer's codec differs from the topic's).

The records are walked first (``record_walk``): a batch whose records do not read as its header says
is refused, not signed again with a fresh CRC. Records carry their offsets and timestamps as deltas
from the header's base offset and base timestamp, so their bytes stay as the producer wrote them,
except offset deltas that were not 0, 1, 2..., which are renumbered as Kafka's rebuild numbers them.
The header keeps every field (producer id, epoch and sequence, transactional and control flags, base
timestamp, counts, the partition leader epoch) except the codec bits, the length and, for CreateTime
batches, the max timestamp, which becomes the records' largest as in Kafka's rebuilt batch; then it
gets a new CRC-32C. One batch in, one batch out: an idempotent producer's sequence numbers mean the
same after.
"""

from __future__ import annotations

from odradek.protocol.records.attributes import COMPRESSION_CODEC_MASK, MAGIC_V2, Compression, TimestampType
from odradek.protocol.records.compression import (
    DEFAULT_MAX_DECOMPRESSED_SIZE,
    Progress,
    TargetCompression,
    compress,
    decompress,
)
from odradek.protocol.records.errors import RecordsError, RecordsTruncatedError
from odradek.protocol.records.header import (
    ATTRIBUTES_OFFSET,
    BATCH_LENGTH_OFFSET,
    HEADER_SIZE,
    MAX_TIMESTAMP_OFFSET,
    MIN_BATCH_LENGTH,
    Buffer,
    RecordBatchHeader,
    write_crc,
)
from odradek.protocol.records.record_walk import RecordsSummary, renumber_offsets, walk_records

_INT32_MAX = 2**31 - 1


def recompress_batch(
    buf: Buffer,
    pos: int,
    target: TargetCompression,
    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
) -> bytearray:
    """The whole v2 batch at ``buf[pos:]`` with its records encoded with ``target`` (the CRC is not
    checked here: check it before, so that a corrupt batch is refused rather than given a valid CRC).

    Raises RecordsTruncatedError if the batch is not all in ``buf``, CompressionError
    (DecompressedSizeError past ``max_decompressed_size``) if its payload does not decompress,
    InvalidRecordsError if its records do not read as its header says.
    """
    header = RecordBatchHeader.read(buf, pos)
    records = records_section(buf, header, max_decompressed_size)
    summary = walk_records(records, header.records_count, header.base_timestamp)
    return rebuild_batch(buf, header, records, summary, target)


def records_section(
    buf: Buffer,
    header: RecordBatchHeader,
    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    progress: Progress | None = None,
) -> Buffer:
    """The records section of the batch ``header`` heads in ``buf``, decompressed (a view of ``buf``
    when it is not compressed)."""
    end = header.end
    if len(buf) < end:
        raise RecordsTruncatedError(
            f"record batch at position {header.pos} ends at {end}, buffer has {len(buf)}"
        )
    payload = memoryview(buf)[header.pos + HEADER_SIZE : end]
    source = header.compression
    if source is Compression.NONE:
        return payload
    return decompress(source, payload, MAGIC_V2, max_decompressed_size, progress=progress)


def rebuild_batch(
    buf: Buffer,
    header: RecordBatchHeader,
    records: Buffer,
    summary: RecordsSummary,
    target: TargetCompression,
    *,
    max_size: int | None = None,
    progress: Progress | None = None,
) -> bytearray:
    """The batch ``header`` heads in ``buf``, holding ``records`` (its records section, walked into
    ``summary``) encoded with ``target``. CompressedSizeError once it would pass ``max_size`` bytes."""
    if not summary.offsets_in_order:
        records = renumber_offsets(records, summary.count, progress)
    target_codec = target.compression
    room = None if max_size is None else max(max_size - HEADER_SIZE, 0)
    encoded = compress(target_codec, records, MAGIC_V2, target.level, max_size=room, progress=progress)
    batch_length = MIN_BATCH_LENGTH + len(encoded)
    if batch_length > _INT32_MAX:
        raise RecordsError(f"record batch of {batch_length} bytes does not fit a batch length")
    out = bytearray(memoryview(buf)[header.pos : header.pos + HEADER_SIZE])
    out += encoded
    del encoded
    out[BATCH_LENGTH_OFFSET : BATCH_LENGTH_OFFSET + 4] = batch_length.to_bytes(4, "big")
    attributes = (header.attributes & ~COMPRESSION_CODEC_MASK) | int(target_codec)
    out[ATTRIBUTES_OFFSET : ATTRIBUTES_OFFSET + 2] = attributes.to_bytes(2, "big", signed=True)
    if header.timestamp_type is TimestampType.CREATE_TIME and summary.count:
        out[MAX_TIMESTAMP_OFFSET : MAX_TIMESTAMP_OFFSET + 8] = summary.max_timestamp.to_bytes(
            8, "big", signed=True
        )
    write_crc(out, 0, len(out))
    return out
