"""The LZ4 frame format as Kafka uses it: independent blocks, written with 64 KiB blocks and no checksums.

Blocks go through cramjam's block codec (python-lz4's LZ4HC for a level other than the default); the
frame around them is ours, because Kafka 0.8/0.9 wrote a frame descriptor checksum over the magic
number as well (KAFKA-3160), which no standard lz4 library writes or accepts. Block and content
checksums are skipped on read, as Kafka's own reader does: the batch CRC already covers the
compressed bytes.
"""

from __future__ import annotations

import struct
import sys
from collections.abc import Callable

import cramjam
import lz4.block

from odradek.protocol.records.errors import (
    CompressedSizeError,
    CompressionError,
    DecompressedSizeError,
    UnsupportedCompressionError,
)

Buffer = bytes | bytearray | memoryview

FRAME_MAGIC = b"\x04\x22\x4d\x18"

_FLG_VERSION_MASK = 0xC0
_FLG_VERSION_01 = 0x40
_FLG_BLOCK_INDEPENDENCE = 0x20
_FLG_BLOCK_CHECKSUM = 0x10
_FLG_CONTENT_SIZE = 0x08
_FLG_CONTENT_CHECKSUM = 0x04
_FLG_DICTIONARY_ID = 0x01
_BLOCK_MAX_SIZES = {4: 64 * 1024, 5: 256 * 1024, 6: 1024 * 1024, 7: 4 * 1024 * 1024}
_WRITE_BD_CODE = 4  # 64 KiB blocks, as Kafka's KafkaLZ4BlockOutputStream writes
_UNCOMPRESSED_BLOCK_FLAG = 0x80000000
_BLOCK_SIZE = struct.Struct("<I")


def compress(
    data: Buffer,
    legacy_header_checksum: bool = False,
    level: int | None = None,
    *,
    max_size: int = sys.maxsize,
    progress: Callable[[int], None] | None = None,
) -> bytearray:
    """One LZ4 frame holding ``data``; ``legacy_header_checksum`` writes the Kafka 0.8/0.9 checksum.
    ``level`` None uses the fast compressor; a level (1-17) the high-compression one, as Kafka's
    Lz4BlockOutputStream does for any level but its default. CompressedSizeError once the frame passes
    ``max_size``; ``progress`` is called with each block's input size (and may raise to stop)."""
    view = memoryview(data)
    flg = _FLG_VERSION_01 | _FLG_BLOCK_INDEPENDENCE
    bd = _WRITE_BD_CODE << 4
    out = bytearray(FRAME_MAGIC)
    out += bytes((flg, bd))
    checksummed = out if legacy_header_checksum else out[4:]
    out.append((xxh32(bytes(checksummed)) >> 8) & 0xFF)
    block_size = _BLOCK_MAX_SIZES[_WRITE_BD_CODE]
    for start in range(0, len(view), block_size):
        chunk = view[start : start + block_size]
        if level is None:
            block = memoryview(cramjam.lz4.compress_block(chunk, store_size=False))
        else:  # cramjam's block codec has no high-compression mode (it ignores the level)
            block = memoryview(
                lz4.block.compress(chunk, mode="high_compression", compression=level, store_size=False)
            )
        if len(block) >= len(chunk):
            # Incompressible input: store it, flagged as uncompressed, instead of growing it.
            out += _BLOCK_SIZE.pack(len(chunk) | _UNCOMPRESSED_BLOCK_FLAG)
            out += chunk
        else:
            out += _BLOCK_SIZE.pack(len(block))
            out += block
        if len(out) > max_size:
            raise CompressedSizeError(f"compressed lz4 data exceeds the limit of {max_size} bytes")
        if progress is not None:
            progress(len(chunk))
    out += _BLOCK_SIZE.pack(0)  # end mark
    if len(out) > max_size:
        raise CompressedSizeError(f"compressed lz4 data exceeds the limit of {max_size} bytes")
    return out


