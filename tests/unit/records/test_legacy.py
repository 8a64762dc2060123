"""MessageSet v0/v1: round-trips, both directions against kafka-python (aiokafka for snappy/lz4)."""

from __future__ import annotations

import struct
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from odradek.protocol.records import (
    Compression,
    CorruptRecordError,
    Record,
    TimestampType,
    UnsupportedCompressionError,
    build_message_set,
    compress,
    decode_message_set,
    split_complete_batches,
)
from tests.support.requirements import missing

from .kafka_oracle import KAFKA_PYTHON_CODECS, legacy_set, read_records, skip_reason
from .strategies import legacy_records

LEGACY_CODECS = [Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.LZ4]
SAMPLE = [
    (0, 1_500_000_000_000, b"k0", b"hello " * 30),
    (1, 1_500_000_000_009, None, b"hello " * 30),
    (2, 1_499_999_999_000, b"k2", None),
    (3, 1_500_000_000_001, b"", b""),
]


def expected(magic: int, base: int = 0) -> list[Record]:
    return [Record(base + o, ts if magic else -1, k, v) for o, ts, k, v in SAMPLE]


@settings(max_examples=60)
@given(st.sampled_from([0, 1]), st.sampled_from(LEGACY_CODECS), st.data())
def test_round_trip(magic: int, codec: Compression, data: st.DataObject) -> None:
    records = data.draw(legacy_records(magic))
    buf = build_message_set(records, magic=magic, compression=codec)
    decoded = decode_message_set(buf)
    assert decoded.records == records
    assert not decoded.truncated
    assert decoded.valid_bytes == len(buf)
    assert split_complete_batches(buf) == (len(buf), False)
    if records and codec is not Compression.NONE:
        (wrapper,) = decoded.batches
        assert (wrapper.offset, wrapper.compression, wrapper.magic) == (records[-1].offset, codec, magic)


def producer_offsets(magic: int, codec: Compression, base: int) -> list[Record]:
    """What a reader sees in a producer-written set: producers write a v1 wrapper at offset 0 (the
    broker assigns offsets), so inner relative offsets come out as ``0 - last + relative``."""
    records = expected(magic, base)
    if magic == 1 and codec is not Compression.NONE:
        last = records[-1].offset
        records = [Record(r.offset - last, r.timestamp, r.key, r.value) for r in records]
    return records


@pytest.mark.parametrize("codec", LEGACY_CODECS)
@pytest.mark.parametrize("magic", [0, 1])
def test_kafka_python_message_sets_decode(magic: int, codec: Compression) -> None:
    if not KAFKA_PYTHON_CODECS[codec]:
        missing(skip_reason(codec))
    shifted = [(o + 100, ts, k, v) for o, ts, k, v in SAMPLE]
    decoded = decode_message_set(legacy_set(magic, shifted, codec))
    assert decoded.records == producer_offsets(magic, codec, 100)
    assert {batch.compression for batch in decoded.batches} == {codec}


@pytest.mark.parametrize(
    ("magic", "codec"), [(0, Compression.SNAPPY), (1, Compression.SNAPPY), (1, Compression.LZ4)]
)
def test_aiokafka_message_sets_decode(magic: int, codec: Compression) -> None:
    # aiokafka refuses to write LZ4 at magic 0 (it cannot write Kafka 0.8's header checksum).
    decoded = decode_message_set(legacy_set(magic, SAMPLE, codec, library="aiokafka"))
    assert decoded.records == producer_offsets(magic, codec, 0)


# aiokafka rejects Kafka 0.8's LZ4 header checksum, which magic 0 must carry: kafka-python reads that one.
ORACLE_READS = [
    (library, magic, codec)
    for library in ("kafka-python", "aiokafka")
    for magic in (0, 1)
    for codec in LEGACY_CODECS
    if not (library == "aiokafka" and magic == 0 and codec is Compression.LZ4)
]


@pytest.mark.parametrize(("library", "magic", "codec"), ORACLE_READS)
def test_our_message_sets_are_read_by_oracles(magic: int, codec: Compression, library: str) -> None:
    if library == "kafka-python" and not KAFKA_PYTHON_CODECS[codec]:
        missing(skip_reason(codec))
    records = expected(magic, 1000)
    buf = build_message_set(records, magic=magic, compression=codec)
    oracle_timestamp = (lambda ts: ts) if magic else (lambda ts: None)
    assert read_records(buf, library=library) == [
        (r.offset, oracle_timestamp(r.timestamp), r.key, r.value, []) for r in records
    ]


