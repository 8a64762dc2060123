"""Conversions between record formats, as the broker needs them at its edges.

Up: a Produce of MessageSet v0/v1 (old clients) becomes one RecordBatch v2 before it reaches the log.
Down: a Fetch at versions 0-3 gets the log's v2 batches rewritten as MessageSet v1 or v0, dropping what
the old format cannot carry (headers, producer id/epoch/sequence, transactional flag; v0 also drops
timestamps) and skipping control batches, which old clients cannot understand. Offsets are kept.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from odradek.protocol.records.attributes import (
    MAGIC_V0,
    MAGIC_V1,
    NO_TIMESTAMP,
    Compression,
    TimestampType,
)
from odradek.protocol.records.batch import RecordBatchBuilder
from odradek.protocol.records.compression import DEFAULT_MAX_DECOMPRESSED_SIZE, Progress, check_codec_allowed
from odradek.protocol.records.errors import (
    CorruptRecordError,
    RecordsError,
    RecordsTruncatedError,
    UnsupportedCompressionError,
)
from odradek.protocol.records.header import Buffer, iter_batch_headers
from odradek.protocol.records.legacy import MessageSet, build_message_set, decode_message_set
from odradek.protocol.records.recompress import records_section
from odradek.protocol.records.record import Record, iter_records

#: Records converted between two calls of a conversion's ``progress``.
_RECORDS_PER_STEP = 16 * 1024
#: A plain message's bytes beyond its key and value: offset, size, CRC, magic, attributes, [timestamp],
#: key and value lengths.
_MESSAGE_OVERHEAD = {MAGIC_V0: 26, MAGIC_V1: 34}


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
    """The v2 batches in ``buf`` rewritten as a message set of ``magic`` (0 or 1), every record of them."""
    converted = down_convert(
        buf,
        magic,
        first_offset=first_offset,
        verify_crc=verify_crc,
        max_decompressed_size=max_decompressed_size,
    )
    return converted.data


@dataclass(frozen=True, slots=True)
class DownConverted:
    """A message set converted down, and how many records it holds."""

    data: bytes
    records: int


def down_convert(
    buf: Buffer,
    magic: int,
    *,
    first_offset: int = 0,
    max_bytes: int = sys.maxsize,
    max_records: int = sys.maxsize,
    verify_crc: bool = True,
    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    progress: Progress | None = None,
) -> DownConverted:
    """The records of the v2 batches in ``buf`` as a message set of ``magic`` (0 or 1), lazily: up to
    about ``max_bytes`` of messages and ``max_records`` records, though at least the first record.

    Each batch becomes one compressed wrapper (same codec; zstd, which v0/v1 cannot carry, becomes
    uncompressed) or plain messages. Records below ``first_offset`` are dropped, as Kafka does for the
    batch a fetch starts inside. A partial trailing batch (as a fetch may read) is left out.
    """
    if magic not in (MAGIC_V0, MAGIC_V1):
        raise RecordsError(f"down-conversion targets magic 0 or 1, not {magic}")
    out = bytearray()
    converted = 0
    for header in iter_batch_headers(buf):
        if header.is_control or header.next_offset <= first_offset:
            continue
        if verify_crc and not header.crc_is_valid(buf):
            raise CorruptRecordError(f"record batch at position {header.pos} fails its CRC-32C check")
        payload = records_section(buf, header, max_decompressed_size, progress)
        appended = header.timestamp_type is TimestampType.LOG_APPEND_TIME
        log_append_time = header.max_timestamp if appended else None
        records: list[Record] = []
        size = 0
        full = False
        for record in iter_records(
            payload,
            header.records_count,
            header.base_offset,
            header.base_timestamp,
            log_append_time,
            first_offset,
        ):
            cost = _legacy_size(magic, record)
            if converted + len(records) >= max_records or len(out) + size + cost > max_bytes:
                full = converted + len(records) > 0
                if full:
                    break
            if magic == MAGIC_V0:
                record = Record(record.offset, NO_TIMESTAMP, record.key, record.value)
            records.append(record)
            size += cost
            if progress is not None and len(records) % _RECORDS_PER_STEP == 0:
                progress(0)
        if records:
            compression = header.compression if _legacy_supports(header.compression) else Compression.NONE
            out += build_message_set(
                records,
                magic=magic,
                compression=compression,
                timestamp_type=header.timestamp_type,
                log_append_time=log_append_time,
            )
            converted += len(records)
        if full:
            break
    return DownConverted(bytes(out), converted)


def _legacy_size(magic: int, record: Record) -> int:
    """Bytes the record takes as a plain message of ``magic``."""
    size = _MESSAGE_OVERHEAD[magic]
    return size + len(record.key or b"") + len(record.value or b"")


def _legacy_supports(compression: Compression) -> bool:
    try:
        check_codec_allowed(compression, MAGIC_V1)
    except UnsupportedCompressionError:
        return False
    return True
