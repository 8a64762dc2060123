"""ListOffsets (key 2): offsets by time: earliest, latest, the first record at or after a timestamp.

Version notes:
- v0 answers a list of up to `max_num_offsets` offsets (latest: the high watermark then segment base
  offsets, newest first; earliest: the log start offset), as the classic protocol guide describes.
- v1+ answer one offset and its timestamp; -1/-1 when no record is at or after the timestamp.
- v2 isolation level: read_committed sees up to the last stable offset; a replica (replica_id >= 0)
  sees the log end. v4 leader epochs (and current-leader-epoch fencing), v6 flexible.
- Special timestamps: -1 latest, -2 earliest, -3 max timestamp (v7+), -4 earliest local (v8+, the
  same as earliest here), -5 latest tiered (v9+) and -6 earliest pending upload (v11): no tiered
  storage, so -1. v10 adds timeout_ms, which a single node never needs.
- With an authorizer: DESCRIBE on the topic, else TOPIC_AUTHORIZATION_FAILED for its partitions.
- A new leader whose high watermark has not reached the start of its epoch yet (Kafka's
  Partition.fetchOffsetForTimestamp) answers a client (v1+, not a replica) OFFSET_NOT_AVAILABLE for
  LATEST, and for a timestamp or max-timestamp lookup that finds nothing below the high watermark:
  the previous leader may have answered a higher one, and LATEST must not go backwards.
"""

from __future__ import annotations

from odradek.handlers._common.authorization import authorize
from odradek.handlers._common.context import RequestContext
from odradek.handlers._common.leadership import leader_epoch, leader_epoch_start_offset, refusal
from odradek.handlers._common.record_jobs import run_record_jobs
from odradek.handlers._common.registry import handles
from odradek.partition.errors import error_code_for
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.codec_error import CodecError
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.list_offsets import (
    ListOffsetsPartition,
    ListOffsetsPartitionResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopicResponse,
)
from odradek.security.acl import AclOperation, ResourceType
from odradek.storage.errors import StorageError
from odradek.storage.fetch import FetchIsolation
from odradek.storage.log import Log
from odradek.storage.offsets_by_time import (
    RecordSearch,
    TimestampAndOffset,
    plan_offset_by_timestamp,
    within_bound,
)

LATEST = -1
EARLIEST = -2
EARLIEST_LOCAL = -4
_NO_TIERED_STORAGE = (-5, -6)


@handles(ApiKey.LIST_OFFSETS, 0, 11)
async def handle_list_offsets(request: ListOffsetsRequest, context: RequestContext) -> ListOffsetsResponse:
    if request.replica_id >= 0:
        isolation = FetchIsolation.LOG_END
    elif context.api_version >= 2 and request.isolation_level == 1:
        isolation = FetchIsolation.TXN_COMMITTED
    else:
        isolation = FetchIsolation.HIGH_WATERMARK
    topics = []
    for topic in request.topics:
        seen: set[int] = set()
        partitions = []
        if not authorize(context, AclOperation.DESCRIBE, ResourceType.TOPIC, topic.name):
            denied = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            partitions = [_failed(partition.partition_index, denied) for partition in topic.partitions]
            topics.append(ListOffsetsTopicResponse(name=topic.name, partitions=partitions))
            continue
        for partition in topic.partitions:
            if partition.partition_index in seen:
                partitions.append(_failed(partition.partition_index, ErrorCode.INVALID_REQUEST))
                continue
            seen.add(partition.partition_index)
            partitions.append(await _lookup(topic.name, partition, isolation, context))
        topics.append(ListOffsetsTopicResponse(name=topic.name, partitions=partitions))
    return ListOffsetsResponse(topics=topics)