def test_v1_relative_inner_offsets_and_wrapper_offset() -> None:
    records = [Record(50, 1, b"a", b"x"), Record(51, 2, b"b", b"y"), Record(55, 3, b"c", b"z")]
    buf = build_message_set(records, magic=1, compression=Compression.GZIP)
    wrapper_offset, _, _, _, _, _ = struct.unpack_from(">qiIbbq", buf)
    assert wrapper_offset == 55
    inner = zlib.decompress(buf[struct.calcsize(">qiIbbqi") + 4 :], 31)
    assert [struct.unpack_from(">q", inner, pos)[0] for pos in _entry_positions(inner)] == [0, 1, 5]
    assert decode_message_set(buf).records == records
    assert [r[0] for r in read_records(buf)] == [50, 51, 55]


def test_v0_inner_offsets_are_absolute() -> None:
    records = [Record(50, -1, b"a", b"x"), Record(52, -1, b"b", b"y")]
    buf = build_message_set(records, magic=0, compression=Compression.GZIP)
    inner = zlib.decompress(buf[struct.calcsize(">qiIbbi") + 4 :], 31)
    assert [struct.unpack_from(">q", inner, pos)[0] for pos in _entry_positions(inner)] == [50, 52]
    assert decode_message_set(buf).records == records


def _entry_positions(buf: bytes) -> list[int]:
    positions, pos = [], 0
    while pos < len(buf):
        positions.append(pos)
        pos += 12 + struct.unpack_from(">i", buf, pos + 8)[0]
    return positions


@pytest.mark.parametrize("codec", LEGACY_CODECS)
def test_log_append_time_overrides_inner_timestamps(codec: Compression) -> None:
    records = [Record(0, 5, b"k", b"v"), Record(1, 6, None, b"w")]
    buf = build_message_set(
        records, magic=1, compression=codec, timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=77
    )
    decoded = decode_message_set(buf)
    assert [r.timestamp for r in decoded.records] == [77, 77]
    assert {b.timestamp_type for b in decoded.batches} == {TimestampType.LOG_APPEND_TIME}
    if KAFKA_PYTHON_CODECS[codec]:
        assert [r[1] for r in read_records(buf)] == [77, 77]


def test_create_time_wrapper_carries_max_timestamp() -> None:
    buf = build_message_set(expected(1), magic=1, compression=Compression.GZIP)
    (wrapper,) = decode_message_set(buf).batches
    assert wrapper.timestamp == 1_500_000_000_009
    assert wrapper.timestamp_type is TimestampType.CREATE_TIME


def test_truncated_trailing_message_is_reported() -> None:
    buf = build_message_set(expected(1), magic=1)
    for cut in range(1, 34):  # the last message is 34 bytes
        decoded = decode_message_set(buf[:-cut])
        assert decoded.truncated
        assert decoded.records == expected(1)[: len(decoded.records)]
        assert len(decoded.records) == 3
        assert decoded.valid_bytes == split_complete_batches(buf[:-cut])[0]


def test_crc_mismatch() -> None:
    buf = bytearray(build_message_set(expected(0), magic=0))
    buf[buf.index(b"k2")] = ord("K")
    with pytest.raises(CorruptRecordError, match="CRC"):
        decode_message_set(buf)
    assert decode_message_set(buf, verify_crc=False).records[2].key == b"K2"


def test_zstd_rejected() -> None:
    with pytest.raises(UnsupportedCompressionError, match="zstd"):
        build_message_set(expected(1), magic=1, compression=Compression.ZSTD)
    # A hand-made v1 wrapper claiming zstd.
    body = struct.pack(">bbqi", 1, 4, 0, -1) + struct.pack(">i", 5) + compress(Compression.ZSTD, b"x")[:5]
    buf = struct.pack(">qiI", 0, 4 + len(body), zlib.crc32(body)) + body
    with pytest.raises(UnsupportedCompressionError):
        decode_message_set(buf)


def test_nested_compression_and_magic_mismatch_are_corrupt() -> None:
    inner_compressed = build_message_set(expected(1), magic=1, compression=Compression.GZIP)
    v0_inner = build_message_set(expected(0), magic=0)
    for inner, magic in ((inner_compressed, 1), (v0_inner, 1)):
        value = compress(Compression.GZIP, inner)
        body = (
            struct.pack(">bbq", magic, 1, 0) + struct.pack(">i", -1) + struct.pack(">i", len(value)) + value
        )
        buf = struct.pack(">qiI", 3, 4 + len(body), zlib.crc32(body)) + body
        with pytest.raises(CorruptRecordError):
            decode_message_set(buf)


def test_empty_compressed_set_builds_nothing() -> None:
    assert build_message_set([], magic=1, compression=Compression.GZIP) == b""
    assert decode_message_set(b"").records == []
