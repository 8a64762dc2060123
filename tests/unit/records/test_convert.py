"""Up-conversion (MessageSet v0/v1 -> RecordBatch v2) and down-conversion (v2 -> v1/v0)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from odradek.protocol.records import (
    Compression,
    ControlRecordType,
    Record,
    RecordBatch,
    RecordsError,
    RecordsTruncatedError,
    TimestampType,
    build_end_transaction_marker_batch,
    build_message_set,
    build_record_batch,
    decode_message_set,
    down_convert_batches,
    up_convert_message_set,
)
from tests.support.requirements import missing

from .kafka_oracle import KAFKA_PYTHON_CODECS, legacy_set, read_records
from .strategies import legacy_records, v2_records

LEGACY_CODECS = [Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.LZ4]


def legacy_view(records: list[Record], magic: int) -> list[Record]:
    """What a message set of ``magic`` can hold of ``records``."""
    return [Record(r.offset, r.timestamp if magic else -1, r.key, r.value) for r in records]


@settings(max_examples=50)
@given(st.sampled_from([0, 1]), st.sampled_from(LEGACY_CODECS), st.data())
def test_up_convert_keeps_records_offsets_and_codec(
    magic: int, codec: Compression, data: st.DataObject
) -> None:
    records = data.draw(legacy_records(magic, min_size=1))
    buf = up_convert_message_set(build_message_set(records, magic=magic, compression=codec))
    batch = RecordBatch.decode(buf)
    assert batch.records == records
    assert batch.compression is codec
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (-1, -1, -1)


@given(st.sampled_from([0, 1]), st.data())
def test_up_then_down_round_trips(magic: int, data: st.DataObject) -> None:
    records = data.draw(legacy_records(magic, min_size=1))
    legacy = build_message_set(records, magic=magic, compression=Compression.GZIP)
    assert decode_message_set(down_convert_batches(up_convert_message_set(legacy), magic)).records == records


@pytest.mark.parametrize("codec", [Compression.NONE, Compression.GZIP])
@pytest.mark.parametrize("magic", [0, 1])
def test_up_convert_kafka_python_produce(magic: int, codec: Compression) -> None:
    if not KAFKA_PYTHON_CODECS[codec]:
        missing(f"kafka-python cannot write {codec.name} here")
    # kafka-python, like every producer, writes offsets from 0 (and a v1 wrapper at 0); the broker assigns.
    produced = legacy_set(magic, [(0, 10, b"a", b"x" * 50), (1, 12, None, b"y" * 50)], codec)
    buf = up_convert_message_set(produced, base_offset=700)
    ts = (10, 12) if magic else (-1, -1)
    assert read_records(buf) == [(700, ts[0], b"a", b"x" * 50, []), (701, ts[1], None, b"y" * 50, [])]
    assert RecordBatch.decode(buf).compression is codec


def test_up_convert_options() -> None:
    legacy = build_message_set([Record(0, 5, b"k", b"v"), Record(0, 6, b"k", b"w")], magic=1)
    with pytest.raises(RecordsError):
        up_convert_message_set(legacy)  # offsets 0, 0 cannot be kept in one batch
    batch = RecordBatch.decode(
        up_convert_message_set(
            legacy,
            base_offset=10,
            compression=Compression.ZSTD,
            timestamp_type=TimestampType.LOG_APPEND_TIME,
            log_append_time=99,
        )
    )
    assert [(r.offset, r.timestamp) for r in batch.records] == [(10, 99), (11, 99)]
    assert batch.compression is Compression.ZSTD
    assert up_convert_message_set(b"") == b""
    with pytest.raises(RecordsTruncatedError):
        up_convert_message_set(legacy[:-1])


@settings(max_examples=50)
@given(st.sampled_from([0, 1]), st.sampled_from(list(Compression)), v2_records(min_size=1))
def test_down_convert_drops_what_old_formats_cannot_carry(
    magic: int, codec: Compression, records: list[Record]
) -> None:
    batch = build_record_batch(
        records, compression=codec, producer_id=5, producer_epoch=1, base_sequence=0, is_transactional=True
    )
    decoded = decode_message_set(down_convert_batches(batch, magic))
    assert decoded.records == legacy_view(records, magic)
    expected_codec = Compression.NONE if codec is Compression.ZSTD else codec
    assert {b.compression for b in decoded.batches} == {expected_codec}


@pytest.mark.parametrize("magic", [0, 1])
def test_down_converted_sets_read_by_kafka_python(magic: int) -> None:
    records = [Record(10, 100, b"k", b"v" * 40, (("h", b"x"),)), Record(11, 101, None, b"w" * 40)]
    log = (
        build_record_batch(records, compression=Compression.GZIP)
        + build_end_transaction_marker_batch(
            ControlRecordType.COMMIT,
            producer_id=1,
            producer_epoch=0,
            coordinator_epoch=0,
            timestamp=1,
            base_offset=12,
        )
        + build_record_batch([Record(13, 102, b"z", None)])
    )
    converted = down_convert_batches(log, magic)
    ts = (lambda t: t) if magic else (lambda t: None)
    assert read_records(converted) == [
        (10, ts(100), b"k", b"v" * 40, []),
        (11, ts(101), None, b"w" * 40, []),
        (13, ts(102), b"z", None, []),
    ]


def test_down_convert_first_offset_partial_tail_and_log_append_time() -> None:
    first = build_record_batch(
        [Record(0, 1, None, b"a"), Record(1, 2, None, b"b"), Record(2, 3, None, b"c")],
        timestamp_type=TimestampType.LOG_APPEND_TIME,
        log_append_time=50,
    )
    second = build_record_batch([Record(3, 4, None, b"d")])
    log = first + second[:-2]  # a fetch may end inside a batch
    decoded = decode_message_set(down_convert_batches(log, 1, first_offset=1))
    assert [(r.offset, r.timestamp, r.value) for r in decoded.records] == [(1, 50, b"b"), (2, 50, b"c")]
    assert decoded.batches[0].timestamp_type is TimestampType.LOG_APPEND_TIME
    assert down_convert_batches(b"", 0) == b""
    with pytest.raises(RecordsError):
        down_convert_batches(first, 2)