async def _lookup(
    topic: str, request: ListOffsetsPartition, isolation: FetchIsolation, context: RequestContext
) -> ListOffsetsPartitionResponse:
    index = request.partition_index
    refused = refusal(context, topic, index, request.current_leader_epoch)
    if refused is not None:  # offsets are the leader's to answer, at the client's epoch
        return _failed(index, refused.error_code)
    epoch = leader_epoch(context, topic, index)
    log = context.services.logs.get_log(topic, index) if epoch is not None else None
    if epoch is None or log is None:
        return _failed(index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    timestamp = request.timestamp
    if context.api_version == 0:
        return _old_style(index, log, timestamp, request.max_num_offsets, isolation)
    if timestamp in _NO_TIERED_STORAGE:
        return ListOffsetsPartitionResponse(
            partition_index=index, error_code=ErrorCode.NONE, timestamp=-1, offset=-1
        )
    if timestamp == EARLIEST_LOCAL:
        timestamp = EARLIEST
    lagging = isolation is not FetchIsolation.LOG_END and _high_watermark_lags(context, topic, index, log)
    if timestamp == LATEST and lagging:
        return _failed(index, ErrorCode.OFFSET_NOT_AVAILABLE)
    try:
        found = await _offset_by_timestamp(log, timestamp, isolation, context)
    except ValueError:
        return _failed(index, ErrorCode.INVALID_REQUEST)
    except (StorageError, CodecError) as error:
        return _failed(index, error_code_for(error))
    if found is None and lagging and timestamp != EARLIEST:
        return _failed(index, ErrorCode.OFFSET_NOT_AVAILABLE)  # it may be past the lagging HW
    if found is None:
        return ListOffsetsPartitionResponse(
            partition_index=index, error_code=ErrorCode.NONE, timestamp=-1, offset=-1
        )
    return ListOffsetsPartitionResponse(
        partition_index=index,
        error_code=ErrorCode.NONE,
        timestamp=found.timestamp,
        offset=found.offset,
        leader_epoch=found.leader_epoch if found.leader_epoch is not None else -1,
    )


async def _offset_by_timestamp(
    log: Log, timestamp: int, isolation: FetchIsolation, context: RequestContext
) -> TimestampAndOffset | None:
    """The offset for ``timestamp``: the batch found from headers and indexes here, its records
    searched in a record worker (decoding a batch of many records took seconds on the event loop)."""
    planned = plan_offset_by_timestamp(log, timestamp)
    while isinstance(planned, RecordSearch):
        found = (await run_record_jobs({0: planned}, context))[0]
        planned = found if found is not None or planned.last else planned.next_plan(log)
    return within_bound(log, planned, timestamp, isolation)


def _high_watermark_lags(context: RequestContext, topic: str, index: int, log: Log) -> bool:
    """Whether this leader's high watermark is still below where its epoch began."""
    epoch_start = leader_epoch_start_offset(context, topic, index)
    return epoch_start is not None and epoch_start > log.high_watermark


def _old_style(
    index: int, log: Log, timestamp: int, max_num_offsets: int, isolation: FetchIsolation
) -> ListOffsetsPartitionResponse:
    """v0: a list of offsets, newest first, as Kafka's fetchOffsetsBefore gave it."""
    bound = log.last_stable_offset if isolation is FetchIsolation.TXN_COMMITTED else log.high_watermark
    if timestamp == EARLIEST:
        offsets = [log.log_start_offset]
    else:
        bases = [s.base_offset for s in log.segments if s.base_offset < bound]
        if timestamp != LATEST:
            bases = [s.base_offset for s in log.segments if 0 <= s.largest_timestamp <= timestamp]
            offsets = sorted(bases, reverse=True)
        else:
            offsets = [bound, *sorted(bases, reverse=True)]
            if offsets and offsets[-1] != log.log_start_offset and log.log_start_offset < bound:
                offsets.append(log.log_start_offset)
    deduplicated = list(dict.fromkeys(offsets))[: max(max_num_offsets, 0)]
    return ListOffsetsPartitionResponse(
        partition_index=index, error_code=ErrorCode.NONE, old_style_offsets=deduplicated
    )


def _failed(index: int, code: ErrorCode) -> ListOffsetsPartitionResponse:
    return ListOffsetsPartitionResponse(partition_index=index, error_code=code, timestamp=-1, offset=-1)
