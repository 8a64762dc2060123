"""Compression codecs of the record formats: gzip, snappy (raw and xerial-framed), lz4 frame, zstd.

Both directions stream in chunks (``CHUNK_SIZE`` bytes of input to compress, of output when
decompressing) into one growing buffer, which is returned as it is: nothing is copied at the end, so
a caller holds its output once. Decompression is bounded: hostile input never makes us hold more
than ``max_size`` decompressed bytes (default 128 MiB) and one chunk; past that a
DecompressedSizeError is raised. Compression may be bounded too (``max_size``: CompressedSizeError
within a chunk of input past it). Between chunks both call ``progress`` with the chunk's size, so a
caller counts its work as it goes and stops it by raising there (a broker stopping, a request over its
budget). Every failure is a CompressionError (a CodecError); errors of zlib, cramjam and zstandard
never escape.

Format notes:
- snappy: Java clients write the xerial framing (``\\x82SNAPPY\\x00``, two int32 versions, then blocks
  each prefixed by a big-endian int32 length); librdkafka writes raw snappy. Both are read; xerial is
  written, as Kafka's own broker does.
- lz4: the LZ4 frame format with independent blocks. Kafka 0.8/0.9 computed the frame descriptor checksum
  over the magic number too; that quirk is written for magic 0 and accepted on read for magic 0.
- zstd: only RecordBatch v2 may use it (KIP-110). Read and written with python-zstandard, whose
  decompressing reader stops where asked (cramjam's decompresses a frame whole).

Levels (KIP-390, a topic's ``compression.<codec>.level``): gzip 1-9 or -1 for zlib's default (6); lz4
1-17, where the default 9 is Kafka's fast compressor and any other level its high-compression one;
zstd -131072..22, default 3. Snappy has none.
"""

from __future__ import annotations

import struct
import sys
import zlib
from collections.abc import Callable
from dataclasses import dataclass

import cramjam
import zstandard

from odradek.protocol.records import lz4_frame
from odradek.protocol.records.attributes import MAGIC_V0, MAGIC_V2, Compression
from odradek.protocol.records.errors import (
    CompressedSizeError,
    CompressionError,
    DecompressedSizeError,
    UnsupportedCompressionError,
)

Buffer = bytes | bytearray | memoryview

#: Called with the size of each chunk a codec has just done; it may raise to stop the work.
Progress = Callable[[int], None]

DEFAULT_MAX_DECOMPRESSED_SIZE = 128 * 1024 * 1024
#: The step of the streaming codecs: input compressed, or output decompressed, between two calls of
#: ``progress`` and two checks of a bound.
CHUNK_SIZE = 1024 * 1024
_NO_LIMIT = sys.maxsize

XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = struct.Struct(">8sii")
_XERIAL_VERSION = 1
_XERIAL_COMPATIBLE_VERSION = 1
_XERIAL_BLOCK_SIZE = 32 * 1024  # xerial SnappyOutputStream's default block size
_BLOCK_LENGTH = struct.Struct(">i")

_ZSTD_FRAME_MAGIC = 0xFD2FB528
_ZSTD_SKIPPABLE_MAGIC = 0x184D2A50  # the low four bits are free
_ZSTD_RESERVED_BLOCK = 3

#: Input handed to zlib for the first read of a gzip member, doubled on each read of that member up
#: to 64 KiB: what follows a member's end is copied back out (``unused_data``), so many small
#: members must each be given little.
_GZIP_FIRST_INPUT = 32
_GZIP_MAX_INPUT = 64 * 1024

GZIP_DEFAULT_LEVEL = -1  # java.util.zip.Deflater.DEFAULT_COMPRESSION: zlib's level 6
LZ4_DEFAULT_LEVEL = 9
ZSTD_DEFAULT_LEVEL = 3
_GZIP_WBITS = 16 + zlib.MAX_WBITS  # a gzip member, not a bare zlib stream


