"""The records of `__share_group_state`, byte for byte as Kafka 4.4's share coordinator writes them.

A record's key is an int16 record type (0: ShareSnapshot, 1: ShareUpdate, Kafka's coordinator-key
api keys) followed by the key fields (group id, topic id, partition; version 0, not flexible); its value
an int16 version (0) followed by the flexible value. A ShareSnapshot holds a share partition's whole
state; a ShareUpdate only what one write changed (batches, start offset, leader epoch), applied on top
of the snapshot before it. A null ShareSnapshot value is the tombstone of a deleted state.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass
from typing import Final

from odradek.partition.share.persister import DeliveryState, SharePartitionKey, StateBatch
from odradek.protocol.schema import Array, Int8, Int16, Int32, Int64, Message, String, Struct, Uuid

_INT16: Final = struct.Struct(">h")
SNAPSHOT: Final = 0
UPDATE: Final = 1
VALUE_VERSION: Final = 0


class ShareStateKey(Message, versions="0"):
    """ShareSnapshotKey and ShareUpdateKey: the same fields under two record types."""

    group_id: str = String()
    topic_id: uuid.UUID = Uuid()
    partition: int = Int32()


class ShareStateBatch(Struct):
    first_offset: int = Int64()
    last_offset: int = Int64()
    delivery_state: int = Int8()
    delivery_count: int = Int16()


class ShareSnapshotValue(Message, versions="0", flexible="0+"):
    snapshot_epoch: int = Int32()
    state_epoch: int = Int32()
    leader_epoch: int = Int32()
    start_offset: int = Int64()
    delivery_complete_count: int = Int32("0+", tag=0, default=-1)  # KIP-1226, Kafka 4.2+
    create_timestamp: int = Int64()
    write_timestamp: int = Int64()
    state_batches: list[ShareStateBatch] = Array(ShareStateBatch)


class ShareUpdateValue(Message, versions="0", flexible="0+"):
    snapshot_epoch: int = Int32()
    leader_epoch: int = Int32()
    start_offset: int = Int64()
    delivery_complete_count: int = Int32("0+", tag=0, default=-1)
    state_batches: list[ShareStateBatch] = Array(ShareStateBatch)


@dataclass(frozen=True, slots=True)
class ShareStateRecord:
    """One record of `__share_group_state`: a snapshot, an update, or (snapshot, None) a tombstone."""

    record_type: int
    key: SharePartitionKey
    value: ShareSnapshotValue | ShareUpdateValue | None

    def encode(self) -> tuple[bytes, bytes | None]:
        key = self.key
        key_bytes = _INT16.pack(self.record_type) + ShareStateKey(
            group_id=key.group_id, topic_id=key.topic_id, partition=key.partition
        ).encode(0)
        if self.value is None:
            return key_bytes, None
        return key_bytes, _INT16.pack(VALUE_VERSION) + self.value.encode(VALUE_VERSION)


class UnreadableShareRecord(ValueError):
    """A record type or version this broker does not read."""


def decode_share_record(key: bytes | None, value: bytes | None) -> ShareStateRecord:
    if key is None or len(key) < 2:
        raise UnreadableShareRecord("record without a typed key")
    (record_type,) = _INT16.unpack_from(key)
    if record_type not in (SNAPSHOT, UPDATE):
        raise UnreadableShareRecord(f"share state record type {record_type}")
    fields = ShareStateKey.decode(key[2:], 0)
    state_key = SharePartitionKey(fields.group_id, fields.topic_id, fields.partition)
    if value is None:
        return ShareStateRecord(record_type, state_key, None)
    if len(value) < 2:
        raise UnreadableShareRecord("share state value shorter than its version")
    (version,) = _INT16.unpack_from(value)
    if version != VALUE_VERSION:
        raise UnreadableShareRecord(f"share state value version {version}")
    decoded: ShareSnapshotValue | ShareUpdateValue
    if record_type == SNAPSHOT:
        decoded = ShareSnapshotValue.decode(value[2:], version)
    else:
        decoded = ShareUpdateValue.decode(value[2:], version)
    return ShareStateRecord(record_type, state_key, decoded)


def to_record_batches(batches: tuple[StateBatch, ...]) -> list[ShareStateBatch]:
    return [
        ShareStateBatch(
            first_offset=b.first_offset,
            last_offset=b.last_offset,
            delivery_state=int(b.delivery_state),
            delivery_count=b.delivery_count,
        )
        for b in batches
    ]


def from_record_batches(batches: list[ShareStateBatch]) -> tuple[StateBatch, ...]:
    return tuple(
        StateBatch(b.first_offset, b.last_offset, DeliveryState(b.delivery_state), b.delivery_count)
        for b in batches
    )
