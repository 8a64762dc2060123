"""One record, the unit every format carries, and the RecordBatch v2 record encoding.

A v2 record (inside a batch, after the 61-byte header, possibly compressed):
length varint | attributes int8 | timestampDelta varlong | offsetDelta varint | keyLength varint | key |
valueLength varint | value | headerCount varint | [headerKeyLength varint | headerKey (UTF-8) |
headerValueLength varint | headerValue]. A length of -1 means null (not allowed for header keys).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from odradek.protocol.records.errors import CorruptRecordError, RecordsError, RecordsTruncatedError
from odradek.protocol.records.varint import read_varint, read_varlong, write_varint, write_varlong

Buffer = bytes | bytearray | memoryview

RecordHeader = tuple[str, bytes | None]
"""A record header: a UTF-8 string key and nullable bytes value."""


@dataclass(frozen=True, slots=True)
class Record:
    """A record as a consumer sees it: absolute offset and timestamp, nullable key and value, headers.

    Records decoded from MessageSet v0 have timestamp NO_TIMESTAMP (-1); legacy records have no headers.
    """

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[RecordHeader, ...] = ()


def decode_records(
    payload: Buffer,
    count: int,
    base_offset: int,
    base_timestamp: int,
    log_append_time: int | None,
) -> list[Record]:
    """Decode exactly ``count`` v2 records filling ``payload``.

    ``log_append_time``, when given, replaces every record's timestamp (LogAppendTime batches).
    """
    return list(iter_records(payload, count, base_offset, base_timestamp, log_append_time))


def iter_records(
    payload: Buffer,
    count: int,
    base_offset: int,
    base_timestamp: int,
    log_append_time: int | None,
    start_offset: int = 0,
) -> Iterator[Record]:
    """The ``count`` records filling ``payload`` one at a time, from the first at or after
    ``start_offset``: those before it are passed over with their length and offset read only."""
    if count < 0:
        raise CorruptRecordError(f"record batch has a negative record count {count}")
    pos = 0
    end = len(payload)
    skipping = start_offset > base_offset
    try:
        for index in range(count):  # a loop on the count, never a list of it: count is untrusted
            if pos >= end:
                raise CorruptRecordError(f"record batch declares {count} records, holds {index}")
            length, pos = read_varint(payload, pos)
            if length < 0 or length > end - pos:
                raise CorruptRecordError(f"record length {length} at position {pos} is impossible")
            record_end = pos + length
            if skipping and base_offset + _offset_delta(payload, pos) < start_offset:
                pos = record_end
                continue
            yield _decode_record(payload, pos, record_end, base_offset, base_timestamp, log_append_time)
            pos = record_end
    except RecordsTruncatedError:
        # The batch itself is whole, so a record running off its end is corruption, not truncation.
        raise CorruptRecordError("record runs past the end of its batch") from None
    if pos != end:
        raise CorruptRecordError(f"record batch has {end - pos} bytes after its {count} records")


def _offset_delta(payload: Buffer, pos: int) -> int:
    _, pos = read_varlong(payload, pos + 1)  # past the attributes and the timestamp delta
    return read_varint(payload, pos)[0]


def _decode_record(
    payload: Buffer, pos: int, end: int, base_offset: int, base_timestamp: int, log_append_time: int | None
) -> Record:
    # The record's own length bounds every read: a field running past it is corruption.
    pos += 1  # attributes: unused by every Kafka version so far
    try:
        timestamp_delta, pos = read_varlong(payload, pos)
        offset_delta, pos = read_varint(payload, pos)
        key, pos = _read_nullable_bytes(payload, pos, end)
        value, pos = _read_nullable_bytes(payload, pos, end)
        header_count, pos = read_varint(payload, pos)
        if header_count < 0:
            raise CorruptRecordError(f"record has a negative header count {header_count}")
        headers: list[RecordHeader] = []
        for _ in range(header_count):
            header_key, pos = _read_nullable_bytes(payload, pos, end)
            if header_key is None:
                raise CorruptRecordError("record header key is null")
            header_value, pos = _read_nullable_bytes(payload, pos, end)
            headers.append((header_key.decode("utf-8"), header_value))
    except RecordsTruncatedError:
        raise CorruptRecordError("record fields run past the record's length") from None
    except UnicodeDecodeError:
        raise CorruptRecordError("record header key is not valid UTF-8") from None
    if pos != end:
        raise CorruptRecordError(f"record ends {pos - end} bytes away from its declared length")
    timestamp = log_append_time if log_append_time is not None else base_timestamp + timestamp_delta
    return Record(base_offset + offset_delta, timestamp, key, value, tuple(headers))


def _read_nullable_bytes(payload: Buffer, pos: int, end: int) -> tuple[bytes | None, int]:
    length, pos = read_varint(payload, pos)
    if length < 0:
        if length != -1:
            raise CorruptRecordError(f"field length {length} is negative")
        return None, pos
    if length > end - pos:
        raise CorruptRecordError(f"field length {length} runs past the record")
    return bytes(payload[pos : pos + length]), pos + length


def encode_record(
    out: bytearray,
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: Sequence[RecordHeader],
) -> None:
    """Append one v2 record (length prefix included) to ``out``."""
    body = bytearray(b"\x00")  # attributes
    write_varlong(body, timestamp_delta)
    write_varint(body, offset_delta)
    _write_nullable_bytes(body, key)
    _write_nullable_bytes(body, value)
    write_varint(body, len(headers))
    for header_key, header_value in headers:
        if not isinstance(header_key, str):
            raise RecordsError(f"record header key must be a str, not {type(header_key).__name__}")
        _write_nullable_bytes(body, header_key.encode("utf-8"))
        _write_nullable_bytes(body, header_value)
    write_varint(out, len(body))
    out += body


def _write_nullable_bytes(out: bytearray, data: bytes | None) -> None:
    if data is None:
        out.append(0x01)  # zigzag(-1)
        return
    write_varint(out, len(data))
    out += data