#: compression.type's values (Kafka's BrokerCompressionType) and the codec each stores batches in;
#: ``producer`` keeps each batch's own.
COMPRESSION_TYPES: dict[str, Compression | None] = {
    "uncompressed": Compression.NONE,
    "zstd": Compression.ZSTD,
    "lz4": Compression.LZ4,
    "snappy": Compression.SNAPPY,
    "gzip": Compression.GZIP,
    "producer": None,
}


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
    compression: Compression,
    data: Buffer,
    magic: int = MAGIC_V2,
    level: int | None = None,
    *,
    max_size: int | None = None,
    progress: Progress | None = None,
) -> bytearray:
    """Compress ``data`` with ``compression`` (at ``level``, None: the codec's default) as a batch of
    ``magic`` must carry it; CompressedSizeError once the output passes ``max_size``."""
    check_codec_allowed(compression, magic)
    limit = _NO_LIMIT if max_size is None else max_size
    try:
        if compression is Compression.NONE:
            return _copy(data, limit, progress, CompressedSizeError)
        if compression is Compression.GZIP:
            return _gzip_compress(
                data, zlib.Z_DEFAULT_COMPRESSION if level is None else level, limit, progress
            )
        if compression is Compression.SNAPPY:
            return _xerial_compress(data, limit, progress)
        if compression is Compression.LZ4:
            lz4_level = None if level in (None, LZ4_DEFAULT_LEVEL) else level
            return lz4_frame.compress(
                data,
                legacy_header_checksum=magic == MAGIC_V0,
                level=lz4_level,
                max_size=limit,
                progress=progress,
            )
        if compression is Compression.ZSTD:
            return _zstd_compress(data, ZSTD_DEFAULT_LEVEL if level is None else level, limit, progress)
    except CompressionError:
        raise
    except (cramjam.CompressionError, zlib.error, zstandard.ZstdError, ValueError) as exc:
        # ValueError: a level out of range
        raise CompressionError(f"{compression.name} compression failed: {exc}") from None
    raise UnsupportedCompressionError(f"unknown compression {compression!r}")


def decompress(
    compression: Compression,
    data: Buffer,
    magic: int = MAGIC_V2,
    max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    *,
    progress: Progress | None = None,
) -> bytearray:
    """Decompress ``data`` (the payload of a batch of ``magic``), holding at most ``max_size`` bytes."""
    check_codec_allowed(compression, magic)
    try:
        if compression is Compression.NONE:
            return _copy(data, max_size, progress, DecompressedSizeError)
        if compression is Compression.GZIP:
            return _gzip_decompress(data, max_size, progress)
        if compression is Compression.SNAPPY:
            return _snappy_decompress(data, max_size, progress)
        if compression is Compression.LZ4:
            return lz4_frame.decompress(
                data, max_size, accept_legacy_header_checksum=magic == MAGIC_V0, progress=progress
            )
        if compression is Compression.ZSTD:
            return _zstd_decompress(data, max_size, progress)
    except (cramjam.DecompressionError, zstandard.ZstdError) as exc:
        raise CompressionError(f"corrupt {compression.name} data: {exc}") from None
    raise UnsupportedCompressionError(f"unknown compression {compression!r}")


def _copy(
    data: Buffer, max_size: int, progress: Progress | None, too_large: type[CompressionError]
) -> bytearray:
    view = memoryview(data)
    if len(view) > max_size:
        raise too_large(f"data of {len(view)} bytes exceeds the limit of {max_size} bytes")
    out = bytearray()
    for start in range(0, len(view), CHUNK_SIZE):
        chunk = view[start : start + CHUNK_SIZE]
        out += chunk
        if progress is not None:
            progress(len(chunk))
    return out


def _check_size(out: bytearray, max_size: int, what: str, too_large: type[CompressionError]) -> None:
    if len(out) > max_size:
        raise too_large(f"{what} data exceeds the limit of {max_size} bytes")


def _gzip_compress(data: Buffer, level: int, max_size: int, progress: Progress | None) -> bytearray:
    # zlib (the stdlib's, which releases the GIL as it deflates) wrote gzip a third faster than
    # cramjam at Kafka's default level when measured.
    deflater = zlib.compressobj(level, zlib.DEFLATED, _GZIP_WBITS)
    return _stream_compressed(data, deflater.compress, deflater.flush, max_size, progress, "gzip")


