"""The codec's entry points: decode and encode any message at any version through functions compiled
once per (message, version) by `odradek.protocol.compiler`.

The generated code reads fixed-width runs of fields with one precompiled `struct` call, lengths and
counts inline, and nested structs inline down to a few levels (by a call below). Bad input surfaces as
struct.error, IndexError or UnicodeDecodeError inside the generated code; `decode_body` turns all of
those into CodecError at the edge, so the hot path pays for no checks that Python already makes.
Allocation bombs are the one thing Python does not check: every count and length is compared with
the bytes that remain before anything is allocated.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any, Final

from odradek.protocol.codec_error import CodecError, TruncatedError
from odradek.protocol.compiler.decoders import DecoderGenerator
from odradek.protocol.compiler.encoders import EncoderGenerator, default_check
from odradek.protocol.fields import VersionedStruct

__all__ = ["decode_body", "decode_from", "decoder_for", "default_check", "encode_into_for", "encoder_for"]

Decoder = Callable[[bytes | bytearray, int], tuple[Any, int]]
Encoder = Callable[[Any, bytearray], None]

_DECODE_ERRORS: Final = (struct.error, IndexError, UnicodeDecodeError, ValueError, TypeError, OverflowError)
_ENCODE_ERRORS: Final = (
    struct.error,
    AttributeError,
    TypeError,
    ValueError,
    UnicodeEncodeError,
    OverflowError,
)

_decoders: dict[tuple[type, int], Decoder] = {}
_encoders: dict[tuple[type, int], Encoder] = {}
_body_encoders: dict[tuple[type, int], Callable[[Any], bytes]] = {}
_raw_encoders: dict[tuple[type, int], Encoder] = {}


def decode_body(
    cls: type[VersionedStruct],
    data: bytes | bytearray | memoryview,
    version: int,
    *,
    start: int = 0,
    allow_trailing: bool = False,
) -> Any:
    """Decode a message body that must span all of `data` from `start` (unless `allow_trailing`).

    bytes and bytearray are read in place; a bytearray's records fields come back as writable views of
    it (Produce appends them without a copy), other fields as str/bytes either way."""
    if data.__class__ is not bytes and data.__class__ is not bytearray:
        data = bytes(data)
    decoder = _decoders.get((cls, version)) or decoder_for(cls, version)
    try:
        message, end = decoder(data, start)
    except CodecError:
        raise
    except _DECODE_ERRORS as error:
        raise _as_codec_error(error, cls, version) from error
    if end != len(data) and not allow_trailing:
        raise CodecError(f"{cls.__name__} v{version}: {len(data) - end} unexpected trailing bytes")
    return message


def decode_from(
    cls: type[VersionedStruct], data: bytes | bytearray, pos: int, version: int
) -> tuple[Any, int]:
    """Decode one message starting at `pos`; returns it and the position after it."""
    try:
        return decoder_for(cls, version)(data, pos)
    except CodecError:
        raise
    except _DECODE_ERRORS as error:
        raise _as_codec_error(error, cls, version) from error


def _as_codec_error(error: Exception, cls: type, version: int) -> CodecError:
    if isinstance(error, struct.error | IndexError):
        return TruncatedError(f"{cls.__name__} v{version}: message ends early ({error})")
    return CodecError(f"{cls.__name__} v{version}: {error}")


def decoder_for(cls: type[VersionedStruct], version: int) -> Decoder:
    """The compiled decoder of a top-level message at `version` (compiled once, then cached)."""
    key = (cls, version)
    decoder = _decoders.get(key)
    if decoder is None:
        _check_version(cls, version)
        decoder = DecoderGenerator(version, cls.FLEXIBLE).decoder(cls)
        _decoders[key] = decoder
    return decoder


def encoder_for(cls: type[VersionedStruct], version: int) -> Callable[[Any], bytes]:
    """A function that encodes a message of `cls` at `version` to bytes (compiled once, then cached)."""
    key = (cls, version)
    encode = _body_encoders.get(key)
    if encode is None:
        raw = _raw_encoder(cls, version)

        def encode(message: Any, _raw: Encoder = raw) -> bytes:
            out = bytearray()
            try:
                _raw(message, out)
            except CodecError:
                raise
            except _ENCODE_ERRORS as error:
                raise CodecError(f"{cls.__name__} v{version}: cannot encode: {error}") from error
            return bytes(out)

        _body_encoders[key] = encode
    return encode


def encode_into_for(cls: type[VersionedStruct], version: int) -> Encoder:
    """A function that appends the encoding of a message of `cls` at `version` to a bytearray."""
    key = (cls, version)
    encoder = _encoders.get(key)
    if encoder is None:
        raw = _raw_encoder(cls, version)

        def encoder(message: Any, out: bytearray, _raw: Encoder = raw) -> None:
            try:
                _raw(message, out)
            except CodecError:
                raise
            except _ENCODE_ERRORS as error:
                raise CodecError(f"{cls.__name__} v{version}: cannot encode: {error}") from error

        _encoders[key] = encoder
    return encoder


def _raw_encoder(cls: type[VersionedStruct], version: int) -> Encoder:
    """The compiled encoder itself, which lets Python's own exceptions through."""
    key = (cls, version)
    raw = _raw_encoders.get(key)
    if raw is None:
        _check_version(cls, version)
        raw = EncoderGenerator(version, cls.FLEXIBLE).encoder(cls)
        _raw_encoders[key] = raw
    return raw


def _check_version(cls: type[VersionedStruct], version: int) -> None:
    if version not in cls.VERSIONS:
        raise CodecError(f"{cls.__name__} has no version {version} (versions {cls.VERSIONS})")
