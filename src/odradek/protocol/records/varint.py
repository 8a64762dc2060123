"""Zigzag varints (int32) and varlongs (int64) as RecordBatch v2 records use them (protobuf encoding)."""

from __future__ import annotations

from odradek.protocol.records.errors import CorruptRecordError, RecordsError, RecordsTruncatedError

Buffer = bytes | bytearray | memoryview

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_MASK32 = 0xFFFFFFFF
_MASK64 = 0xFFFFFFFFFFFFFFFF


def read_varint(buf: Buffer, pos: int) -> tuple[int, int]:
    """Decode a zigzag varint (at most 5 bytes) at ``pos``; returns (value, position after it)."""
    raw, pos = _read_unsigned(buf, pos, 5)
    # Bits past 32 are dropped, as Kafka's ByteUtils.readVarint does when shifting into an int.
    raw &= _MASK32
    return (raw >> 1) ^ -(raw & 1), pos


def read_varlong(buf: Buffer, pos: int) -> tuple[int, int]:
    """Decode a zigzag varlong (at most 10 bytes) at ``pos``; returns (value, position after it)."""
    raw, pos = _read_unsigned(buf, pos, 10)
    raw &= _MASK64
    return (raw >> 1) ^ -(raw & 1), pos


def write_varint(out: bytearray, value: int) -> None:
    """Append ``value`` (an int32) as a zigzag varint."""
    if not _INT32_MIN <= value <= _INT32_MAX:
        raise RecordsError(f"varint value {value} is outside int32")
    _write_unsigned(out, ((value << 1) ^ (value >> 31)) & _MASK32)


def write_varlong(out: bytearray, value: int) -> None:
    """Append ``value`` (an int64) as a zigzag varlong."""
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise RecordsError(f"varlong value {value} is outside int64")
    _write_unsigned(out, ((value << 1) ^ (value >> 63)) & _MASK64)


def size_of_varint(value: int) -> int:
    """Bytes ``write_varint``/``write_varlong`` use for ``value``."""
    raw = ((value << 1) ^ (value >> 63)) & _MASK64
    size = 1
    while raw >= 0x80:
        raw >>= 7
        size += 1
    return size


def _read_unsigned(buf: Buffer, pos: int, max_bytes: int) -> tuple[int, int]:
    try:
        byte = buf[pos]
    except IndexError:
        raise RecordsTruncatedError(f"varint at position {pos} runs past the end of the data") from None
    if byte < 0x80:  # the common case: one byte
        return byte, pos + 1
    result = byte & 0x7F
    shift = 7
    end = len(buf)
    for index in range(pos + 1, pos + max_bytes):
        if index >= end:
            raise RecordsTruncatedError(f"varint at position {pos} runs past the end of the data")
        byte = buf[index]
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, index + 1
        shift += 7
    raise CorruptRecordError(f"varint at position {pos} is longer than {max_bytes} bytes")


def _write_unsigned(out: bytearray, raw: int) -> None:
    while raw >= 0x80:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)