def decompress(
    data: Buffer,
    max_size: int,
    accept_legacy_header_checksum: bool = False,
    *,
    progress: Callable[[int], None] | None = None,
) -> bytearray:
    """The content of the LZ4 frame at the start of ``data``, at most ``max_size`` bytes of it;
    ``progress`` is called with each block's output size (and may raise to stop)."""
    view = memoryview(data)
    pos, block_max, block_checksum, content_checksum = _read_frame_header(view, accept_legacy_header_checksum)
    out = bytearray()
    scratch = bytearray(block_max)
    while True:
        if len(view) - pos < 4:
            raise CompressionError("lz4 frame ends before its end mark")
        (size,) = _BLOCK_SIZE.unpack_from(view, pos)
        pos += 4
        if size == 0:
            break
        stored = bool(size & _UNCOMPRESSED_BLOCK_FLAG)
        size &= ~_UNCOMPRESSED_BLOCK_FLAG
        if size > block_max or size > len(view) - pos:
            raise CompressionError(f"lz4 block size {size} is impossible")
        block = view[pos : pos + size]
        pos += size + (4 if block_checksum else 0)
        if stored:
            chunk = block
        else:
            chunk = memoryview(scratch)[: int(cramjam.lz4.decompress_block_into(block, scratch))]
        produced = len(chunk)
        if produced > max_size - len(out):
            raise DecompressedSizeError(f"decompressed lz4 data exceeds the limit of {max_size} bytes")
        out += chunk
        if progress is not None:
            progress(produced)
    if content_checksum and len(view) - pos < 4:
        raise CompressionError("lz4 frame ends before its content checksum")
    return out


def _read_frame_header(view: memoryview, accept_legacy: bool) -> tuple[int, int, bool, bool]:
    """Validate the frame descriptor; returns (position of the first block, block max size, flags)."""
    if len(view) < 7:
        raise CompressionError("lz4 frame header is truncated")
    if view[:4] != FRAME_MAGIC:
        raise CompressionError("lz4 data does not start with an lz4 frame")
    flg, bd = view[4], view[5]
    if flg & _FLG_VERSION_MASK != _FLG_VERSION_01:
        raise UnsupportedCompressionError(f"lz4 frame version bits {flg >> 6} are not supported")
    if not flg & _FLG_BLOCK_INDEPENDENCE:
        # Kafka's reader refuses linked blocks too; decoding them needs the previous block as dictionary.
        raise UnsupportedCompressionError("lz4 frames with dependent blocks are not supported")
    if flg & _FLG_DICTIONARY_ID:
        raise UnsupportedCompressionError("lz4 frames with a dictionary id are not supported")
    block_max = _BLOCK_MAX_SIZES.get((bd >> 4) & 0x07)
    if block_max is None or bd & 0x8F:
        raise CompressionError(f"lz4 frame has an invalid block descriptor {bd:#04x}")
    descriptor_end = 6 + (8 if flg & _FLG_CONTENT_SIZE else 0)
    if len(view) < descriptor_end + 1:
        raise CompressionError("lz4 frame header is truncated")
    checksum = view[descriptor_end]
    if checksum != (xxh32(bytes(view[4:descriptor_end])) >> 8) & 0xFF and not (
        accept_legacy and checksum == (xxh32(bytes(view[:descriptor_end])) >> 8) & 0xFF
    ):
        raise CompressionError("lz4 frame descriptor checksum does not match")
    return descriptor_end + 1, block_max, bool(flg & _FLG_BLOCK_CHECKSUM), bool(flg & _FLG_CONTENT_CHECKSUM)


_PRIME1 = 2654435761
_PRIME2 = 2246822519
_PRIME3 = 3266489917
_PRIME4 = 668265263
_PRIME5 = 374761393
_MASK = 0xFFFFFFFF


def xxh32(data: bytes, seed: int = 0) -> int:
    """XXH32 of ``data``; used only on the few bytes of a frame descriptor, so plain Python is enough."""
    length = len(data)
    pos = 0
    if length >= 16:
        acc = [
            (seed + _PRIME1 + _PRIME2) & _MASK,
            (seed + _PRIME2) & _MASK,
            seed & _MASK,
            (seed - _PRIME1) & _MASK,
        ]
        while pos + 16 <= length:
            for lane in range(4):
                (word,) = struct.unpack_from("<I", data, pos)
                acc[lane] = (_rotl((acc[lane] + word * _PRIME2) & _MASK, 13) * _PRIME1) & _MASK
                pos += 4
        h = (_rotl(acc[0], 1) + _rotl(acc[1], 7) + _rotl(acc[2], 12) + _rotl(acc[3], 18)) & _MASK
    else:
        h = (seed + _PRIME5) & _MASK
    h = (h + length) & _MASK
    while pos + 4 <= length:
        (word,) = struct.unpack_from("<I", data, pos)
        h = (_rotl((h + word * _PRIME3) & _MASK, 17) * _PRIME4) & _MASK
        pos += 4
    while pos < length:
        h = (_rotl((h + data[pos] * _PRIME5) & _MASK, 11) * _PRIME1) & _MASK
        pos += 1
    h ^= h >> 15
    h = (h * _PRIME2) & _MASK
    h ^= h >> 13
    h = (h * _PRIME3) & _MASK
    h ^= h >> 16
    return h


def _rotl(value: int, bits: int) -> int:
    return ((value << bits) | (value >> (32 - bits))) & _MASK
