"""ConsumerGroupDescribe: a KIP-848 group, its epochs, and each member's current and target assignment."""

from __future__ import annotations

import uuid

from odradek.coordinator.consumer_group import ConsumerGroup, Partitions
from odradek.coordinator.ports import MetadataView
from odradek.coordinator.shard import GroupShard
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.consumer_group_describe import (
    Assignment,
    DescribedGroup,
    Member,
    TopicPartitions,
)

CONSUMER_MEMBER_TYPE = 1


def describe_consumer_group(shard: GroupShard, group_id: str, cluster: MetadataView) -> DescribedGroup:
    group = shard.groups.get(group_id)
    if not isinstance(group, ConsumerGroup):
        reason = "not found" if group is None else "is not a consumer group"
        return DescribedGroup(
            error_code=ErrorCode.GROUP_ID_NOT_FOUND,
            error_message=f"Group {group_id} {reason}.",
            group_id=group_id,
            group_state="Dead",
        )
    assignor = shard.consumer.preferred_assignor(group)
    members = [
        Member(
            member_id=m.member_id,
            instance_id=m.instance_id,
            rack_id=m.rack_id,
            member_epoch=m.member_epoch,
            client_id=m.client_id,
            client_host=m.client_host,
            subscribed_topic_names=list(m.subscribed_topic_names),
            subscribed_topic_regex=m.subscribed_topic_regex,
            assignment=_assignment(m.assigned, cluster),
            target_assignment=_assignment(group.target.get(m.member_id, {}), cluster),
            member_type=CONSUMER_MEMBER_TYPE,
        )
        for m in group.members.values()
    ]
    return DescribedGroup(
        error_code=ErrorCode.NONE,
        group_id=group_id,
        group_state=group.state_name,
        group_epoch=group.group_epoch,
        assignment_epoch=group.assignment_epoch,
        assignor_name=assignor,
        members=members,
    )


def _assignment(partitions: Partitions, cluster: MetadataView) -> Assignment:
    """The partitions by topic, named; a topic no longer in the metadata is left out, as Kafka does."""
    topics = []
    for topic_id, numbers in sorted(partitions.items()):
        state = cluster.topic_by_id(topic_id) if isinstance(topic_id, uuid.UUID) else None
        if state is not None:
            topics.append(
                TopicPartitions(topic_id=topic_id, topic_name=state.name, partitions=sorted(numbers))
            )
    return Assignment(topic_partitions=topics)
