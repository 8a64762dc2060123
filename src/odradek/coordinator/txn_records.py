"""The records of `__transaction_state`, in Kafka's format (TransactionLogKey / TransactionLogValue), so
Kafka's tools read our topic and a Kafka broker could read it back.

A key is an int16 version (0) followed by the transactional id; a value is an int16 version followed by
the transaction's metadata: version 0 (what Kafka 3.x writes, and what this broker writes) or version 1
(flexible, Kafka 4's, with tagged previous/next producer ids and the client's transaction version), or
null once the transactional id has expired (a tombstone, so compaction forgets it).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Final

from odradek.protocol.schema import Array, Int8, Int16, Int32, Int64, Message, String, Struct

_INT16: Final = struct.Struct(">h")
KEY_VERSION: Final = 0
VALUE_VERSION: Final = 0


class TransactionLogKey(Message, versions="0"):
    transactional_id: str = String()


class TransactionLogPartitions(Struct):
    topic: str = String()
    partition_ids: list[int] = Array("int32")


class TransactionLogValue(Message, versions="0-1", flexible="1+"):
    producer_id: int = Int64()
    previous_producer_id: int = Int64("1+", tag=0, default=-1)
    next_producer_id: int = Int64("1+", tag=1, default=-1)
    producer_epoch: int = Int16()
    transaction_timeout_ms: int = Int32()
    transaction_status: int = Int8()
    transaction_partitions: list[TransactionLogPartitions] | None = Array(
        TransactionLogPartitions, nullable="0+", default=None
    )
    transaction_last_update_timestamp_ms: int = Int64()
    transaction_start_timestamp_ms: int = Int64()
    client_transaction_version: int = Int16("1+", tag=2, default=0)


@dataclass(frozen=True, slots=True)
class TxnLogRecord:
    transactional_id: str
    value: TransactionLogValue | None  # None: the id expired (a tombstone)

    def encode(self) -> tuple[bytes, bytes | None]:
        key = _INT16.pack(KEY_VERSION) + TransactionLogKey(transactional_id=self.transactional_id).encode(0)
        if self.value is None:
            return key, None
        return key, _INT16.pack(VALUE_VERSION) + self.value.encode(VALUE_VERSION)


class UnreadableTxnRecord(ValueError):
    """A key or value version this broker does not read."""


def decode_txn_record(key: bytes | None, value: bytes | None) -> TxnLogRecord:
    if key is None or len(key) < 2:
        raise UnreadableTxnRecord("record without a versioned key")
    (key_version,) = _INT16.unpack_from(key)
    if key_version != KEY_VERSION:
        raise UnreadableTxnRecord(f"transaction log key version {key_version}")
    transactional_id = TransactionLogKey.decode(key[2:], 0).transactional_id
    if value is None:
        return TxnLogRecord(transactional_id, None)
    if len(value) < 2:
        raise UnreadableTxnRecord("transaction log value shorter than its version")
    (version,) = _INT16.unpack_from(value)
    if version not in (0, 1):
        raise UnreadableTxnRecord(f"transaction log value version {version}")
    return TxnLogRecord(transactional_id, TransactionLogValue.decode(value[2:], version))
