"""Hostile input: random and mutated bytes into every decoder raise only CodecError subclasses, and
length fields of 2^31-1 never make a decoder allocate more than the buffer holds."""

from __future__ import annotations

import contextlib
import struct
import tracemalloc
import zlib
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from odradek.protocol.codec_error import CodecError
from odradek.protocol.records import (
    Compression,
    Record,
    RecordBatch,
    RecordBatchHeader,
    build_message_set,
    build_record_batch,
    compress,
    decode_message_set,
    down_convert_batches,
    iter_batch_headers,
    iter_record_batches,
    split_complete_batches,
    up_convert_message_set,
)
from odradek.protocol.records.header import HEADER_STRUCT, write_crc
from odradek.protocol.records.varint import write_varint

MAX_INT32 = 2**31 - 1
LIMIT = 1 << 20  # a small decompression cap keeps the fuzzing fast

RECORDS = [
    Record(0, 10, b"key", b"value" * 8, (("h1", b"v1"), ("h2", None))),
    Record(1, 11, None, b"second"),
    Record(3, 9, b"k", None, (("x", b""),)),
]


def decoders(buf: bytes) -> list[Callable[[], object]]:
    return [
        lambda: RecordBatchHeader.read(buf),
        lambda: list(iter_batch_headers(buf)),
        lambda: split_complete_batches(buf),
        lambda: RecordBatch.decode(buf, verify_crc=False, max_decompressed_size=LIMIT),
        lambda: RecordBatch.decode(buf, max_decompressed_size=LIMIT),
        lambda: list(iter_record_batches(buf, verify_crc=False, max_decompressed_size=LIMIT)),
        lambda: decode_message_set(buf, verify_crc=False, max_decompressed_size=LIMIT),
        lambda: decode_message_set(buf, max_decompressed_size=LIMIT),
        lambda: up_convert_message_set(buf, verify_crc=False, max_decompressed_size=LIMIT),
        lambda: down_convert_batches(buf, 1, verify_crc=False, max_decompressed_size=LIMIT),
        lambda: down_convert_batches(buf, 0, verify_crc=False, max_decompressed_size=LIMIT),
    ]


def only_codec_errors(buf: bytes) -> None:
    for decode in decoders(buf):
        with contextlib.suppress(CodecError):
            decode()


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300))
def test_random_bytes(data: bytes) -> None:
    only_codec_errors(data)


@st.composite
def mutated(draw: st.DrawFn, original: bytes) -> bytes:
    buf = bytearray(original)
    for _ in range(draw(st.integers(1, 6))):
        buf[draw(st.integers(0, len(buf) - 1))] = draw(st.integers(0, 255))
    if draw(st.booleans()):
        buf = buf[: draw(st.integers(0, len(buf)))]
    return bytes(buf)


V2_SAMPLES = [build_record_batch(RECORDS, compression=codec) for codec in Compression]
LEGACY_SAMPLES = [
    build_message_set(RECORDS, magic=magic, compression=codec)
    for magic in (0, 1)
    for codec in (Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.LZ4)
]


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(V2_SAMPLES + LEGACY_SAMPLES).flatmap(mutated), st.booleans())
def test_mutated_valid_input(buf: bytes, fix_crc: bool) -> None:
    if fix_crc and len(buf) >= 61:
        # Recompute the v2 CRC so mutations reach record decoding with verification on, too.
        fixed = bytearray(buf)
        write_crc(fixed, 0, len(fixed))
        buf = bytes(fixed)
    only_codec_errors(buf)


@st.composite
def mutated_inner_sets(draw: st.DrawFn) -> bytes:
    """A well-formed compressed wrapper around a mutated inner message set."""
    magic = draw(st.sampled_from([0, 1]))
    codec = draw(st.sampled_from([Compression.GZIP, Compression.SNAPPY, Compression.LZ4]))
    inner = draw(mutated(build_message_set(RECORDS, magic=magic)))
    return wrapper(magic, codec, compress(codec, inner, magic))


