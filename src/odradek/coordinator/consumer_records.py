"""The KIP-848 consumer group records of `__consumer_offsets` (types 3-8 and 16), in Kafka 4.3's layout.

All of them are flexible from version 0 and written at version 0; tagged fields this broker does
not know are kept when read. Importing this module registers the schemas with `records.SCHEMAS`.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Final

from odradek.coordinator.records import SCHEMAS, CoordinatorRecord
from odradek.protocol.schema import Array, Bytes, Int8, Int32, Int64, Message, Nested, String, Struct, Uuid

CONSUMER_GROUP_METADATA: Final = 3
CONSUMER_GROUP_PARTITION_METADATA: Final = 4
CONSUMER_GROUP_MEMBER_METADATA: Final = 5
CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA: Final = 6
CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER: Final = 7
CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT: Final = 8
CONSUMER_GROUP_REGULAR_EXPRESSION: Final = 16

#: Partitions by topic id.
Assignment = Mapping[uuid.UUID, frozenset[int]]


class GroupKey(Message, versions="0"):
    group_id: str = String()


class GroupMemberKey(Message, versions="0"):
    group_id: str = String()
    member_id: str = String()


class GroupRegexKey(Message, versions="0"):
    group_id: str = String()
    regular_expression: str = String()


class ConsumerGroupRegularExpressionValue(Message, versions="0", flexible="0+"):
    """A subscribed regex resolved: the topics it matched (that the member who asked may describe), at
    which version of the metadata (a count of this broker's topic creations) and when."""

    topics: list[str] = Array("string")
    version: int = Int64()
    timestamp: int = Int64()


class ConsumerGroupMetadataValue(Message, versions="0", flexible="0+"):
    epoch: int = Int32()
    metadata_hash: int = Int64(tag=0, default=0)
    creation_time_ms: int = Int64(tag=1, default=-1)


class ClassicProtocol(Struct):
    name: str = String()
    metadata: bytes = Bytes()


class ClassicMemberMetadata(Struct):
    supported_protocols: list[ClassicProtocol] = Array(ClassicProtocol)


class ConsumerGroupMemberMetadataValue(Message, versions="0", flexible="0+"):
    instance_id: str | None = String(nullable="0+", default=None)
    rack_id: str | None = String(nullable="0+", default=None)
    client_id: str = String()
    client_host: str = String()
    subscribed_topic_names: list[str] = Array("string")
    subscribed_topic_regex: str | None = String(nullable="0+", default=None)
    rebalance_timeout_ms: int = Int32(default=-1)
    server_assignor: str | None = String(nullable="0+", default=None)
    classic_member_metadata: ClassicMemberMetadata | None = Nested(
        ClassicMemberMetadata, nullable="0+", default=None, tag=0
    )


class ConsumerGroupTargetAssignmentMetadataValue(Message, versions="0", flexible="0+"):
    assignment_epoch: int = Int32()


class TopicPartitions(Struct):
    topic_id: uuid.UUID = Uuid()
    partitions: list[int] = Array("int32")


class ConsumerGroupTargetAssignmentMemberValue(Message, versions="0", flexible="0+"):
    topic_partitions: list[TopicPartitions] = Array(TopicPartitions)


class ConsumerGroupCurrentMemberAssignmentValue(Message, versions="0", flexible="0+"):
    member_epoch: int = Int32()
    previous_member_epoch: int = Int32()
    state: int = Int8()
    assigned_partitions: list[TopicPartitions] = Array(TopicPartitions)
    partitions_pending_revocation: list[TopicPartitions] = Array(TopicPartitions)


SCHEMAS.update(
    {
        CONSUMER_GROUP_METADATA: (GroupKey, ConsumerGroupMetadataValue),
        CONSUMER_GROUP_PARTITION_METADATA: (GroupKey, None),  # Kafka < 4.1 wrote values; tombstones only
        CONSUMER_GROUP_MEMBER_METADATA: (GroupMemberKey, ConsumerGroupMemberMetadataValue),
        CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA: (GroupKey, ConsumerGroupTargetAssignmentMetadataValue),
        CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER: (GroupMemberKey, ConsumerGroupTargetAssignmentMemberValue),
        CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT: (GroupMemberKey, ConsumerGroupCurrentMemberAssignmentValue),
        CONSUMER_GROUP_REGULAR_EXPRESSION: (GroupRegexKey, ConsumerGroupRegularExpressionValue),
    }
)


def to_topic_partitions(assignment: Assignment) -> list[TopicPartitions]:
    return [
        TopicPartitions(topic_id=topic_id, partitions=sorted(partitions))
        for topic_id, partitions in sorted(assignment.items())
        if partitions
    ]


def from_topic_partitions(topics: list[TopicPartitions]) -> dict[uuid.UUID, frozenset[int]]:
    assignment: dict[uuid.UUID, frozenset[int]] = {}
    for topic in topics:
        if topic.partitions:
            assignment[topic.topic_id] = assignment.get(topic.topic_id, frozenset()) | frozenset(
                topic.partitions
            )
    return assignment


def group_epoch_record(group_id: str, epoch: int, metadata_hash: int) -> CoordinatorRecord:
    value = ConsumerGroupMetadataValue(epoch=epoch, metadata_hash=metadata_hash)
    return CoordinatorRecord(CONSUMER_GROUP_METADATA, GroupKey(group_id=group_id), value)


def member_metadata_record(
    group_id: str, member_id: str, value: ConsumerGroupMemberMetadataValue
) -> CoordinatorRecord:
    key = GroupMemberKey(group_id=group_id, member_id=member_id)
    return CoordinatorRecord(CONSUMER_GROUP_MEMBER_METADATA, key, value)


def target_assignment_epoch_record(group_id: str, epoch: int) -> CoordinatorRecord:
    value = ConsumerGroupTargetAssignmentMetadataValue(assignment_epoch=epoch)
    return CoordinatorRecord(CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA, GroupKey(group_id=group_id), value)


def target_assignment_record(group_id: str, member_id: str, assignment: Assignment) -> CoordinatorRecord:
    value = ConsumerGroupTargetAssignmentMemberValue(topic_partitions=to_topic_partitions(assignment))
    key = GroupMemberKey(group_id=group_id, member_id=member_id)
    return CoordinatorRecord(CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER, key, value)


def current_assignment_record(
    group_id: str,
    member_id: str,
    member_epoch: int,
    previous_member_epoch: int,
    state: int,
    assigned: Assignment,
    pending_revocation: Assignment,
) -> CoordinatorRecord:
    value = ConsumerGroupCurrentMemberAssignmentValue(
        member_epoch=member_epoch,
        previous_member_epoch=previous_member_epoch,
        state=state,
        assigned_partitions=to_topic_partitions(assigned),
        partitions_pending_revocation=to_topic_partitions(pending_revocation),
    )
    key = GroupMemberKey(group_id=group_id, member_id=member_id)
    return CoordinatorRecord(CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT, key, value)


def regex_record(
    group_id: str, regex: str, topics: frozenset[str] | None, version: int = 0, timestamp: int = 0
) -> CoordinatorRecord:
    """A regex's resolution, or with `topics` None its tombstone (no member subscribes to it)."""
    key = GroupRegexKey(group_id=group_id, regular_expression=regex)
    if topics is None:
        return CoordinatorRecord(CONSUMER_GROUP_REGULAR_EXPRESSION, key, None)
    value = ConsumerGroupRegularExpressionValue(topics=sorted(topics), version=version, timestamp=timestamp)
    return CoordinatorRecord(CONSUMER_GROUP_REGULAR_EXPRESSION, key, value)


def member_tombstones(group_id: str, member_id: str) -> list[CoordinatorRecord]:
    """A departing member's records, in Kafka's order: current assignment, target, subscription."""
    key = GroupMemberKey(group_id=group_id, member_id=member_id)
    return [
        CoordinatorRecord(CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT, key, None),
        CoordinatorRecord(CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER, key, None),
        CoordinatorRecord(CONSUMER_GROUP_MEMBER_METADATA, key, None),
    ]


def group_tombstones(group_id: str) -> list[CoordinatorRecord]:
    """An empty consumer group's own records, in Kafka's order."""
    key = GroupKey(group_id=group_id)
    return [
        CoordinatorRecord(CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA, key, None),
        CoordinatorRecord(CONSUMER_GROUP_PARTITION_METADATA, key, None),
        CoordinatorRecord(CONSUMER_GROUP_METADATA, key, None),
    ]
