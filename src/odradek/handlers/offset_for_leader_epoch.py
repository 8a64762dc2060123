"""OffsetForLeaderEpoch (key 23): where a leader epoch ends in a partition's log (KIP-101, KIP-320).

Version notes:
- v0 answers the end offset only; v1 also the epoch found (the largest epoch at or below the one asked
  for); v2 adds the current leader epoch (fencing, as Fetch does: older than the partition's is
  FENCED_LEADER_EPOCH, newer is UNKNOWN_LEADER_EPOCH; -1 skips the check) and throttle time; v3 the
  replica id (consumers send -1, followers their broker id: both are answered the same way, by
  the leader; a cluster member that does not lead the partition answers NOT_LEADER_OR_FOLLOWER);
  v4 is flexible.
- The end offset of an epoch is the start offset of the next larger epoch, or the log end offset for
  the latest one; an epoch the log does not know (newer than any, or -1) gets -1/-1 with no error.
- The leader's current epoch ends at the log end offset even before anything was written in it:
  Kafka records an epoch when a replica becomes leader, odradek's log when the epoch's first batch is
  appended.
- With an authorizer (as Kafka): a follower (replica id >= 0) needs CLUSTER_ACTION, a consumer
  DESCRIBE on the topic; else TOPIC_AUTHORIZATION_FAILED for the topic's partitions.
"""

from __future__ import annotations

from odradek.handlers._common.authorization import authorize, authorize_cluster
from odradek.handlers._common.context import RequestContext
from odradek.handlers._common.leadership import leader_epoch, refusal
from odradek.handlers._common.registry import handles
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.offset_for_leader_epoch import (
    EpochEndOffset,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    OffsetForLeaderPartition,
    OffsetForLeaderTopicResult,
)
from odradek.security.acl import AclOperation, ResourceType

NO_EPOCH = -1


@handles(ApiKey.OFFSET_FOR_LEADER_EPOCH, 0, 4)
async def handle_offset_for_leader_epoch(
    request: OffsetForLeaderEpochRequest, context: RequestContext
) -> OffsetForLeaderEpochResponse:
    follower = context.api_version >= 3 and request.replica_id >= 0
    replica_allowed = follower and authorize_cluster(context, AclOperation.CLUSTER_ACTION)
    topics = []
    for topic in request.topics:
        if follower:
            allowed = replica_allowed
        else:
            allowed = authorize(context, AclOperation.DESCRIBE, ResourceType.TOPIC, topic.topic)
        if not allowed:
            denied = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            partitions = [_failed(p.partition, denied) for p in topic.partitions]
        else:
            partitions = [_end_offset(topic.topic, p, context) for p in topic.partitions]
        topics.append(OffsetForLeaderTopicResult(topic=topic.topic, partitions=partitions))
    return OffsetForLeaderEpochResponse(topics=topics)


def _end_offset(topic: str, request: OffsetForLeaderPartition, context: RequestContext) -> EpochEndOffset:
    index = request.partition
    current = request.current_leader_epoch if context.api_version >= 2 else NO_EPOCH
    refused = refusal(context, topic, index, current)
    if refused is not None:  # followers ask the leader too, as consumers do, at their epoch
        return _failed(index, refused.error_code)
    # the epoch this broker leads at (never the cache's in a cluster: it may already be the next
    # leader's, whose epoch must not be said to end here)
    led_at = leader_epoch(context, topic, index)
    log = context.services.logs.get_log(topic, index) if led_at is not None else None
    if led_at is None or log is None:
        return _failed(index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    latest = log.latest_epoch
    if request.leader_epoch == led_at and (latest is None or latest < led_at):
        epoch, end_offset = led_at, log.log_end_offset
    else:
        epoch, end_offset = log.end_offset_for_epoch(request.leader_epoch)
    return EpochEndOffset(
        error_code=ErrorCode.NONE, partition=index, leader_epoch=epoch, end_offset=end_offset
    )


def _failed(index: int, code: ErrorCode) -> EpochEndOffset:
    return EpochEndOffset(error_code=code, partition=index, leader_epoch=NO_EPOCH, end_offset=-1)
