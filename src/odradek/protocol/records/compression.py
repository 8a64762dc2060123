"""Compression codecs of the record formats: gzip, snappy (raw and xerial-framed), lz4 frame, zstd.

Decompression is bounded: hostile input can never make us hold more than ``max_size`` decompressed bytes
(default 128 MiB); past that a DecompressedSizeError is raised. Every failure is a CompressionError (a
CodecError); errors of zlib and cramjam never escape.

Format notes:
- snappy: Java clients write the xerial framing (``\\x82SNAPPY\\x00``, two int32 versions, then blocks
  each prefixed by a big-endian int32 length); librdkafka writes raw snappy. Both are read; xerial is
  written, as Kafka's own broker does.
- lz4: the LZ4 frame format with independent blocks. Kafka 0.8/0.9 computed the frame descriptor checksum
  over the magic number too; that quirk is written for magic 0 and accepted on read for magic 0.
- zstd: only RecordBatch v2 may use it (KIP-110).

Levels (KIP-390, a topic's ``compression.<codec>.level``): gzip 1-9 or -1 for zlib's default (6); lz4
1-17, where the default 9 is Kafka's fast compressor and any other level its high-compression one;
zstd -131072..22, default 3. Snappy has none.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

import cramjam

from odradek.protocol.records import lz4_frame
from odradek.protocol.records.attributes import MAGIC_V0, MAGIC_V2, Compression
from odradek.protocol.records.errors import (
    CompressionError,
    DecompressedSizeError,
    UnsupportedCompressionError,
)

Buffer = bytes | bytearray | memoryview

DEFAULT_MAX_DECOMPRESSED_SIZE = 128 * 1024 * 1024

XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = struct.Struct(">8sii")
_XERIAL_VERSION = 1
_XERIAL_COMPATIBLE_VERSION = 1
_XERIAL_BLOCK_SIZE = 32 * 1024  # xerial SnappyOutputStream's default block size
_BLOCK_LENGTH = struct.Struct(">i")

_ZSTD_FRAME_MAGIC = b"\x28\xb5\x2f\xfd"
_ZSTD_FIRST_GUESS = 256 * 1024

GZIP_DEFAULT_LEVEL = -1  # java.util.zip.Deflater.DEFAULT_COMPRESSION: zlib's level 6
LZ4_DEFAULT_LEVEL = 9
ZSTD_DEFAULT_LEVEL = 3
_GZIP_WBITS = 16 + zlib.MAX_WBITS  # a gzip member, not a bare zlib stream


@dataclass(frozen=True, slots=True)
class TargetCompression:
    """A codec and its level, as a topic's compression.type and compression.<codec>.level name them
    (Kafka's ``Compression``). ``level`` None is the codec's default; snappy and none ignore it."""

    compression: Compression
    level: int | None = None


def check_codec_allowed(compression: Compression, magic: int) -> None:
    """Raise UnsupportedCompressionError if ``compression`` cannot appear in a batch of ``magic``."""
    if compression is Compression.ZSTD and magic < MAGIC_V2:
        raise UnsupportedCompressionError(f"zstd compression needs message format v2, not magic {magic}")


def compress(
    compression: Compression, data: Buffer, magic: int = MAGIC_V2, level: int | None = None
) -> bytes:
    """Compress ``data`` with ``compression`` (at ``level``, None: the codec's default) as a batch of
    ``magic`` must carry it."""
    check_codec_allowed(compression, magic)
    try:
        if compression is Compression.NONE:
            return bytes(data)
        if compression is Compression.GZIP:
            return _gzip_compress(data, zlib.Z_DEFAULT_COMPRESSION if level is None else level)
        if compression is Compression.SNAPPY:
            return _xerial_compress(data)
        if compression is Compression.LZ4:
            lz4_level = None if level in (None, LZ4_DEFAULT_LEVEL) else level
            return lz4_frame.compress(data, legacy_header_checksum=magic == MAGIC_V0, level=lz4_level)
        if compression is Compression.ZSTD:
            return bytes(cramjam.zstd.compress(data, level=ZSTD_DEFAULT_LEVEL if level is None else level))
    except (cramjam.CompressionError, zlib.error, ValueError) as exc:  # ValueError: a level out of range
        raise CompressionError(f"{compression.name} compression failed: {exc}") from None
    raise UnsupportedCompressionError(f"unknown compression {compression!r}")


def decompress(
    compression: Compression,
    data: Buffer,
    magic: int = MAGIC_V2,
    max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
) -> bytes:
    """Decompress ``data`` (the payload of a batch of ``magic``), holding at most ``max_size`` bytes."""
    check_codec_allowed(compression, magic)
    try:
        if compression is Compression.NONE:
            return _bounded(bytes(data), max_size)
        if compression is Compression.GZIP:
            return _gzip_decompress(data, max_size)
        if compression is Compression.SNAPPY:
            return _snappy_decompress(data, max_size)
        if compression is Compression.LZ4:
            return lz4_frame.decompress(data, max_size, accept_legacy_header_checksum=magic == MAGIC_V0)
        if compression is Compression.ZSTD:
            return _zstd_decompress(data, max_size)
    except cramjam.DecompressionError as exc:
        raise CompressionError(f"corrupt {compression.name} data: {exc}") from None
    raise UnsupportedCompressionError(f"unknown compression {compression!r}")


def _bounded(result: bytes, max_size: int) -> bytes:
    if len(result) > max_size:
        raise DecompressedSizeError(f"decompressed data exceeds the limit of {max_size} bytes")
    return result


def _gzip_compress(data: Buffer, level: int) -> bytes:
    # zlib (the stdlib's, which releases the GIL as it deflates) wrote gzip a third faster than
    # cramjam at Kafka's default level when measured.
    deflater = zlib.compressobj(level, zlib.DEFLATED, _GZIP_WBITS)
    return deflater.compress(data) + deflater.flush()


def _gzip_decompress(data: Buffer, max_size: int) -> bytes:
    # zlib's max_length lets us stop at the limit instead of inflating a bomb first and checking after.
    parts: list[bytes] = []
    total = 0
    remaining = bytes(data)
    try:
        while True:
            inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
            chunk = inflater.decompress(remaining, max_size - total + 1)
            total += len(chunk)
            parts.append(chunk)
            if total > max_size:
                raise DecompressedSizeError(f"decompressed gzip data exceeds the limit of {max_size} bytes")
            if not inflater.eof:
                raise CompressionError("gzip data ends before the end of its stream")
            # Java's GZIPInputStream reads concatenated members; so do we.
            remaining = inflater.unused_data
            if not remaining:
                return b"".join(parts)
    except zlib.error as exc:
        raise CompressionError(f"corrupt gzip data: {exc}") from None


def _snappy_decompress(data: Buffer, max_size: int) -> bytes:
    view = memoryview(data)
    if view[: len(XERIAL_MAGIC)] != XERIAL_MAGIC:
        return _snappy_raw_block(view, max_size, max_size)
    if len(view) < _XERIAL_HEADER.size:
        raise CompressionError("xerial snappy header is truncated")
    parts: list[bytes] = []
    total = 0
    pos = _XERIAL_HEADER.size
    while pos < len(view):
        if len(view) - pos < 4:
            raise CompressionError("xerial snappy block length is truncated")
        (length,) = _BLOCK_LENGTH.unpack_from(view, pos)
        pos += 4
        if length < 0 or length > len(view) - pos:
            raise CompressionError(f"xerial snappy block length {length} is impossible")
        block = _snappy_raw_block(view[pos : pos + length], max_size - total, max_size)
        total += len(block)
        parts.append(block)
        pos += length
    return b"".join(parts)


def _snappy_raw_block(block: memoryview, room: int, max_size: int) -> bytes:
    # The raw format states its decompressed length up front: check it before anything is allocated.
    declared = int(cramjam.snappy.decompress_raw_len(block))
    if declared > room:
        raise DecompressedSizeError(f"decompressed snappy data exceeds the limit of {max_size} bytes")
    return bytes(cramjam.snappy.decompress_raw(block))


def _xerial_compress(data: Buffer) -> bytes:
    view = memoryview(data)
    out = bytearray(_XERIAL_HEADER.pack(XERIAL_MAGIC, _XERIAL_VERSION, _XERIAL_COMPATIBLE_VERSION))
    for start in range(0, len(view), _XERIAL_BLOCK_SIZE):
        block = bytes(cramjam.snappy.compress_raw(view[start : start + _XERIAL_BLOCK_SIZE]))
        out += _BLOCK_LENGTH.pack(len(block))
        out += block
    return bytes(out)


def _zstd_decompress(data: Buffer, max_size: int) -> bytes:
    """Decompress into a bounded buffer, growing it up to ``max_size`` while the output does not fit."""
    source = bytes(data)
    content_size = _zstd_content_size(source)
    if content_size is not None and content_size > max_size:
        raise DecompressedSizeError(f"zstd frame declares {content_size} bytes, over the limit of {max_size}")
    # Java's zstd-jni streams frames without a content size, so often we can only guess and grow.
    guess = content_size if content_size is not None else max(_ZSTD_FIRST_GUESS, len(source) * 8)
    capacity = min(max(guess, 1), max_size)
    while True:
        out = bytearray(capacity)
        try:
            written = int(cramjam.zstd.decompress_into(source, out))
        except cramjam.DecompressionError as exc:
            # cramjam says "failed to write whole buffer" when the output does not fit; anything else
            # is corrupt input, not worth retrying with a bigger buffer.
            if "whole buffer" not in str(exc):
                raise CompressionError(f"corrupt ZSTD data: {exc}") from None
            if capacity >= max_size:
                raise DecompressedSizeError(
                    f"zstd data decompresses past the limit of {max_size} bytes"
                ) from None
            capacity = min(capacity * 4, max_size)
            continue
        del out[written:]
        return bytes(out)


def _zstd_content_size(source: bytes) -> int | None:
    """The Frame_Content_Size of the first zstd frame, if its header carries one."""
    if source[:4] != _ZSTD_FRAME_MAGIC:
        raise CompressionError("zstd data does not start with a zstd frame")
    if len(source) < 5:
        raise CompressionError("zstd frame header is truncated")
    descriptor = source[4]
    single_segment = bool(descriptor & 0x20)
    size_field = (0, 2, 4, 8)[descriptor >> 6] or (1 if single_segment else 0)
    if size_field == 0:
        return None
    pos = 5 + (0 if single_segment else 1) + (0, 1, 2, 4)[descriptor & 0x03]
    if len(source) < pos + size_field:
        raise CompressionError("zstd frame header is truncated")
    size = int.from_bytes(source[pos : pos + size_field], "little")
    # A two-byte field stores the size minus 256 (RFC 8878, 3.1.1.1.4).
    return size + 256 if size_field == 2 else size
