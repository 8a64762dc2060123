"""RecordBatch v2: round-trips, and both directions against kafka-python (and aiokafka for its codecs)."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch

from odradek.protocol.records import (
    Compression,
    CorruptRecordError,
    Record,
    RecordBatch,
    RecordBatchBuilder,
    RecordBatchHeader,
    RecordsError,
    RecordsTruncatedError,
    TimestampType,
    build_record_batch,
    iter_record_batches,
)
from odradek.protocol.records.header import write_crc
from tests.support.requirements import missing

from .kafka_oracle import KAFKA_PYTHON_CODECS, read_records, skip_reason, v2_batch
from .strategies import v2_records

CODECS = list(Compression)
SAMPLE = [
    (1_600_000_000_000, b"key-1", b"value " * 40, [("trace", b"abc"), ("empty", b""), ("null", None)]),
    (1_600_000_000_007, None, b"value " * 40, []),
    (1_599_999_999_990, b"key-3", None, [("h", b"v")]),
    (1_600_000_000_002, b"", b"", []),
]


def expected(
    records: list[tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]],
) -> list[Record]:
    return [Record(i, ts, k, v, tuple(h)) for i, (ts, k, v, h) in enumerate(records)]


def as_tuples(
    records: list[Record],
) -> list[tuple[int, int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]]:
    return [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in records]


@settings(max_examples=60)
@given(
    v2_records(),
    st.sampled_from(CODECS),
    st.sampled_from(TimestampType),
    st.booleans(),
    st.integers(-1, 2**31 - 1),
)
def test_round_trip(
    records: list[Record], codec: Compression, timestamp_type: TimestampType, transactional: bool, epoch: int
) -> None:
    append_time = 1_700_000_000_000 if timestamp_type is TimestampType.LOG_APPEND_TIME else None
    buf = build_record_batch(
        records,
        compression=codec,
        timestamp_type=timestamp_type,
        log_append_time=append_time,
        producer_id=7 if transactional else -1,
        producer_epoch=3 if transactional else -1,
        base_sequence=11 if transactional else -1,
        is_transactional=transactional,
        partition_leader_epoch=epoch,
    )
    batch = RecordBatch.decode(buf)
    if append_time is not None:
        records = [Record(r.offset, append_time, r.key, r.value, r.headers) for r in records]
    assert batch.records == records
    assert batch.compression is codec
    assert batch.timestamp_type is timestamp_type
    assert batch.is_transactional is transactional
    assert batch.partition_leader_epoch == epoch
    assert batch.producer_id == (7 if transactional else -1)
    header = RecordBatchHeader.read(buf)
    assert header.size == len(buf)
    assert header.records_count == len(records)
    assert header.crc_is_valid(buf)
    if records:
        assert batch.base_offset == records[0].offset
        assert batch.last_offset == records[-1].offset
        if append_time is None:
            assert batch.max_timestamp == max(r.timestamp for r in records)
            assert batch.base_timestamp == records[0].timestamp
    # Re-encoding a decoded batch keeps every field (byte for byte when uncompressed).
    again = RecordBatch.decode(batch.encode())
    assert again == batch
    if codec is Compression.NONE and append_time is None:
        assert batch.encode() == buf


def test_empty_batch() -> None:
    buf = RecordBatchBuilder(500, producer_id=9, producer_epoch=1, base_sequence=4).build()
    batch = RecordBatch.decode(buf)
    assert batch.records == []
    assert batch.base_offset == 500
    assert batch.base_timestamp == batch.max_timestamp == -1
    assert RecordBatchHeader.read(buf).records_count == 0
    assert read_records(buf) == []


def test_builder_offsets_and_errors() -> None:
    builder = RecordBatchBuilder(10)
    assert builder.append(1, b"a", b"b") == 10
    assert builder.append(2, b"a", b"b") == 11
    assert builder.append(3, b"a", b"b", offset=20) == 20
    assert len(builder) == 3
    with pytest.raises(RecordsError):
        builder.append(4, None, None, offset=20)
    with pytest.raises(RecordsError):
        RecordBatchBuilder(0, timestamp_type=TimestampType.LOG_APPEND_TIME)
    with pytest.raises(RecordsError):
        RecordBatchBuilder(0, producer_epoch=2**15).build()
    assert [r.offset for r in RecordBatch.decode(builder.build()).records] == [10, 11, 20]


@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_batches_decode(codec: Compression) -> None:
    if not KAFKA_PYTHON_CODECS[codec]:
        missing(skip_reason(codec))
    buf = v2_batch(SAMPLE, compression=codec, producer_id=123, producer_epoch=4, base_sequence=50)
    batch = RecordBatch.decode(buf)
    assert batch.compression is codec  # the sample compresses well, so kafka-python kept the codec
    assert batch.records == expected(SAMPLE)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (123, 4, 50)
    assert batch.max_timestamp == 1_600_000_000_007


@pytest.mark.parametrize("codec", CODECS)
def test_aiokafka_batches_decode(codec: Compression) -> None:
    buf = v2_batch(SAMPLE, compression=codec, is_transactional=True, producer_id=5, producer_epoch=0,
                   base_sequence=0, library="aiokafka")  # fmt: skip
    batch = RecordBatch.decode(buf)
    assert batch.compression is codec
    assert batch.is_transactional
    assert batch.records == expected(SAMPLE)


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("library", ["kafka-python", "aiokafka"])
def test_our_batches_are_read_by_oracles(codec: Compression, library: str) -> None:
    if library == "kafka-python" and not KAFKA_PYTHON_CODECS[codec]:
        missing(skip_reason(codec))
    records = [Record(1_000 + i, ts, k, v, tuple(h)) for i, (ts, k, v, h) in enumerate(SAMPLE)]
    buf = build_record_batch(records, compression=codec, producer_id=77, producer_epoch=2, base_sequence=9)
    assert read_records(buf, library=library) == as_tuples(records)


def test_kafka_python_sees_our_header_fields() -> None:
    records = [Record(40, 5, b"k", b"v"), Record(42, 9, None, None)]
    buf = build_record_batch(
        records,
        producer_id=77,
        producer_epoch=2,
        base_sequence=9,
        is_transactional=True,
        partition_leader_epoch=6,
    )
    oracle = DefaultRecordBatch(bytes(buf))
    assert oracle.validate_crc()
    assert (oracle.base_offset, oracle.last_offset_delta, oracle.leader_epoch) == (40, 2, 6)
    assert (oracle.producer_id, oracle.producer_epoch, oracle.base_sequence) == (77, 2, 9)
    assert oracle.is_transactional
    assert (oracle.first_timestamp, oracle.max_timestamp) == (5, 9)


def test_log_append_time_seen_by_kafka_python() -> None:
    buf = build_record_batch(
        [Record(0, 5, b"k", b"v")], timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=99
    )
    assert read_records(buf) == [(0, 99, b"k", b"v", [])]


def test_crc_mismatch_and_truncation() -> None:
    buf = bytearray(build_record_batch([Record(0, 5, b"k", b"value")]))
    with pytest.raises(RecordsTruncatedError):
        RecordBatch.decode(buf[:-1])
    buf[buf.index(b"value")] = ord("V")
    with pytest.raises(CorruptRecordError, match="CRC"):
        RecordBatch.decode(buf)
    assert RecordBatch.decode(buf, verify_crc=False).records[0].value == b"Value"


def test_iter_record_batches_stops_before_partial_tail() -> None:
    first = build_record_batch([Record(0, 1, None, b"a")])
    second = build_record_batch([Record(1, 1, None, b"b")], compression=Compression.GZIP)
    buf = first + second
    assert [b.base_offset for b in iter_record_batches(buf)] == [0, 1]
    assert [b.base_offset for b in iter_record_batches(buf[:-3])] == [0]
    assert [b.base_offset for b in iter_record_batches(buf, len(first))] == [1]


def test_records_count_mismatch_is_corrupt() -> None:
    one = build_record_batch([Record(0, 1, None, b"a"), Record(1, 1, None, b"b")])
    batch = RecordBatch.decode(one)
    batch.records = batch.records[:1]
    too_few_declared = bytearray(batch.encode())
    for count in (0, 2, 2**31 - 1, -1):
        lying = bytearray(too_few_declared)
        struct.pack_into(">i", lying, 57, count)
        write_crc(lying, 0, len(lying))
        with pytest.raises(CorruptRecordError):
            RecordBatch.decode(lying)