@settings(max_examples=150)
@given(mutated_inner_sets())
def test_mutated_inner_message_sets(buf: bytes) -> None:
    only_codec_errors(buf)


@st.composite
def mutated_v2_payloads(draw: st.DrawFn) -> bytes:
    """A batch with a valid header and CRC around mutated (then compressed) record bytes."""
    codec = draw(st.sampled_from(list(Compression)))
    plain = build_record_batch(RECORDS)
    body = draw(mutated(plain[61:]))
    return v2_with_payload(compress(codec, body), count=3, attributes=int(codec))


@settings(max_examples=200)
@given(mutated_v2_payloads())
def test_mutated_records_inside_valid_batches(buf: bytes) -> None:
    only_codec_errors(buf)


def v2_with_payload(payload: bytes, count: int, attributes: int = 0) -> bytes:
    buf = bytearray(61) + payload
    HEADER_STRUCT.pack_into(buf, 0, 0, 49 + len(payload), 0, 2, 0, attributes, 0, 0, 0, -1, -1, -1, count)
    write_crc(buf, 0, len(buf))
    return bytes(buf)


def wrapper(magic: int, codec: Compression, value: bytes) -> bytes:
    body = struct.pack(">bb", magic, int(codec)) + (struct.pack(">q", 0) if magic else b"")
    body += struct.pack(">i", -1) + struct.pack(">i", len(value)) + value
    return struct.pack(">qiI", 0, 4 + len(body), zlib.crc32(body)) + body


def varint(value: int) -> bytes:
    out = bytearray()
    write_varint(out, value)
    return bytes(out)


def record_bytes(*fields: bytes) -> bytes:
    body = b"".join(fields)
    return varint(len(body)) + body


def xerial(block: bytes) -> bytes:
    return b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1) + block


HUGE_LENGTH_CASES = {
    "batch_length": struct.pack(">qiib", 0, MAX_INT32, 0, 2) + bytes(100),
    "records_count": v2_with_payload(record_bytes(b"\x00\x00\x00\x01\x01\x00"), count=MAX_INT32),
    "record_length": v2_with_payload(varint(MAX_INT32) + bytes(20), count=1),
    "key_length": v2_with_payload(record_bytes(b"\x00\x00\x00", varint(MAX_INT32), bytes(8)), count=1),
    "value_length": v2_with_payload(record_bytes(b"\x00\x00\x00\x01", varint(MAX_INT32), bytes(8)), count=1),
    "header_count": v2_with_payload(
        record_bytes(b"\x00\x00\x00\x01\x01", varint(MAX_INT32), bytes(8)), count=1
    ),
    "header_key_length": v2_with_payload(
        record_bytes(b"\x00\x00\x00\x01\x01\x02", varint(MAX_INT32), bytes(8)), count=1
    ),
    "xerial_block_length": v2_with_payload(xerial(struct.pack(">i", MAX_INT32) + bytes(8)), 1, 2),
    "snappy_declared_length": v2_with_payload(b"\xfe\xff\xff\xff\x07" + bytes(8), 1, 2),
    "lz4_block_size": v2_with_payload(
        compress(Compression.LZ4, b"")[:7] + struct.pack("<I", MAX_INT32) + bytes(8), 1, 3
    ),
    "message_size": struct.pack(">qiIbb", 0, MAX_INT32, 0, 1, 0) + bytes(100),
    "message_key_length": wrapper(1, Compression.NONE, b"")[:-8] + struct.pack(">ii", MAX_INT32, 0),
    "message_value_length": wrapper(0, Compression.NONE, b"")[:-4] + struct.pack(">i", MAX_INT32),
}


@pytest.mark.parametrize("name", sorted(HUGE_LENGTH_CASES))
def test_huge_length_fields_do_not_allocate(name: str) -> None:
    buf = HUGE_LENGTH_CASES[name]
    tracemalloc.start()
    try:
        for decode in decoders(buf):
            with contextlib.suppress(CodecError):
                decode()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 256 * 1024, f"{name}: peak {peak} bytes for a {len(buf)}-byte input"
