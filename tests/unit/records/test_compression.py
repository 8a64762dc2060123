"""Codecs: round-trips, interoperability with other writers, Kafka's framing quirks, and bounded output."""

from __future__ import annotations

import contextlib
import gzip
import random
import struct
import tracemalloc
import zlib
from collections.abc import Callable

import cramjam
import pytest
from aiokafka import codec as aiokafka_codec
from hypothesis import given, settings
from hypothesis import strategies as st

from odradek.protocol.codec_error import CodecError
from odradek.protocol.records import (
    CompressedSizeError,
    Compression,
    CompressionError,
    DecompressedSizeError,
    UnsupportedCompressionError,
    compress,
    compression,
    decompress,
)
from odradek.protocol.records.compression import CHUNK_SIZE, Buffer
from odradek.protocol.records.lz4_frame import FRAME_MAGIC, xxh32

CODECS = list(Compression)
DATA = st.binary(max_size=3000) | st.binary(max_size=20).map(lambda b: b * 500)


@settings(max_examples=40)
@given(st.sampled_from(CODECS), DATA, st.sampled_from([0, 1, 2]))
def test_round_trip(codec: Compression, data: bytes, magic: int) -> None:
    if codec is Compression.ZSTD and magic < 2:
        return
    assert decompress(codec, compress(codec, data, magic), magic) == data


@pytest.mark.parametrize("magic", [0, 1])
def test_zstd_rejected_before_v2(magic: int) -> None:
    with pytest.raises(UnsupportedCompressionError, match="zstd"):
        compress(Compression.ZSTD, b"x", magic)
    with pytest.raises(UnsupportedCompressionError, match="zstd"):
        decompress(Compression.ZSTD, compress(Compression.ZSTD, b"x"), magic)


def test_large_payload_every_codec() -> None:
    data = bytes(range(256)) * 4096 + b"tail"  # 1 MiB, crosses many lz4/xerial blocks
    for codec in CODECS:
        assert decompress(codec, compress(codec, data)) == data


def test_gzip_reads_stdlib_and_concatenated_members() -> None:
    data = b"gzip me " * 100
    assert decompress(Compression.GZIP, gzip.compress(data)) == data
    assert decompress(Compression.GZIP, gzip.compress(data) + gzip.compress(b"more")) == data + b"more"
    assert gzip.decompress(compress(Compression.GZIP, data)) == data


def test_snappy_xerial_framing_written_and_read_both_ways() -> None:
    data = b"snappy " * 20000
    ours = compress(Compression.SNAPPY, data)
    assert ours.startswith(b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01")
    assert aiokafka_codec.snappy_decode(ours) == data
    # Java's xerial framing (via aiokafka's writer), and librdkafka's raw snappy.
    assert decompress(Compression.SNAPPY, aiokafka_codec.snappy_encode(data, xerial_compatible=True)) == data
    assert decompress(Compression.SNAPPY, bytes(cramjam.snappy.compress_raw(data))) == data


def test_snappy_empty_xerial_stream() -> None:
    assert decompress(Compression.SNAPPY, b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)) == b""


def test_lz4_interoperates_with_standard_frames() -> None:
    data = b"lz4 data " * 30000
    assert decompress(Compression.LZ4, aiokafka_codec.lz4_encode(data)) == data
    assert aiokafka_codec.lz4_decode(compress(Compression.LZ4, data)) == data
    assert bytes(cramjam.lz4.decompress(compress(Compression.LZ4, data, 1))) == data


def _legacy_checksum(frame: bytes) -> bytes:
    """Rewrite a standard frame's descriptor checksum the way Kafka 0.8/0.9 computed it."""
    descriptor_end = 6 + (8 if frame[4] & 0x08 else 0)
    checksum = (xxh32(frame[:descriptor_end]) >> 8) & 0xFF
    return frame[:descriptor_end] + bytes([checksum]) + frame[descriptor_end + 1 :]


def test_xxh32_known_vectors() -> None:
    assert xxh32(b"") == 0x02CC5D05
    assert xxh32(b"a") == 0x550D7456
    assert xxh32(b"abc") == 0x32D153FF
    assert xxh32(b"Nobody inspects the spammish repetition") == 0xE2293B2F


def test_lz4_legacy_header_checksum_for_magic_0() -> None:
    data = b"old kafka " * 1000
    ours = compress(Compression.LZ4, data, 0)
    assert ours == _legacy_checksum(compress(Compression.LZ4, data, 1))
    assert decompress(Compression.LZ4, ours, 0) == data
    # Magic 0 also accepts a correct checksum (newer clients writing magic 0)...
    assert decompress(Compression.LZ4, compress(Compression.LZ4, data, 1), 0) == data
    # ...while magic 1 and 2 insist on the spec's checksum.
    for magic in (1, 2):
        with pytest.raises(CompressionError, match="checksum"):
            decompress(Compression.LZ4, ours, magic)
    standard = aiokafka_codec.lz4_encode(data)
    assert decompress(Compression.LZ4, _legacy_checksum(standard), 0) == data


def test_lz4_rejects_dependent_blocks() -> None:
    linked = bytes(cramjam.lz4.compress(b"linked " * 100))  # cramjam links blocks by default
    with pytest.raises(UnsupportedCompressionError, match="dependent"):
        decompress(Compression.LZ4, linked)


@pytest.mark.parametrize("codec", [c for c in CODECS if c is not Compression.NONE])
def test_bomb_is_capped(codec: Compression) -> None:
    bomb = compress(codec, bytes(4 * 1024 * 1024))
    assert len(bomb) < 200_000
    with pytest.raises(DecompressedSizeError):
        decompress(codec, bomb, max_size=1024 * 1024)
    assert len(decompress(codec, bomb, max_size=4 * 1024 * 1024)) == 4 * 1024 * 1024


