"""The records of `__consumer_offsets`, in Kafka's own formats, so Kafka's tools can read our topic.

A record's key is an int16 record type followed by the key struct at version 0 (types 0 and 1 are
both an offset commit; 0 was written by Kafka before 0.10); its value is an int16 version followed by
the value struct at that version, or null (a tombstone) when the key's state is deleted:

| type | key                                       | value (version written)                        |
| ---- | ----------------------------------------- | ---------------------------------------------- |
| 0, 1 | OffsetCommitKey (group, topic, partition) | OffsetCommitValue (3, or 1 with an expiry time) |
| 2    | GroupMetadataKey (group)                  | GroupMetadataValue (3)                          |
| 3    | ConsumerGroupMetadataKey (group)          | ConsumerGroupMetadataValue (0)                  |
| 4    | ConsumerGroupPartitionMetadataKey (group) | only read past: Kafka 4.1+ writes tombstones    |
| 5    | ConsumerGroupMemberMetadataKey            | ConsumerGroupMemberMetadataValue (0)            |
| 6    | ConsumerGroupTargetAssignmentMetadataKey  | ConsumerGroupTargetAssignmentMetadataValue (0)  |
| 7    | ConsumerGroupTargetAssignmentMemberKey    | ConsumerGroupTargetAssignmentMemberValue (0)    |
| 8    | ConsumerGroupCurrentMemberAssignmentKey   | ConsumerGroupCurrentMemberAssignmentValue (0)   |

The KIP-848 schemas (types 3-8) live in `consumer_records.py`. Record types this broker does not know
(share and streams groups) are skipped on replay, as a Kafka broker without those features does.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, Final

from odradek.protocol.schema import Array, Bytes, Int32, Int64, Message, String, Struct

_INT16: Final = struct.Struct(">h")


class OffsetCommitKey(Message, versions="0"):
    group: str = String()
    topic: str = String()
    partition: int = Int32()


class OffsetCommitValue(Message, versions="0-4", flexible="4+"):
    offset: int = Int64()
    leader_epoch: int = Int32("3+", default=-1)
    metadata: str = String()
    commit_timestamp: int = Int64()
    expire_timestamp: int = Int64("1", default=-1)


class GroupMetadataKey(Message, versions="0"):
    group: str = String()


class MemberMetadata(Struct):
    member_id: str = String()
    group_instance_id: str | None = String("3+", nullable="3+", default=None)
    client_id: str = String()
    client_host: str = String()
    rebalance_timeout: int = Int32("1+", default=-1)
    session_timeout: int = Int32()
    subscription: bytes = Bytes()
    assignment: bytes = Bytes()


class GroupMetadataValue(Message, versions="0-4", flexible="4+"):
    protocol_type: str = String()
    generation: int = Int32()
    protocol: str | None = String(nullable="0+", default=None)
    leader: str | None = String(nullable="0+", default=None)
    current_state_timestamp: int = Int64("2+", default=-1)
    members: list[MemberMetadata] = Array(MemberMetadata)


OFFSET_COMMIT_LEGACY: Final = 0
OFFSET_COMMIT: Final = 1
GROUP_METADATA: Final = 2
OFFSET_COMMIT_VALUE_VERSION: Final = 3
OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY: Final = 1
GROUP_METADATA_VALUE_VERSION: Final = 3


@dataclass(frozen=True, slots=True)
class CoordinatorRecord:
    """One record for `__consumer_offsets`: a typed key and a value (None for a tombstone)."""

    record_type: int
    key: Message
    value: Message | None
    value_version: int = 0

    def encode(self) -> tuple[bytes, bytes | None]:
        key = _INT16.pack(self.record_type) + self.key.encode(0)
        if self.value is None:
            return key, None
        return key, _INT16.pack(self.value_version) + self.value.encode(self.value_version)


#: Key and value schemas by record type; consumer_records.py adds the KIP-848 types.
SCHEMAS: dict[int, tuple[type[Message], type[Message] | None]] = {
    OFFSET_COMMIT_LEGACY: (OffsetCommitKey, OffsetCommitValue),
    OFFSET_COMMIT: (OffsetCommitKey, OffsetCommitValue),
    GROUP_METADATA: (GroupMetadataKey, GroupMetadataValue),
}


class UnknownRecordType(Exception):
    """A record type this broker does not read (share or streams groups, or a newer Kafka's)."""


def decode_record(key: bytes | None, value: bytes | None) -> CoordinatorRecord:
    """Decode one record read from `__consumer_offsets`; raises UnknownRecordType or CodecError."""
    if key is None or len(key) < 2:
        raise UnknownRecordType("record without a typed key")
    (record_type,) = _INT16.unpack_from(key)
    schemas = SCHEMAS.get(record_type)
    if schemas is None:
        raise UnknownRecordType(f"record type {record_type}")
    key_schema, value_schema = schemas
    decoded_key = key_schema.decode(key[2:], 0)
    if value is None:
        return CoordinatorRecord(record_type, decoded_key, None)
    if value_schema is None or len(value) < 2:
        raise UnknownRecordType(f"record type {record_type} with a value this broker does not read")
    (version,) = _INT16.unpack_from(value)
    return CoordinatorRecord(record_type, decoded_key, value_schema.decode(value[2:], version), version)


# ----- builders, as Kafka's GroupCoordinatorRecordHelpers write them -----------------------------------


def offset_commit_record(
    group_id: str,
    topic: str,
    partition: int,
    offset: int,
    leader_epoch: int,
    metadata: str,
    commit_timestamp: int,
    expire_timestamp: int | None,
) -> CoordinatorRecord:
    value = OffsetCommitValue(
        offset=offset,
        leader_epoch=leader_epoch,
        metadata=metadata,
        commit_timestamp=commit_timestamp,
        expire_timestamp=-1 if expire_timestamp is None else expire_timestamp,
    )
    version = (
        OFFSET_COMMIT_VALUE_VERSION if expire_timestamp is None else OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY
    )
    key = OffsetCommitKey(group=group_id, topic=topic, partition=partition)
    return CoordinatorRecord(OFFSET_COMMIT, key, value, version)


def offset_commit_tombstone(group_id: str, topic: str, partition: int) -> CoordinatorRecord:
    return CoordinatorRecord(
        OFFSET_COMMIT, OffsetCommitKey(group=group_id, topic=topic, partition=partition), None
    )


def group_metadata_record(
    group_id: str,
    protocol_type: str,
    generation: int,
    protocol: str | None,
    leader: str | None,
    current_state_timestamp: int,
    members: list[MemberMetadata],
) -> CoordinatorRecord:
    value = GroupMetadataValue(
        protocol_type=protocol_type,
        generation=generation,
        protocol=protocol,
        leader=leader,
        current_state_timestamp=current_state_timestamp,
        members=members,
    )
    return CoordinatorRecord(
        GROUP_METADATA, GroupMetadataKey(group=group_id), value, GROUP_METADATA_VALUE_VERSION
    )


def group_metadata_tombstone(group_id: str) -> CoordinatorRecord:
    return CoordinatorRecord(GROUP_METADATA, GroupMetadataKey(group=group_id), None)


def group_id_of(record: CoordinatorRecord) -> str:
    """The group a record belongs to (every key names one)."""
    key: Any = record.key
    return str(key.group if hasattr(key, "group") else key.group_id)
