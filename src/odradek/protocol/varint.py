"""Unsigned varints (compact lengths and tagged fields) as the flexible protocol versions use them."""

from __future__ import annotations

from typing import Final

from odradek.protocol.codec_error import CodecError, TruncatedError

_SMALL: Final = [bytes((i,)) for i in range(128)]


def uvarint_bytes(value: int) -> bytes:
    """The unsigned-varint encoding of a value in 0..2^32-1."""
    if 0 <= value < 128:
        return _SMALL[value]
    if value < 0 or value > 0xFFFFFFFF:
        raise CodecError(f"unsigned varint out of range: {value}")
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def read_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    """Read an unsigned varint of at most 5 bytes (32 bits); returns (value, position after it)."""
    value = 0
    shift = 0
    end = len(buf)
    while True:
        if pos >= end:
            raise TruncatedError("unsigned varint ends early")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            if value > 0xFFFFFFFF:  # a fifth byte above 0x0F: more than 32 bits
                raise CodecError(f"unsigned varint out of range: {value}")
            return value, pos
        shift += 7
        if shift > 28:
            raise CodecError("unsigned varint longer than 5 bytes")
