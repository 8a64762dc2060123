"""The share group records of `__consumer_offsets` (types 9-15), in Kafka 4.4's layout.

| type | key                                     | value (version 0, flexible)                          |
| ---- | --------------------------------------- | ---------------------------------------------------- |
| 9    | ShareGroupPartitionMetadataKey          | only read past: Kafka 4.0's subscription metadata    |
| 10   | ShareGroupMemberMetadataKey             | ShareGroupMemberMetadataValue                        |
| 11   | ShareGroupMetadataKey                   | ShareGroupMetadataValue (epoch, metadata hash)       |
| 12   | ShareGroupTargetAssignmentMetadataKey   | ShareGroupTargetAssignmentMetadataValue              |
| 13   | ShareGroupTargetAssignmentMemberKey     | ShareGroupTargetAssignmentMemberValue                |
| 14   | ShareGroupCurrentMemberAssignmentKey    | ShareGroupCurrentMemberAssignmentValue               |
| 15   | ShareGroupStatePartitionMetadataKey     | ShareGroupStatePartitionMetadataValue                |

Keys are the consumer group's key structs (group id, or group id and member id) at version 0.
Importing this module registers the schemas with `records.SCHEMAS`.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Final

from odradek.coordinator.consumer_records import (
    GroupKey,
    GroupMemberKey,
    TopicPartitions,
    to_topic_partitions,
)
from odradek.coordinator.records import SCHEMAS, CoordinatorRecord
from odradek.protocol.schema import Array, Int8, Int32, Int64, Message, String, Struct, Uuid

SHARE_GROUP_PARTITION_METADATA: Final = 9
SHARE_GROUP_MEMBER_METADATA: Final = 10
SHARE_GROUP_METADATA: Final = 11
SHARE_GROUP_TARGET_ASSIGNMENT_METADATA: Final = 12
SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER: Final = 13
SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT: Final = 14
SHARE_GROUP_STATE_PARTITION_METADATA: Final = 15

#: Partitions by topic id.
Assignment = Mapping[uuid.UUID, frozenset[int]]


class ShareGroupMemberMetadataValue(Message, versions="0", flexible="0+"):
    rack_id: str | None = String(nullable="0+", default=None)
    client_id: str = String()
    client_host: str = String()
    subscribed_topic_names: list[str] = Array("string")


class ShareGroupMetadataValue(Message, versions="0", flexible="0+"):
    epoch: int = Int32()
    metadata_hash: int = Int64()


class ShareGroupTargetAssignmentMetadataValue(Message, versions="0", flexible="0+"):
    assignment_epoch: int = Int32()
    assignment_timestamp: int = Int64(tag=0, default=0)


class ShareGroupTargetAssignmentMemberValue(Message, versions="0", flexible="0+"):
    topic_partitions: list[TopicPartitions] = Array(TopicPartitions)


class ShareGroupCurrentMemberAssignmentValue(Message, versions="0", flexible="0+"):
    member_epoch: int = Int32()
    previous_member_epoch: int = Int32()
    state: int = Int8()
    assigned_partitions: list[TopicPartitions] = Array(TopicPartitions)


class TopicPartitionsInfo(Struct):
    topic_id: uuid.UUID = Uuid()
    topic_name: str = String()
    partitions: list[int] = Array("int32")


class TopicInfo(Struct):
    topic_id: uuid.UUID = Uuid()
    topic_name: str = String()


class ShareGroupStatePartitionMetadataValue(Message, versions="0", flexible="0+"):
    """Which partitions' share-group state the share coordinators hold (Kafka's initialise step)."""

    initializing_topics: list[TopicPartitionsInfo] = Array(TopicPartitionsInfo)
    initialized_topics: list[TopicPartitionsInfo] = Array(TopicPartitionsInfo)
    deleting_topics: list[TopicInfo] = Array(TopicInfo)


SCHEMAS.update(
    {
        SHARE_GROUP_PARTITION_METADATA: (GroupKey, None),  # Kafka 4.0 wrote values; 4.1+ tombstones
        SHARE_GROUP_MEMBER_METADATA: (GroupMemberKey, ShareGroupMemberMetadataValue),
        SHARE_GROUP_METADATA: (GroupKey, ShareGroupMetadataValue),
        SHARE_GROUP_TARGET_ASSIGNMENT_METADATA: (GroupKey, ShareGroupTargetAssignmentMetadataValue),
        SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER: (GroupMemberKey, ShareGroupTargetAssignmentMemberValue),
        SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT: (GroupMemberKey, ShareGroupCurrentMemberAssignmentValue),
        SHARE_GROUP_STATE_PARTITION_METADATA: (GroupKey, ShareGroupStatePartitionMetadataValue),
    }
)

SHARE_RECORD_TYPES: Final = frozenset(
    {
        SHARE_GROUP_PARTITION_METADATA,
        SHARE_GROUP_MEMBER_METADATA,
        SHARE_GROUP_METADATA,
        SHARE_GROUP_TARGET_ASSIGNMENT_METADATA,
        SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER,
        SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT,
        SHARE_GROUP_STATE_PARTITION_METADATA,
    }
)


def group_epoch_record(group_id: str, epoch: int, metadata_hash: int) -> CoordinatorRecord:
    value = ShareGroupMetadataValue(epoch=epoch, metadata_hash=metadata_hash)
    return CoordinatorRecord(SHARE_GROUP_METADATA, GroupKey(group_id=group_id), value)


def member_metadata_record(
    group_id: str, member_id: str, value: ShareGroupMemberMetadataValue
) -> CoordinatorRecord:
    key = GroupMemberKey(group_id=group_id, member_id=member_id)
    return CoordinatorRecord(SHARE_GROUP_MEMBER_METADATA, key, value)


def target_assignment_epoch_record(group_id: str, epoch: int, timestamp_ms: int) -> CoordinatorRecord:
    value = ShareGroupTargetAssignmentMetadataValue(assignment_epoch=epoch, assignment_timestamp=timestamp_ms)
    return CoordinatorRecord(SHARE_GROUP_TARGET_ASSIGNMENT_METADATA, GroupKey(group_id=group_id), value)


def target_assignment_record(group_id: str, member_id: str, assignment: Assignment) -> CoordinatorRecord:
    value = ShareGroupTargetAssignmentMemberValue(topic_partitions=to_topic_partitions(assignment))
    key = GroupMemberKey(group_id=group_id, member_id=member_id)
    return CoordinatorRecord(SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER, key, value)


def current_assignment_record(
    group_id: str, member_id: str, member_epoch: int, previous_member_epoch: int, assigned: Assignment
) -> CoordinatorRecord:
    value = ShareGroupCurrentMemberAssignmentValue(
        member_epoch=member_epoch,
        previous_member_epoch=previous_member_epoch,
        state=0,  # STABLE: a share member has nothing to revoke, it is always reconciled
        assigned_partitions=to_topic_partitions(assigned),
    )
    key = GroupMemberKey(group_id=group_id, member_id=member_id)
    return CoordinatorRecord(SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT, key, value)


def state_partition_metadata_record(
    group_id: str, initialized: Mapping[uuid.UUID, tuple[str, frozenset[int]]]
) -> CoordinatorRecord:
    """The partitions whose share-group state is initialised (by topic id: name and partitions)."""
    value = ShareGroupStatePartitionMetadataValue(
        initializing_topics=[],
        initialized_topics=[
            TopicPartitionsInfo(topic_id=topic_id, topic_name=name, partitions=sorted(partitions))
            for topic_id, (name, partitions) in sorted(initialized.items())
            if partitions
        ],
        deleting_topics=[],
    )
    return CoordinatorRecord(SHARE_GROUP_STATE_PARTITION_METADATA, GroupKey(group_id=group_id), value)


def member_tombstones(group_id: str, member_id: str) -> list[CoordinatorRecord]:
    """A departing member's records, in Kafka's order: current assignment, target, subscription."""
    key = GroupMemberKey(group_id=group_id, member_id=member_id)
    return [
        CoordinatorRecord(SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT, key, None),
        CoordinatorRecord(SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER, key, None),
        CoordinatorRecord(SHARE_GROUP_MEMBER_METADATA, key, None),
    ]


def group_tombstones(group_id: str) -> list[CoordinatorRecord]:
    """An empty share group's own records, in Kafka's order (DeleteGroups)."""
    key = GroupKey(group_id=group_id)
    return [
        CoordinatorRecord(SHARE_GROUP_TARGET_ASSIGNMENT_METADATA, key, None),
        CoordinatorRecord(SHARE_GROUP_STATE_PARTITION_METADATA, key, None),
        CoordinatorRecord(SHARE_GROUP_METADATA, key, None),
    ]
