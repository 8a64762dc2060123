"""MessageSet v0/v1 (magic 0 and 1), the record format before Kafka 0.11.

Message => offset int64 | message_size int32 | crc uint32 | magic int8 | attributes int8 |
[timestamp int64, magic 1 only] | key bytes | value bytes.  CRC-32 (zlib) covers magic..end of value.
Attributes: bits 0-2 codec (no zstd), bit 3 timestamp type (magic 1).

A compressed message is a wrapper whose value is a whole inner message set, compressed. The wrapper's
offset is the last inner offset; inner offsets are absolute in v0 and relative in v1 (absolute =
wrapper offset - last inner offset + inner offset). A LogAppendTime wrapper's timestamp overrides its
inner messages' timestamps.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field

from odradek.protocol.records.attributes import (
    LOG_OVERHEAD,
    MAGIC_V0,
    MAGIC_V1,
    NO_TIMESTAMP,
    TIMESTAMP_TYPE_MASK,
    Compression,
    TimestampType,
    compression_of,
    timestamp_type_of,
)
from odradek.protocol.records.compression import (
    DEFAULT_MAX_DECOMPRESSED_SIZE,
    Progress,
    check_codec_allowed,
    compress,
    decompress,
)
from odradek.protocol.records.errors import CorruptRecordError, RecordsError, TooManyRecordsError
from odradek.protocol.records.framing import MIN_ENTRY_LENGTH
from odradek.protocol.records.record import Record

Buffer = bytes | bytearray | memoryview

_ENTRY_HEAD = struct.Struct(">qiIbb")  # offset, message_size, crc, magic, attributes
_CRC_START = 16  # the magic byte: CRC-32 covers everything from it to the end of the message
_TIMESTAMP = struct.Struct(">q")
_LENGTH = struct.Struct(">i")


@dataclass(frozen=True, slots=True)
class LegacyBatch:
    """One top-level message of a message set: a plain message (one record) or a compressed wrapper.

    ``records`` carry absolute offsets and effective timestamps (NO_TIMESTAMP in magic 0), no headers.
    """

    offset: int
    magic: int
    compression: Compression
    timestamp_type: TimestampType | None  # None in magic 0, which has no timestamps
    timestamp: int
    crc: int
    size: int
    records: tuple[Record, ...]


@dataclass(slots=True)
class MessageSet:
    """A decoded message set; ``truncated`` says a trailing partial message was left out (not an error)."""

    batches: list[LegacyBatch] = field(default_factory=list)
    truncated: bool = False
    valid_bytes: int = 0

    @property
    def records(self) -> list[Record]:
        return [record for batch in self.batches for record in batch.records]


def decode_message_set(
    buf: Buffer,
    pos: int = 0,
    end: int | None = None,
    *,
    verify_crc: bool = True,
    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    max_records: int | None = None,
    progress: Progress | None = None,
) -> MessageSet:
    """Decode the messages in ``buf[pos:end]``, deep-decoding compressed wrappers.

    RecordsError (TooManyRecordsError) once more than ``max_records`` records are read; ``progress``
    is called with each wrapper's decompressed chunks and may raise to stop.
    """
    view = memoryview(buf)[: len(buf) if end is None else end]
    result = MessageSet()
    start = pos
    records = 0
    while pos < len(view):
        entry_end = _complete_entry_end(view, pos)
        if entry_end is None:
            result.truncated = True
            break
        batch = _decode_top_level(view, pos, entry_end, verify_crc, max_decompressed_size, progress)
        records += len(batch.records)
        if max_records is not None and records > max_records:
            raise TooManyRecordsError(f"message set holds more than {max_records} records")
        result.batches.append(batch)
        pos = entry_end
    result.valid_bytes = pos - start
    return result


def scan_message_set(buf: Buffer, max_entries: int) -> list[tuple[int, int, Compression]]:
    """(size, magic, codec) of each whole top-level message of ``buf``, read from their headers only
    (no CRC checked, nothing decompressed); TooManyRecordsError past ``max_entries`` of them."""
    view = memoryview(buf)
    entries: list[tuple[int, int, Compression]] = []
    pos = 0
    while pos < len(view):
        entry_end = _complete_entry_end(view, pos)
        if entry_end is None:
            break
        if len(entries) == max_entries:
            raise TooManyRecordsError(f"message set holds more than {max_entries} messages")
        _, _, _, magic, attributes = _ENTRY_HEAD.unpack_from(view, pos)
        compression = compression_of(attributes)
        check_codec_allowed(compression, magic)
        entries.append((entry_end - pos, magic, compression))
        pos = entry_end
    return entries


def build_message_set(
    records: Iterable[Record],
    *,
    magic: int,
    compression: Compression = Compression.NONE,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    log_append_time: int | None = None,
) -> bytes:
    """A message set of ``records`` at their own offsets; compressed, it is one wrapper holding them all.

    Headers are dropped: neither legacy format can carry them. Magic 0 drops timestamps too.
    """
    if magic not in (MAGIC_V0, MAGIC_V1):
        raise RecordsError(f"message sets have magic 0 or 1, not {magic}")
    compression = Compression(compression)
    check_codec_allowed(compression, magic)
    appended = timestamp_type is TimestampType.LOG_APPEND_TIME and magic == MAGIC_V1
    if appended and log_append_time is None:
        raise RecordsError("LogAppendTime messages need log_append_time")
    timestamp_bit = TIMESTAMP_TYPE_MASK if appended else 0
    records = list(records)
    out = bytearray()
    if compression is Compression.NONE:
        for record in records:
            timestamp = log_append_time if appended and log_append_time is not None else record.timestamp
            _encode_message(out, record.offset, magic, timestamp_bit, timestamp, record.key, record.value)
        return bytes(out)
    if not records:
        return b""
    inner = bytearray()
    first_offset = records[0].offset
    for record in records:
        # v1 inner offsets are relative to the first record; v0 keeps them absolute.
        inner_offset = record.offset - first_offset if magic == MAGIC_V1 else record.offset
        _encode_message(inner, inner_offset, magic, 0, record.timestamp, record.key, record.value)
    if appended and log_append_time is not None:
        wrapper_timestamp = log_append_time
    else:
        wrapper_timestamp = max(record.timestamp for record in records)
    value = compress(compression, inner, magic)
    _encode_message(
        out, records[-1].offset, magic, compression | timestamp_bit, wrapper_timestamp, None, value
    )
    return bytes(out)


def _complete_entry_end(view: memoryview, pos: int) -> int | None:
    """End of the message at ``pos``, or None if the buffer stops inside it."""
    if len(view) - pos < _ENTRY_HEAD.size:
        return None
    _, size, _, magic, _ = _ENTRY_HEAD.unpack_from(view, pos)
    if magic not in (MAGIC_V0, MAGIC_V1):
        raise CorruptRecordError(f"message at position {pos} has magic {magic}, expected 0 or 1")
    if size < MIN_ENTRY_LENGTH[magic]:
        raise CorruptRecordError(f"message at position {pos} has impossible size {size}")
    entry_end = pos + LOG_OVERHEAD + size
    return entry_end if entry_end <= len(view) else None


def _decode_top_level(
    view: memoryview,
    pos: int,
    end: int,
    verify_crc: bool,
    max_decompressed_size: int,
    progress: Progress | None = None,
) -> LegacyBatch:
    offset, magic, attributes, timestamp, crc, key, value = _decode_message(view, pos, end, verify_crc)
    compression = compression_of(attributes)
    check_codec_allowed(compression, magic)
    timestamp_type = timestamp_type_of(attributes) if magic == MAGIC_V1 else None
    size = end - pos
    if compression is Compression.NONE:
        records: tuple[Record, ...] = (Record(offset, timestamp, key, value),)
        return LegacyBatch(offset, magic, compression, timestamp_type, timestamp, crc, size, records)
    if value is None:
        raise CorruptRecordError(f"compressed message at position {pos} has a null value")
    inner = decompress(compression, value, magic, max_decompressed_size, progress=progress)
    messages = _decode_inner(memoryview(inner), magic, verify_crc)
    if not messages:
        raise CorruptRecordError(f"compressed message at position {pos} holds no messages")
    base = offset - messages[-1][0] if magic == MAGIC_V1 else 0
    override = timestamp if timestamp_type is TimestampType.LOG_APPEND_TIME else None
    records = tuple(
        Record(base + inner_offset, inner_timestamp if override is None else override, inner_key, inner_value)
        for inner_offset, inner_timestamp, inner_key, inner_value in messages
    )
    return LegacyBatch(offset, magic, compression, timestamp_type, timestamp, crc, size, records)


def _decode_inner(
    view: memoryview, wrapper_magic: int, verify_crc: bool
) -> list[tuple[int, int, bytes | None, bytes | None]]:
    messages: list[tuple[int, int, bytes | None, bytes | None]] = []
    pos = 0
    while pos < len(view):
        end = _complete_entry_end(view, pos)
        if end is None:
            raise CorruptRecordError("compressed message set ends inside a message")
        offset, magic, attributes, timestamp, _, key, value = _decode_message(view, pos, end, verify_crc)
        if magic != wrapper_magic:
            raise CorruptRecordError(
                f"inner message magic {magic} differs from wrapper magic {wrapper_magic}"
            )
        if attributes & 0x07:
            raise CorruptRecordError("compressed message set holds a compressed message")
        messages.append((offset, timestamp, key, value))
        pos = end
    return messages


def _decode_message(
    view: memoryview, pos: int, end: int, verify_crc: bool
) -> tuple[int, int, int, int, int, bytes | None, bytes | None]:
    """(offset, magic, attributes, timestamp, crc, key, value) of the complete message in view[pos:end]."""
    offset, _, crc, magic, attributes = _ENTRY_HEAD.unpack_from(view, pos)
    if verify_crc and zlib.crc32(view[pos + _CRC_START : end]) != crc:
        raise CorruptRecordError(f"message at position {pos} fails its CRC-32 check")
    field_pos = pos + _ENTRY_HEAD.size
    timestamp = NO_TIMESTAMP
    if magic == MAGIC_V1:
        (timestamp,) = _TIMESTAMP.unpack_from(view, field_pos)
        field_pos += 8
    key, field_pos = _read_bytes(view, field_pos, end)
    value, field_pos = _read_bytes(view, field_pos, end)
    if field_pos != end:
        raise CorruptRecordError(f"message at position {pos} has {end - field_pos} bytes after its value")
    return offset, magic, attributes, timestamp, crc, key, value


def _read_bytes(view: memoryview, pos: int, end: int) -> tuple[bytes | None, int]:
    if end - pos < 4:
        raise CorruptRecordError("message field length runs past the message")
    (length,) = _LENGTH.unpack_from(view, pos)
    pos += 4
    if length == -1:
        return None, pos
    if length < 0 or length > end - pos:
        raise CorruptRecordError(f"message field length {length} is impossible")
    return bytes(view[pos : pos + length]), pos + length


def _encode_message(
    out: bytearray,
    offset: int,
    magic: int,
    attributes: int,
    timestamp: int,
    key: Buffer | None,
    value: Buffer | None,
) -> None:
    body = bytearray((magic, attributes))
    try:
        if magic == MAGIC_V1:
            body += _TIMESTAMP.pack(timestamp)
        for data in (key, value):
            if data is None:
                body += _LENGTH.pack(-1)
            else:
                body += _LENGTH.pack(len(data))
                body += data
        out += struct.pack(">qiI", offset, 4 + len(body), zlib.crc32(body))
    except struct.error as exc:
        raise RecordsError(f"message field out of range: {exc}") from None
    out += body
