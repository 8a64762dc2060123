"""Rewriting one v2 batch with another codec, as a broker does for a topic whose compression.type is
not ``producer`` (Kafka's LogValidator when the producer's codec differs from the topic's).

Only the records section changes encoding. Records carry their offsets and timestamps as deltas from
the header's base offset and base timestamp, so their bytes stay exactly as the producer wrote them;
the header keeps every field (producer id, epoch and sequence, transactional and control flags,
timestamps, counts, the partition leader epoch) except the codec bits and the length, and gets a new
CRC-32C. One batch in, one batch out: an idempotent producer's sequence numbers mean the same after.
"""

from __future__ import annotations

from odradek.protocol.records.attributes import COMPRESSION_CODEC_MASK, MAGIC_V2, Compression
from odradek.protocol.records.compression import (
    DEFAULT_MAX_DECOMPRESSED_SIZE,
    TargetCompression,
    compress,
    decompress,
)
from odradek.protocol.records.errors import RecordsError, RecordsTruncatedError
from odradek.protocol.records.header import (
    ATTRIBUTES_OFFSET,
    BATCH_LENGTH_OFFSET,
    HEADER_SIZE,
    MIN_BATCH_LENGTH,
    Buffer,
    RecordBatchHeader,
    write_crc,
)

_INT32_MAX = 2**31 - 1


def recompress_batch(
    buf: Buffer,
    pos: int,
    target: TargetCompression,
    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
) -> bytearray:
    """The whole v2 batch at ``buf[pos:]`` with its records encoded with ``target`` (the CRC is not
    checked here: check it before, so that a corrupt batch is refused rather than given a valid CRC).

    Records are not walked, as the broker's no-copy path does not walk them: a payload that
    decompresses but holds no valid records is stored as faithfully as a producer's CRC would store it
    uncompressed (walking them in Python cost four times the recompression itself).

    Raises RecordsTruncatedError if the batch is not all in ``buf``, CompressionError
    (DecompressedSizeError past ``max_decompressed_size``) if its payload does not decompress.
    """
    header = RecordBatchHeader.read(buf, pos)
    end = header.end
    if len(buf) < end:
        raise RecordsTruncatedError(f"record batch at position {pos} ends at {end}, buffer has {len(buf)}")
    payload = memoryview(buf)[pos + HEADER_SIZE : end]
    source = header.compression
    records = (
        payload
        if source is Compression.NONE
        else decompress(source, payload, MAGIC_V2, max_decompressed_size)
    )
    target_codec = target.compression
    encoded = (
        records
        if target_codec is Compression.NONE
        else compress(target_codec, records, MAGIC_V2, target.level)
    )
    batch_length = MIN_BATCH_LENGTH + len(encoded)
    if batch_length > _INT32_MAX:
        raise RecordsError(f"record batch of {batch_length} bytes does not fit a batch length")
    out = bytearray(memoryview(buf)[pos : pos + HEADER_SIZE])
    out += encoded
    out[BATCH_LENGTH_OFFSET : BATCH_LENGTH_OFFSET + 4] = batch_length.to_bytes(4, "big")
    attributes = (header.attributes & ~COMPRESSION_CODEC_MASK) | int(target_codec)
    out[ATTRIBUTES_OFFSET : ATTRIBUTES_OFFSET + 2] = attributes.to_bytes(2, "big", signed=True)
    write_crc(out, 0, len(out))
    return out
