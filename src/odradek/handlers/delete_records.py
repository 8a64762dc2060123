"""DeleteRecords (key 21): move partitions' log start offsets up (KIP-107).

Version notes:
- v0 and v1 are the same (v1: throttling after the response); v2 is flexible.
- An offset of -1 means the high watermark; any other negative offset, or one above the high
  watermark, is OFFSET_OUT_OF_RANGE. The answer's low watermark is the new log start offset (-1 with
  an error). Whole segments below it go at the next retention check; reads below it are out of range.
- Internal topics are refused (INVALID_TOPIC_EXCEPTION), and so are topics whose cleanup.policy does
  not include delete (POLICY_VIOLATION), as in Kafka. A partition named twice is answered once, for
  the last offset asked.
- On a single node the low watermark is reached at once, so timeout_ms is never needed.
- With an authorizer: DELETE on the topic, else TOPIC_AUTHORIZATION_FAILED for its partitions.
"""

from __future__ import annotations

from odradek.handlers._common.authorization import authorize
from odradek.handlers._common.context import RequestContext
from odradek.handlers._common.leadership import refusal
from odradek.handlers._common.registry import handles
from odradek.partition.delete_records import delete_records
from odradek.partition.errors import error_code_for
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.protocol.messages.delete_records import (
    DeleteRecordsPartitionResult,
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    DeleteRecordsTopicResult,
)
from odradek.security.acl import AclOperation, ResourceType
from odradek.storage.errors import StorageError


@handles(ApiKey.DELETE_RECORDS, 0, 2)
async def handle_delete_records(
    request: DeleteRecordsRequest, context: RequestContext
) -> DeleteRecordsResponse:
    wanted: dict[str, dict[int, int]] = {}
    for topic in request.topics:
        offsets = wanted.setdefault(topic.name, {})
        for partition in topic.partitions:
            offsets[partition.partition_index] = partition.offset
    topics = []
    for name, offsets in wanted.items():
        if authorize(context, AclOperation.DELETE, ResourceType.TOPIC, name):
            partitions = [_delete(name, index, offset, context) for index, offset in offsets.items()]
        else:
            partitions = [_failed(index, ErrorCode.TOPIC_AUTHORIZATION_FAILED) for index in offsets]
        topics.append(DeleteRecordsTopicResult(name=name, partitions=partitions))
    return DeleteRecordsResponse(topics=topics)


def _delete(topic: str, index: int, offset: int, context: RequestContext) -> DeleteRecordsPartitionResult:
    services = context.services
    refused = refusal(context, topic, index)
    if refused is not None:  # ZooKeeper mode: the leader moves the log start offset
        return _failed(index, refused.error_code)
    state = services.cluster.topic(topic)
    log = services.logs.get_log(topic, index) if services.cluster.partition(topic, index) else None
    if state is None or log is None:
        return _failed(index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    if state.is_internal:
        return _failed(index, ErrorCode.INVALID_TOPIC_EXCEPTION)
    try:  # the leader, cleanup-policy and offset rules are partition/'s
        low_watermark = delete_records(services.leadership, services.logs, topic, index, offset)
    except KafkaError as refused_there:
        return _failed(index, refused_there.error_code)
    except StorageError as error:
        return _failed(index, error_code_for(error))
    return DeleteRecordsPartitionResult(
        partition_index=index, low_watermark=low_watermark, error_code=ErrorCode.NONE
    )


def _failed(index: int, code: ErrorCode) -> DeleteRecordsPartitionResult:
    return DeleteRecordsPartitionResult(partition_index=index, low_watermark=-1, error_code=code)