def test_zstd_without_content_size_is_capped() -> None:
    # Java's zstd-jni streams frames without a content size; the cap must hold without one too.
    compressor = cramjam.zstd.Compressor()
    compressor.compress(bytes(3 * 1024 * 1024))
    frame = bytes(compressor.finish())
    with pytest.raises(DecompressedSizeError):
        decompress(Compression.ZSTD, frame, max_size=1024 * 1024)
    assert decompress(Compression.ZSTD, frame) == bytes(3 * 1024 * 1024)


def test_snappy_raw_declared_length_checked_before_allocation() -> None:
    lying = b"\xff\xff\xff\xff\x07" + b"\x00" * 10  # declares ~2 GiB of output
    with pytest.raises(DecompressedSizeError):
        decompress(Compression.SNAPPY, lying)


@settings(max_examples=150)
@given(st.sampled_from(CODECS[1:]), st.binary(max_size=200), st.sampled_from([0, 2]))
def test_hostile_bytes_raise_only_codec_errors(codec: Compression, data: bytes, magic: int) -> None:
    with contextlib.suppress(CodecError):
        decompress(codec, data, magic if codec is not Compression.ZSTD else 2, max_size=1 << 20)


@settings(max_examples=150)
@given(st.sampled_from(CODECS[1:]), st.data())
def test_mutated_frames_raise_only_codec_errors(codec: Compression, data: st.DataObject) -> None:
    frame = bytearray(compress(codec, b"some compressible payload " * 50))
    for _ in range(data.draw(st.integers(1, 4))):
        frame[data.draw(st.integers(0, len(frame) - 1))] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(frame)))
    for candidate in (bytes(frame), bytes(frame[:cut])):
        with contextlib.suppress(CodecError):
            decompress(codec, candidate, max_size=1 << 20)


def test_frame_magic_constant() -> None:
    assert compress(Compression.LZ4, b"").startswith(FRAME_MAGIC)


def _peak_traced_bytes(work: Callable[[], object]) -> int:
    """The most memory Python's allocators held at once while ``work`` ran, above what it held before."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before, _ = tracemalloc.get_traced_memory()
        work()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak - before


@pytest.mark.parametrize("codec", [c for c in CODECS if c is not Compression.NONE])
def test_decompressed_output_is_held_once_not_copied_at_the_end(codec: Compression) -> None:
    size = 16 * 1024 * 1024
    payload = compress(codec, bytes(range(256)) * (size // 256))
    # Twice the output (a final bytes() or join of the parts) doubled what a rewrite holds.
    assert _peak_traced_bytes(lambda: decompress(codec, payload)) < size * 1.4


def test_a_zstd_frame_without_content_size_is_refused_within_a_chunk_of_the_limit() -> None:
    # Java's zstd-jni streams frames without a content size: only decompressing tells the size, and
    # the output must stop at the limit, not be inflated whole first (a GiB of zeros here).
    compressor = cramjam.zstd.Compressor()
    for _ in range(64):
        compressor.compress(bytes(16 * 1024 * 1024))
    frame = bytes(compressor.finish())
    assert _zstd_frame_content_size_flag(frame) == 0 and len(frame) < 200_000
    limit = 4 * 1024 * 1024

    def refused() -> None:
        with pytest.raises(DecompressedSizeError):
            decompress(Compression.ZSTD, frame, max_size=limit)

    assert _peak_traced_bytes(refused) < limit + 3 * CHUNK_SIZE


def _zstd_frame_content_size_flag(frame: bytes) -> int:
    return frame[4] >> 6


def test_gzip_members_are_read_in_one_pass_over_the_payload(monkeypatch: pytest.MonkeyPatch) -> None:
    # 50,000 empty members in a megabyte: each member's leftover input was copied whole, quadratically.
    payload = gzip.compress(b"", mtime=0) * 50_000
    handed_back: list[int] = []
    real = zlib.decompressobj

    class CountingInflater:
        def __init__(self, *args: int) -> None:
            self._inflater = real(*args)

        def decompress(self, data: Buffer, max_length: int = 0) -> bytes:
            out = self._inflater.decompress(data, max_length)
            if self._inflater.eof:
                handed_back.append(len(self._inflater.unused_data))
            return out

        def __getattr__(self, name: str) -> object:
            return getattr(self._inflater, name)

    monkeypatch.setattr(compression.zlib, "decompressobj", CountingInflater)
    assert decompress(Compression.GZIP, payload) == b""
    assert len(handed_back) == 50_000
    assert sum(handed_back) <= 2 * len(payload)


@pytest.mark.parametrize("codec", [c for c in CODECS if c is not Compression.NONE])
def test_compression_past_the_output_limit_stops_within_a_chunk(codec: Compression) -> None:
    incompressible = random.Random(7).randbytes(24 * 1024 * 1024)
    consumed: list[int] = []
    with pytest.raises(CompressedSizeError):
        compress(codec, incompressible, max_size=1024 * 1024, progress=consumed.append)
    assert sum(consumed) <= 1024 * 1024 + 2 * CHUNK_SIZE


@pytest.mark.parametrize("codec", CODECS)
def test_a_progress_hook_that_raises_stops_a_codec_between_chunks(codec: Compression) -> None:
    data = bytes(range(256)) * (64 * 1024)  # 16 MiB
    payload = compress(codec, data)
    calls: list[int] = []

    def stop_after_two(size: int) -> None:
        calls.append(size)
        if len(calls) == 2:
            raise InterruptedError("stopping")

    for work in (
        lambda: compress(codec, data, progress=stop_after_two),
        lambda: decompress(codec, payload, progress=stop_after_two),
    ):
        calls.clear()
        with pytest.raises(InterruptedError):
            work()
        assert len(calls) == 2