def _gzip_decompress(data: Buffer, max_size: int, progress: Progress | None) -> bytearray:
    """Java's GZIPInputStream reads concatenated members; so do we, each from where the last ended."""
    view = memoryview(data)
    out = bytearray()
    pos = 0
    try:
        while True:
            inflater = zlib.decompressobj(_GZIP_WBITS)
            given = _GZIP_FIRST_INPUT
            while not inflater.eof:
                pending: Buffer = inflater.unconsumed_tail  # input held back by the output bound last time
                if not pending:
                    pending = view[pos : pos + given]
                    pos += len(pending)
                    given = min(given * 2, _GZIP_MAX_INPUT)
                    if not pending:
                        raise CompressionError("gzip data ends before the end of its stream")
                # zlib's max_length stops at a chunk (and at the limit) instead of inflating a bomb whole
                chunk = inflater.decompress(pending, min(CHUNK_SIZE, max_size - len(out) + 1))
                out += chunk
                _check_size(out, max_size, "decompressed gzip", DecompressedSizeError)
                if progress is not None and chunk:
                    progress(len(chunk))
            pos -= len(inflater.unused_data)  # the next member starts there
            if pos >= len(view):
                return out
    except zlib.error as exc:
        raise CompressionError(f"corrupt gzip data: {exc}") from None


def _snappy_decompress(data: Buffer, max_size: int, progress: Progress | None) -> bytearray:
    view = memoryview(data)
    out = bytearray()
    if view[: len(XERIAL_MAGIC)] != XERIAL_MAGIC:
        _snappy_raw_block(view, out, max_size, progress)
        return out
    if len(view) < _XERIAL_HEADER.size:
        raise CompressionError("xerial snappy header is truncated")
    pos = _XERIAL_HEADER.size
    while pos < len(view):
        if len(view) - pos < 4:
            raise CompressionError("xerial snappy block length is truncated")
        (length,) = _BLOCK_LENGTH.unpack_from(view, pos)
        pos += 4
        if length < 0 or length > len(view) - pos:
            raise CompressionError(f"xerial snappy block length {length} is impossible")
        _snappy_raw_block(view[pos : pos + length], out, max_size, progress)
        pos += length
    return out


def _snappy_raw_block(block: memoryview, out: bytearray, max_size: int, progress: Progress | None) -> None:
    """Decompress one raw snappy block onto the end of ``out``."""
    # The raw format states its decompressed length up front: check it before anything is allocated.
    declared = int(cramjam.snappy.decompress_raw_len(block))
    if declared > max_size - len(out):
        raise DecompressedSizeError(f"decompressed snappy data exceeds the limit of {max_size} bytes")
    start = len(out)
    out += bytes(declared)  # calloc'ed: the pages are touched once, by the copy that writes them
    with memoryview(out) as whole:
        written = int(cramjam.snappy.decompress_raw_into(block, whole[start:]))
    if written != declared:
        raise CompressionError(f"snappy block declares {declared} bytes and holds {written}")
    if progress is not None:
        progress(written)


def _xerial_compress(data: Buffer, max_size: int, progress: Progress | None) -> bytearray:
    view = memoryview(data)
    out = bytearray(_XERIAL_HEADER.pack(XERIAL_MAGIC, _XERIAL_VERSION, _XERIAL_COMPATIBLE_VERSION))
    for start in range(0, len(view), _XERIAL_BLOCK_SIZE):
        chunk = view[start : start + _XERIAL_BLOCK_SIZE]
        block = cramjam.snappy.compress_raw(chunk)
        out += _BLOCK_LENGTH.pack(len(block))
        out += block
        _check_size(out, max_size, "compressed snappy", CompressedSizeError)
        if progress is not None:
            progress(len(chunk))
    return out


def _zstd_compress(data: Buffer, level: int, max_size: int, progress: Progress | None) -> bytearray:
    # The frame states its content size, as a one-shot compression writes it, so a reader can
    # check its bound before decompressing.
    compressor = zstandard.ZstdCompressor(level=level).compressobj(size=len(memoryview(data)))
    return _stream_compressed(data, compressor.compress, compressor.flush, max_size, progress, "zstd")


