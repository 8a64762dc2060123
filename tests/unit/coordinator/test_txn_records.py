"""`__transaction_state` records in Kafka's format: the bytes of a version-0 value as Kafka 3.x writes
them, version 1 (Kafka 4's, flexible with tagged fields) read back, tombstones, and Kafka's state names."""

from __future__ import annotations

import struct

import pytest

from odradek.coordinator.txn_metadata import TransactionMetadata, TxnState
from odradek.coordinator.txn_records import (
    TransactionLogPartitions,
    TransactionLogValue,
    TxnLogRecord,
    UnreadableTxnRecord,
    decode_txn_record,
)


def _value(**changes: object) -> TransactionLogValue:
    fields: dict[str, object] = {
        "producer_id": 5,
        "producer_epoch": 1,
        "transaction_timeout_ms": 60000,
        "transaction_status": int(TxnState.ONGOING),
        "transaction_partitions": [TransactionLogPartitions(topic="t", partition_ids=[0, 1])],
        "transaction_last_update_timestamp_ms": 3,
        "transaction_start_timestamp_ms": 2,
    }
    return TransactionLogValue(**{**fields, **changes})


def test_version_0_bytes_are_kafkas() -> None:
    key, value = TxnLogRecord("x", _value()).encode()
    assert key == struct.pack(">hh", 0, 1) + b"x"
    assert value == (
        struct.pack(">hqhib", 0, 5, 1, 60000, 1)
        + struct.pack(">i", 1)
        + struct.pack(">h", 1)
        + b"t"
        + struct.pack(">iii", 2, 0, 1)
        + struct.pack(">qq", 3, 2)
    )
    assert decode_txn_record(key, value) == TxnLogRecord("x", _value())


def test_version_1_with_tagged_fields_is_read() -> None:
    written = _value(previous_producer_id=4, next_producer_id=6, client_transaction_version=2)
    value = struct.pack(">h", 1) + written.encode(1)
    key = struct.pack(">hh", 0, 1) + b"x"
    read = decode_txn_record(key, value).value
    assert read is not None
    assert (read.previous_producer_id, read.next_producer_id, read.client_transaction_version) == (4, 6, 2)
    metadata = TransactionMetadata.from_value("x", read)
    assert (metadata.producer_id, metadata.state, metadata.partitions) == (
        5,
        TxnState.ONGOING,
        {("t", 0), ("t", 1)},
    )


def test_a_tombstone_and_unknown_versions() -> None:
    key = struct.pack(">hh", 0, 1) + b"x"
    assert decode_txn_record(key, None) == TxnLogRecord("x", None)
    with pytest.raises(UnreadableTxnRecord):
        decode_txn_record(struct.pack(">hh", 1, 1) + b"x", None)
    with pytest.raises(UnreadableTxnRecord):
        decode_txn_record(key, struct.pack(">h", 2) + _value().encode(0))


def test_state_names_are_kafkas() -> None:
    assert [s.kafka_name for s in TxnState] == [
        "Empty",
        "Ongoing",
        "PrepareCommit",
        "PrepareAbort",
        "CompleteCommit",
        "CompleteAbort",
        "Dead",
        "PrepareEpochFence",
    ]


def test_next_value_starts_a_transaction_clock_only_when_it_begins() -> None:
    metadata = TransactionMetadata("x", 5, 0, 60000)
    begun = metadata.next_value(100, state=TxnState.ONGOING, partitions={("t", 0)})
    assert begun.transaction_start_timestamp_ms == 100
    metadata.apply(begun)
    more = metadata.next_value(200, partitions={("t", 0), ("t", 1)})
    assert (more.transaction_start_timestamp_ms, more.transaction_last_update_timestamp_ms) == (100, 200)
    assert metadata.timed_out(100 + 60001) and not metadata.timed_out(100 + 60000)
