"""DescribeShareGroupOffsets (90), AlterShareGroupOffsets (91), DeleteShareGroupOffsets (92): a share
group's start offsets for the admin client and kafka-share-groups.sh.

Version notes:
- DescribeShareGroupOffsets: a null topic list describes every partition whose state the group has;
  a partition never initialised answers start offset -1. v1 adds each partition's lag (KIP-1226): its
  end offset (its leader's high watermark) less the start offset and the records past it delivered for
  good; -1 while the start offset or that count is unknown; a partition whose leader cannot tell its end
  answers that error (coordinator/share_offsets.py), as Kafka 4.4.
- Alter and Delete need an empty group (NON_EMPTY_GROUP); an unknown group or one of another type is
  GROUP_ID_NOT_FOUND; a topic the group has no state for, UNKNOWN_TOPIC_OR_PARTITION.
- Served when share groups are (group.coordinator.rebalance.protocols has 'share', and the broker runs
  the share coordinator); UNSUPPORTED_VERSION otherwise.
- With an authorizer (as Kafka 4): describe needs DESCRIBE on the group and on each topic, alter and
  delete READ on both; else GROUP_AUTHORIZATION_FAILED, or TOPIC_AUTHORIZATION_FAILED for the topic.
"""

from __future__ import annotations

import uuid

from odradek.coordinator.share_offsets import PartitionOffset, ShareOffsets, TopicOffsets
from odradek.handlers._common.authorization import authorize, authorize_group
from odradek.handlers._common.context import RequestContext
from odradek.handlers._common.registry import handles
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.protocol.messages import alter_share_group_offsets as alter
from odradek.protocol.messages import delete_share_group_offsets as delete
from odradek.protocol.messages import describe_share_group_offsets as describe
from odradek.security.acl import AclOperation, ResourceType

_NO_TOPIC = uuid.UUID(int=0)


@handles(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 0, 1)
async def handle_describe_share_group_offsets(
    request: describe.DescribeShareGroupOffsetsRequest, context: RequestContext
) -> describe.DescribeShareGroupOffsetsResponse:
    groups = []
    for asked in request.groups:
        answer = describe.DescribeShareGroupOffsetsResponseGroup(group_id=asked.group_id, topics=[])
        groups.append(answer)
        try:
            offsets = _offsets(context)
            if not asked.group_id:
                raise KafkaError(ErrorCode.INVALID_GROUP_ID)
            if not authorize_group(context, asked.group_id, AclOperation.DESCRIBE):
                raise KafkaError(ErrorCode.GROUP_AUTHORIZATION_FAILED)
            wanted = (
                None if asked.topics is None else {t.topic_name: list(t.partitions) for t in asked.topics}
            )
            denied = {n for n in wanted or () if not _may(context, AclOperation.DESCRIBE, n)}
            for name in denied:
                assert wanted is not None
                answer.topics.append(_denied_topic(name, wanted.pop(name)))
            described = await offsets.describe(asked.group_id, wanted)
        except KafkaError as error:
            answer.error_code, answer.error_message = error.error_code, error.error_message
            continue
        answer.topics += [
            describe.DescribeShareGroupOffsetsResponseTopic(
                topic_name=topic.name,
                topic_id=topic.topic_id,
                partitions=[
                    describe.DescribeShareGroupOffsetsResponsePartition(
                        partition_index=p.partition,
                        start_offset=p.start_offset,
                        leader_epoch=p.leader_epoch,
                        lag=p.lag,
                        error_code=p.error,
                    )
                    for p in topic.partitions
                ],
            )
            for topic in described
            if _may(context, AclOperation.DESCRIBE, topic.name)
        ]
    return describe.DescribeShareGroupOffsetsResponse(groups=groups)


@handles(ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, 0)
async def handle_alter_share_group_offsets(
    request: alter.AlterShareGroupOffsetsRequest, context: RequestContext
) -> alter.AlterShareGroupOffsetsResponse:
    try:
        offsets = _offsets(context)
        _check_group(request.group_id, context)
        wanted = {
            t.topic_name: {p.partition_index: p.start_offset for p in t.partitions} for t in request.topics
        }
        denied = {
            name: wanted.pop(name) for name in list(wanted) if not _may(context, AclOperation.READ, name)
        }
        altered = await offsets.alter(request.group_id, wanted)
    except KafkaError as error:
        return alter.AlterShareGroupOffsetsResponse(
            error_code=error.error_code, error_message=error.error_message
        )
    topics = [
        *altered,
        *(_refused(name, list(p), ErrorCode.TOPIC_AUTHORIZATION_FAILED) for name, p in denied.items()),
    ]
    return alter.AlterShareGroupOffsetsResponse(
        responses=[
            alter.AlterShareGroupOffsetsResponseTopic(
                topic_name=topic.name,
                topic_id=topic.topic_id,
                partitions=[
                    alter.AlterShareGroupOffsetsResponsePartition(
                        partition_index=p.partition, error_code=p.error
                    )
                    for p in topic.partitions
                ],
            )
            for topic in topics
        ]
    )


@handles(ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, 0)
async def handle_delete_share_group_offsets(
    request: delete.DeleteShareGroupOffsetsRequest, context: RequestContext
) -> delete.DeleteShareGroupOffsetsResponse:
    try:
        offsets = _offsets(context)
        _check_group(request.group_id, context)
        names = [t.topic_name for t in request.topics]
        allowed = [n for n in names if _may(context, AclOperation.READ, n)]
        deleted = await offsets.delete(request.group_id, allowed)
    except KafkaError as error:
        return delete.DeleteShareGroupOffsetsResponse(
            error_code=error.error_code, error_message=error.error_message
        )
    denied = [
        TopicOffsets(n, _NO_TOPIC, [], ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        for n in names
        if n not in allowed
    ]
    return delete.DeleteShareGroupOffsetsResponse(
        responses=[
            delete.DeleteShareGroupOffsetsResponseTopic(
                topic_name=topic.name, topic_id=topic.topic_id, error_code=topic.error
            )
            for topic in [*deleted, *denied]
        ]
    )


def _offsets(context: RequestContext) -> ShareOffsets:
    coordinator = context.services.groups
    if coordinator is None:
        raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    if not coordinator.share.enabled or coordinator.share.offsets is None:
        raise KafkaError(ErrorCode.UNSUPPORTED_VERSION, "Share groups are not served by this broker.")
    return coordinator.share.offsets


def _check_group(group_id: str, context: RequestContext) -> None:
    if not group_id:
        raise KafkaError(ErrorCode.INVALID_GROUP_ID)
    if not authorize_group(context, group_id, AclOperation.READ):
        raise KafkaError(ErrorCode.GROUP_AUTHORIZATION_FAILED)


def _may(context: RequestContext, operation: AclOperation, topic: str) -> bool:
    return authorize(context, operation, ResourceType.TOPIC, topic)


def _denied_topic(name: str, partitions: list[int]) -> describe.DescribeShareGroupOffsetsResponseTopic:
    return describe.DescribeShareGroupOffsetsResponseTopic(
        topic_name=name,
        topic_id=_NO_TOPIC,
        partitions=[
            describe.DescribeShareGroupOffsetsResponsePartition(
                partition_index=p,
                start_offset=-1,
                leader_epoch=-1,
                error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
            )
            for p in partitions
        ],
    )


def _refused(name: str, partitions: list[int], error: ErrorCode) -> TopicOffsets:
    return TopicOffsets(name, _NO_TOPIC, [PartitionOffset(p, -1, -1, error) for p in partitions])