def _stream_compressed(
    data: Buffer,
    compress_chunk: Callable[[memoryview], bytes],
    flush: Callable[[], bytes],
    max_size: int,
    progress: Progress | None,
    codec: str,
) -> bytearray:
    """``data`` through a streaming compressor a chunk at a time, stopping once past ``max_size``."""
    view = memoryview(data)
    out = bytearray()
    for start in range(0, len(view), CHUNK_SIZE):
        chunk = view[start : start + CHUNK_SIZE]
        out += compress_chunk(chunk)
        _check_size(out, max_size, f"compressed {codec}", CompressedSizeError)
        if progress is not None:
            progress(len(chunk))
    out += flush()
    _check_size(out, max_size, f"compressed {codec}", CompressedSizeError)
    return out


def _zstd_decompress(data: Buffer, max_size: int, progress: Progress | None) -> bytearray:
    view = memoryview(data)
    declared = _zstd_declared_size(view)
    if declared is not None and declared > max_size:
        raise DecompressedSizeError(f"zstd frames declare {declared} bytes, over the limit of {max_size}")
    # Java's zstd-jni streams frames without a content size, so often only decompressing tells.
    reader = zstandard.ZstdDecompressor().stream_reader(view, read_across_frames=True)
    out = bytearray()
    while chunk := reader.read(min(CHUNK_SIZE, max_size - len(out) + 1)):
        out += chunk
        _check_size(out, max_size, "decompressed zstd", DecompressedSizeError)
        if progress is not None:
            progress(len(chunk))
    return out


def _zstd_declared_size(view: memoryview) -> int | None:
    """The content size the zstd frames in ``view`` declare (None if one declares none), having checked
    that ``view`` is whole frames and nothing else (RFC 8878): the decompressing reader stops quietly
    at the end of its input, so a frame cut short would otherwise read as a shorter one."""
    if len(view) < 4 or int.from_bytes(view[:4], "little") != _ZSTD_FRAME_MAGIC:
        raise CompressionError("zstd data does not start with a zstd frame")
    total: int | None = 0
    pos = 0
    while pos < len(view):
        if len(view) - pos < 4:
            raise CompressionError("zstd data ends inside a frame's magic number")
        magic = int.from_bytes(view[pos : pos + 4], "little")
        if magic & ~0xF == _ZSTD_SKIPPABLE_MAGIC:
            if len(view) - pos < 8:
                raise CompressionError("zstd skippable frame header is truncated")
            pos += 8 + int.from_bytes(view[pos + 4 : pos + 8], "little")
        elif magic == _ZSTD_FRAME_MAGIC:
            pos, size = _zstd_frame_end(view, pos)
            total = None if total is None or size is None else total + size
        else:
            raise CompressionError("zstd data holds bytes that are not a zstd frame")
        if pos > len(view):
            raise CompressionError("zstd data ends inside a frame")
    return total


def _zstd_frame_end(view: memoryview, pos: int) -> tuple[int, int | None]:
    """Where the zstd frame at ``pos`` ends, and its Frame_Content_Size if its header carries one."""
    if len(view) - pos < 5:
        raise CompressionError("zstd frame header is truncated")
    descriptor = view[pos + 4]
    single_segment = bool(descriptor & 0x20)
    size_field = (0, 2, 4, 8)[descriptor >> 6] or (1 if single_segment else 0)
    content_at = pos + 5 + (0 if single_segment else 1) + (0, 1, 2, 4)[descriptor & 0x03]
    pos = content_at + size_field
    if len(view) < pos:
        raise CompressionError("zstd frame header is truncated")
    size = int.from_bytes(view[content_at:pos], "little") if size_field else None
    if size is not None and size_field == 2:
        size += 256  # a two-byte field stores the size minus 256 (RFC 8878, 3.1.1.1.4)
    while True:
        if len(view) - pos < 3:
            raise CompressionError("zstd frame ends before its last block")
        block = int.from_bytes(view[pos : pos + 3], "little")
        block_type = (block >> 1) & 0x03
        if block_type == _ZSTD_RESERVED_BLOCK:
            raise CompressionError("zstd block of the reserved type")
        pos += 3 + (1 if block_type == 1 else block >> 3)  # an RLE block stores one byte
        if block & 1:  # Last_Block
            break
    if descriptor & 0x04:
        pos += 4  # Content_Checksum
    return pos, size
