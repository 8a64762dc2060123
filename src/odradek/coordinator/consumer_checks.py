"""Checks of the consumer group protocol's requests, and conversions of their partition lists."""

from __future__ import annotations

from odradek.coordinator.consumer_group import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    ConsumerGroup,
    ConsumerMember,
    Partitions,
)
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.protocol.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest, TopicPartitions


def validate_heartbeat(
    request: ConsumerGroupHeartbeatRequest, api_version: int, assignors: list[str]
) -> None:
    """Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid (the regex is RE2's to judge, off the
    event loop: GroupCoordinator.consumer_group_heartbeat_committed)."""
    epoch = request.member_epoch
    if (api_version >= 1 or epoch > 0 or epoch == LEAVE_GROUP_MEMBER_EPOCH) and not request.member_id:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "MemberId can't be empty.")
    if not request.group_id:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "GroupId can't be empty.")
    if request.instance_id == "":
        raise KafkaError(ErrorCode.INVALID_REQUEST, "InstanceId can't be empty.")
    if request.rack_id == "":
        raise KafkaError(ErrorCode.INVALID_REQUEST, "RackId can't be empty.")
    if epoch == 0:
        if request.rebalance_timeout_ms == -1:
            raise KafkaError(
                ErrorCode.INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request."
            )
        if request.topic_partitions is None or request.topic_partitions:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "TopicPartitions must be empty when (re-)joining.")
        if request.subscribed_topic_names is None and request.subscribed_topic_regex is None:
            raise KafkaError(
                ErrorCode.INVALID_REQUEST,
                "SubscribedTopicNames or SubscribedTopicRegex must be set in first request.",
            )
    elif epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"MemberEpoch {epoch} is invalid.")
    if request.server_assignor is not None and request.server_assignor not in assignors:
        raise KafkaError(
            ErrorCode.UNSUPPORTED_ASSIGNOR, f"ServerAssignor {request.server_assignor} is not supported."
        )


def validate_offset_commit(group: ConsumerGroup, member_id: str, epoch: int, api_version: int) -> None:
    """Kafka's ConsumerGroup.validateOffsetCommit: `epoch` is the request's generation id or member epoch."""
    if epoch < 0 and not group.members:
        return
    member = group.members.get(member_id)
    if member is None:
        raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID)
    if api_version < 9:
        raise KafkaError(ErrorCode.UNSUPPORTED_VERSION, "OffsetCommit of a consumer group member needs v9+.")
    if epoch != member.member_epoch:
        raise KafkaError(ErrorCode.STALE_MEMBER_EPOCH)


def validate_offset_fetch(group: ConsumerGroup, member_id: str, member_epoch: int) -> None:
    if member_epoch < 0 and not member_id:
        return
    member = group.members.get(member_id)
    if member is None:
        raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID)
    if member_epoch != member.member_epoch:
        raise KafkaError(ErrorCode.STALE_MEMBER_EPOCH)


def check_epoch(member: ConsumerMember, epoch: int, owned: Partitions | None) -> None:
    """FENCED_MEMBER_EPOCH unless the epoch is the member's, or its previous one with a response lost."""
    if epoch > member.member_epoch or (
        epoch < member.member_epoch
        and (epoch != member.previous_member_epoch or not _is_subset(owned, member.assigned))
    ):
        raise KafkaError(
            ErrorCode.FENCED_MEMBER_EPOCH,
            f"The consumer group member has epoch {epoch} where the coordinator has {member.member_epoch}. "
            "The member must abandon all its partitions and rejoin.",
        )


def _is_subset(owned: Partitions | None, assigned: Partitions) -> bool:
    if owned is None:
        return False
    return all(numbers <= assigned.get(topic_id, frozenset()) for topic_id, numbers in owned.items())


def partitions_of(topics: list[TopicPartitions]) -> Partitions:
    result: Partitions = {}
    for topic in topics:
        result[topic.topic_id] = result.get(topic.topic_id, frozenset()) | frozenset(topic.partitions)
    return result


def topic_partitions_of(partitions: Partitions) -> list[TopicPartitions]:
    return [
        TopicPartitions(topic_id=topic_id, partitions=sorted(numbers))
        for topic_id, numbers in sorted(partitions.items())
        if numbers
    ]
