"""Conversions between record formats, as the broker needs them at its edges.

Up: a Produce of MessageSet v0/v1 (old clients) becomes one RecordBatch v2 before it reaches the log.
Down: a Fetch at versions 0-3 gets the log's v2 batches rewritten as MessageSet v1 or v0, dropping what
the old format cannot carry (headers, producer id/epoch/sequence, transactional flag; v0 also drops
timestamps) and skipping control batches, which old clients cannot understand. Offsets are kept.
"""

from __future__ import annotations

from odradek.protocol.records.attributes import (
    MAGIC_V0,
    MAGIC_V1,
    NO_TIMESTAMP,
    Compression,
    TimestampType,
)
from odradek.protocol.records.batch import RecordBatchBuilder, iter_record_batches
from odradek.protocol.records.compression import DEFAULT_MAX_DECOMPRESSED_SIZE, Progress, check_codec_allowed
from odradek.protocol.records.errors import RecordsError, RecordsTruncatedError, UnsupportedCompressionError
from odradek.protocol.records.header import Buffer
from odradek.protocol.records.legacy import MessageSet, build_message_set, decode_message_set
from odradek.protocol.records.record import Record

#: Records converted between two calls of a conversion's ``progress``.
_RECORDS_PER_STEP = 16 * 1024


def up_convert_message_set(
    message_set: MessageSet | Buffer,
    *,
    compression: Compression | None = None,
    level: int | None = None,
    base_offset: int | None = None,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    log_append_time: int | None = None,
    verify_crc: bool = True,
    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    progress: Progress | None = None,
) -> bytes:
    """One v2 batch holding every record of a v0/v1 message set (b"" if it holds none).

    ``compression`` None keeps the producer's codec (Kafka's compression.type=producer), at ``level``.
    ``base_offset`` None keeps the records' offsets, which must then increase; otherwise offsets are
    assigned from it, as the broker does on append. v0 records keep NO_TIMESTAMP (-1). A message set
    given as bytes must be whole: a produce request with a partial trailing message is malformed.
    ``progress`` is called every few thousand records (and by the codecs), and may raise to stop.
    """
    if not isinstance(message_set, MessageSet):
        message_set = decode_message_set(
            message_set, verify_crc=verify_crc, max_decompressed_size=max_decompressed_size, progress=progress
        )
        if message_set.truncated:
            raise RecordsTruncatedError("message set ends inside a message")
    records = message_set.records
    if not records:
        return b""
    if compression is None:
        compression = next(
            (batch.compression for batch in message_set.batches if batch.compression is not Compression.NONE),
            Compression.NONE,
        )
    first_offset = records[0].offset if base_offset is None else base_offset
    builder = RecordBatchBuilder(
        first_offset,
        compression=compression,
        timestamp_type=timestamp_type,
        log_append_time=log_append_time,
        compression_level=level,
    )
    for index, record in enumerate(records):
        offset = record.offset if base_offset is None else base_offset + index
        builder.append(record.timestamp, record.key, record.value, (), offset)
        if progress is not None and index % _RECORDS_PER_STEP == _RECORDS_PER_STEP - 1:
            progress(0)
    return builder.build()


def down_convert_batches(
    buf: Buffer,
    magic: int,
    *,
    first_offset: int = 0,
    verify_crc: bool = True,
    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
) -> bytes:
    """The v2 batches in ``buf`` rewritten as a message set of ``magic`` (0 or 1).

    Each batch becomes one compressed wrapper (same codec; zstd, which v0/v1 cannot carry, becomes
    uncompressed) or plain messages. Records below ``first_offset`` are dropped, as Kafka does for the
    batch a fetch starts inside. A partial trailing batch (as a fetch may read) is left out.
    """
    if magic not in (MAGIC_V0, MAGIC_V1):
        raise RecordsError(f"down-conversion targets magic 0 or 1, not {magic}")
    out = bytearray()
    for batch in iter_record_batches(buf, verify_crc=verify_crc, max_decompressed_size=max_decompressed_size):
        if batch.is_control:
            continue
        records = [record for record in batch.records if record.offset >= first_offset]
        if not records:
            continue
        if magic == MAGIC_V0:
            records = [Record(r.offset, NO_TIMESTAMP, r.key, r.value) for r in records]
        compression = batch.compression if _legacy_supports(batch.compression) else Compression.NONE
        appended = batch.timestamp_type is TimestampType.LOG_APPEND_TIME
        out += build_message_set(
            records,
            magic=magic,
            compression=compression,
            timestamp_type=batch.timestamp_type,
            log_append_time=batch.max_timestamp if appended else None,
        )
    return bytes(out)


def _legacy_supports(compression: Compression) -> bool:
    try:
        check_codec_allowed(compression, MAGIC_V1)
    except UnsupportedCompressionError:
        return False
    return True
