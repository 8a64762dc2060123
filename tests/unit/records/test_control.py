"""Transaction markers (control batches): build, read back, and read by kafka-python."""

from __future__ import annotations

import pytest
from kafka.record.default_records import DefaultRecordBatch

from odradek.protocol.records import (
    ControlRecordType,
    CorruptRecordError,
    EndTransactionMarker,
    Record,
    RecordBatch,
    RecordBatchHeader,
    RecordsError,
    build_end_transaction_marker_batch,
    build_record_batch,
    decode_control_key,
    decode_end_transaction_marker,
    encode_control_key,
    encode_end_transaction_marker_value,
    read_end_transaction_marker,
)


@pytest.mark.parametrize("marker", [ControlRecordType.ABORT, ControlRecordType.COMMIT])
def test_marker_batch_round_trip(marker: ControlRecordType) -> None:
    buf = build_end_transaction_marker_batch(
        marker, producer_id=4000, producer_epoch=7, coordinator_epoch=12, timestamp=1234, base_offset=88
    )
    header = RecordBatchHeader.read(buf)
    assert header.is_control and header.is_transactional
    assert (header.producer_id, header.producer_epoch, header.base_offset) == (4000, 7, 88)
    batch = RecordBatch.decode(buf)
    assert read_end_transaction_marker(batch) == EndTransactionMarker(marker, 12, 0)
    record = batch.records[0]
    assert record.key == bytes([0, 0, 0, int(marker)])  # version 0, type
    assert record.value == bytes([0, 0, 0, 0, 0, 12])  # version 0, coordinator epoch
    assert (record.offset, record.timestamp) == (88, 1234)


def test_kafka_python_reads_our_marker() -> None:
    buf = build_end_transaction_marker_batch(
        ControlRecordType.COMMIT, producer_id=1, producer_epoch=0, coordinator_epoch=3, timestamp=5
    )
    oracle = DefaultRecordBatch(bytes(buf))
    assert oracle.is_control_batch and oracle.is_transactional and oracle.validate_crc()
    (record,) = list(oracle)
    assert (record.version, record.type, record.commit) == (0, 1, True)


def test_key_and_value_helpers() -> None:
    assert decode_control_key(encode_control_key(ControlRecordType.LEADER_CHANGE)) == (0, 2)
    record = Record(
        0, 0, encode_control_key(ControlRecordType.ABORT), encode_end_transaction_marker_value(9) + b"\x01"
    )
    assert decode_end_transaction_marker(record) == EndTransactionMarker(ControlRecordType.ABORT, 9)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (None, b"\x00" * 6),
        (b"\x00\x00", b"\x00" * 6),
        (b"\x00\x00\x00\x02", b"\x00" * 6),
        (b"\x00" * 4, b"\x00"),
    ],
)
def test_malformed_markers(key: bytes | None, value: bytes | None) -> None:
    with pytest.raises(CorruptRecordError):
        decode_end_transaction_marker(Record(0, 0, key, value))


def test_not_a_marker_batch() -> None:
    with pytest.raises(CorruptRecordError):
        read_end_transaction_marker(RecordBatch.decode(build_record_batch([Record(0, 0, b"k", b"v")])))
    with pytest.raises(RecordsError):
        build_end_transaction_marker_batch(
            ControlRecordType.LEADER_CHANGE, producer_id=1, producer_epoch=0, coordinator_epoch=0, timestamp=0
        )
