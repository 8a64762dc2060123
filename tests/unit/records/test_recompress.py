"""Recompressing a v2 batch with a topic's codec (compression.type other than producer): only the
records section is re-encoded; every header field a producer or a consumer relies on is kept, and the
CRC-32C is computed again. Levels are KIP-390's."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from odradek.protocol.records import (
    Compression,
    DecompressedSizeError,
    InvalidRecordsError,
    Record,
    RecordBatch,
    RecordBatchBuilder,
    RecordBatchHeader,
    TargetCompression,
    TimestampType,
    compress,
    decompress,
    recompress_batch,
)
from tests.support.hand_built_batches import START_MS, hand_built_batch, hand_built_record

from .kafka_oracle import read_records
from .strategies import HEADERS, NULLABLE_BYTES, TIMESTAMPS

PAIRS = list(itertools.product(Compression, Compression))


def _batch(compression: Compression, **options: object) -> bytes:
    builder = RecordBatchBuilder(
        0,
        compression=compression,
        producer_id=4242,
        producer_epoch=7,
        base_sequence=123,
        is_transactional=True,
        partition_leader_epoch=5,
        **options,  # type: ignore[arg-type]
    )
    for index in range(50):
        builder.append(
            1_700_000_000_000 + index * 3,
            f"key-{index}".encode(),
            b"value " * index,
            [("h", f"{index}".encode()), ("empty", None)],
        )
    return builder.build()


@pytest.mark.parametrize(("source", "target"), PAIRS, ids=[f"{s.name}->{t.name}" for s, t in PAIRS])
def test_a_batch_recompressed_from_any_codec_to_any_other_keeps_its_header_and_records(
    source: Compression, target: Compression
) -> None:
    original = _batch(source)
    rebuilt = recompress_batch(original, 0, TargetCompression(target))
    before, after = RecordBatchHeader.read(original), RecordBatchHeader.read(rebuilt)
    assert after.crc_is_valid(rebuilt)
    assert after.compression is target
    assert after.size == len(rebuilt)
    for name in (
        "base_offset",
        "partition_leader_epoch",
        "last_offset_delta",
        "base_timestamp",
        "max_timestamp",
        "producer_id",
        "producer_epoch",
        "base_sequence",
        "records_count",
    ):
        assert getattr(after, name) == getattr(before, name), name
    assert after.is_transactional and not after.is_control
    assert after.timestamp_type is TimestampType.CREATE_TIME
    assert RecordBatch.decode(rebuilt).records == RecordBatch.decode(original).records
    # Another implementation reads it the same way.
    assert read_records(rebuilt, library="aiokafka") == read_records(original, library="aiokafka")


def test_the_flags_of_a_log_append_time_batch_are_kept() -> None:
    original = _batch(Compression.LZ4, timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=99)
    rebuilt = recompress_batch(original, 0, TargetCompression(Compression.ZSTD))
    header = RecordBatchHeader.read(rebuilt)
    assert header.timestamp_type is TimestampType.LOG_APPEND_TIME and header.max_timestamp == 99
    assert {r.timestamp for r in RecordBatch.decode(rebuilt).records} == {99}


def test_a_batch_in_the_middle_of_a_buffer_is_recompressed_alone() -> None:
    first, second = _batch(Compression.NONE), _batch(Compression.GZIP)
    buffer = first + second
    rebuilt = recompress_batch(buffer, len(first), TargetCompression(Compression.SNAPPY))
    assert RecordBatch.decode(rebuilt).records == RecordBatch.decode(second).records


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(TIMESTAMPS, NULLABLE_BYTES, NULLABLE_BYTES, HEADERS), min_size=1, max_size=20),
    st.sampled_from(list(Compression)),
    st.sampled_from(list(Compression)),
    st.integers(0, 2**40),
)
def test_keys_values_headers_timestamps_and_offsets_survive_recompression(
    records: list[tuple[int, bytes | None, bytes | None, tuple[tuple[str, bytes | None], ...]]],
    source: Compression,
    target: Compression,
    base_offset: int,
) -> None:
    base_timestamp = records[0][0]
    if any(abs(timestamp - base_timestamp) >= 2**62 for timestamp, *_ in records):
        return  # a delta that no batch could carry
    builder = RecordBatchBuilder(base_offset, compression=source)
    for timestamp, key, value, headers in records:
        builder.append(timestamp, key, value, headers)
    original = builder.build()
    rebuilt = recompress_batch(original, 0, TargetCompression(target))
    decoded = RecordBatch.decode(rebuilt)
    assert decoded.compression is target
    assert decoded.records == [
        Record(base_offset + index, timestamp, key, value, headers)
        for index, (timestamp, key, value, headers) in enumerate(records)
    ]


@pytest.mark.parametrize(
    ("compression", "low", "high"),
    [(Compression.GZIP, 1, 9), (Compression.ZSTD, -5, 19), (Compression.LZ4, 1, 17)],
)
def test_the_codec_level_is_the_one_asked_for(compression: Compression, low: int, high: int) -> None:
    data = b"".join(b"line %d of a log with words that repeat %d\n" % (i, i % 7) for i in range(20_000))
    fast, small = compress(compression, data, level=low), compress(compression, data, level=high)
    assert len(small) < len(fast)
    assert decompress(compression, small) == decompress(compression, fast) == data
    rebuilt = recompress_batch(_batch(Compression.NONE), 0, TargetCompression(compression, high))
    assert RecordBatch.decode(rebuilt).records == RecordBatch.decode(_batch(Compression.NONE)).records


def test_default_levels_are_kafkas() -> None:
    data = b"abcdefgh" * 10_000 + bytes(range(256)) * 100
    assert compress(Compression.GZIP, data, level=-1) == compress(Compression.GZIP, data, level=6)
    assert compress(Compression.ZSTD, data) == compress(Compression.ZSTD, data, level=3)
    # lz4's default level 9 is Kafka's fast compressor; any other level is the high-compression one.
    assert compress(Compression.LZ4, data, level=9) == compress(Compression.LZ4, data)


def test_a_payload_decompressing_past_the_limit_is_refused_not_inflated() -> None:
    builder = RecordBatchBuilder(0, compression=Compression.ZSTD)
    builder.append(0, None, bytes(4 * 1024 * 1024))
    with pytest.raises(DecompressedSizeError):
        recompress_batch(
            builder.build(), 0, TargetCompression(Compression.GZIP), max_decompressed_size=1 << 20
        )


@pytest.mark.parametrize(
    ("records", "count"),
    [
        pytest.param(hand_built_record(0, b"only one"), 3, id="fewer-records-than-declared"),
        pytest.param(hand_built_record(0, b"a") + hand_built_record(1, b"b"), 1, id="more-than-declared"),
        pytest.param(b"\xff" * 64, 3, id="not-records-at-all"),
        pytest.param(hand_built_record(0, b"a")[:-2], 1, id="a-record-cut-short"),
    ],
)
def test_a_batch_whose_records_do_not_read_as_its_header_says_is_refused_not_signed_again(
    records: bytes, count: int
) -> None:
    sent = hand_built_batch(records, Compression.GZIP, count=count)
    with pytest.raises(InvalidRecordsError):
        recompress_batch(sent, 0, TargetCompression(Compression.ZSTD))


def test_offset_deltas_out_of_order_are_renumbered_as_kafka_s_rebuild_numbers_them() -> None:
    records = hand_built_record(0, b"a") + hand_built_record(0, b"b") + hand_built_record(7, b"c")
    rebuilt = recompress_batch(
        hand_built_batch(records, Compression.GZIP, count=3), 0, TargetCompression(Compression.LZ4)
    )
    decoded = RecordBatch.decode(rebuilt)
    assert [(r.offset, r.value) for r in decoded.records] == [(0, b"a"), (1, b"b"), (2, b"c")]


def test_the_rebuilt_batch_s_max_timestamp_is_its_records_largest() -> None:
    records = hand_built_record(0, b"a") + hand_built_record(1, b"b", timestamp_delta=5000)
    sent = hand_built_batch(records, Compression.SNAPPY, count=2, max_timestamp=START_MS)  # claims less
    rebuilt = RecordBatchHeader.read(recompress_batch(sent, 0, TargetCompression(Compression.ZSTD)))
    assert (rebuilt.base_timestamp, rebuilt.max_timestamp) == (START_MS, START_MS + 5000)
