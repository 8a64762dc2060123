"""Produce (key 0): append record batches to partitions.

Version notes:
- v0-1 carry MessageSet v0, v2 MessageSet v1 (and a log-append time in the response); both are
  converted up to one RecordBatch v2 before they are appended, since the log stores v2 only.
- v3+ must carry exactly one RecordBatch v2 per partition (none, another magic or a second batch is
  INVALID_RECORD, nothing appended; before v7, ZSTD is UNSUPPORTED_COMPRESSION_TYPE), checked as Kafka's
  ProduceRequest.validateRecords checks it, and may name a transactional id.
  A transactional batch is appended only for a partition added to its producer's ongoing transaction
  with that epoch (INVALID_TXN_STATE otherwise, INVALID_PRODUCER_EPOCH for a fenced epoch, as Kafka
  3.x's partition verification answers; `transaction.partition.verification.enable`).
- v5 adds the log start offset, v8 per-record errors (KIP-467: the batch still fails whole, but
  `record_errors` names the keyless records of a compacted topic, or those out of the timestamp
  bounds, so clients can tell them from the rest) and an error message, v9 flexible, v10 the
  current leader and node endpoints (tagged, only on NOT_LEADER errors: never sent by a single node),
  v13 topic ids instead of names.
- A partition named twice in one request is appended and answered once, with its last records (Kafka
  keys the request by topic partition).
- acks=0 gets no response at all, unless a partition failed: then the connection is closed, as Kafka
  closes it, so that the producer notices and refreshes its metadata (the other partitions are still
  appended). acks=-1 fails with NOT_ENOUGH_REPLICAS (nothing appended) when the ISR is smaller than
  `min.insync.replicas` (in a cluster, than Kafka's min(min.insync.replicas, replication factor)); else
  it appends and waits for the in-sync replicas (on a single node, itself)
  up to timeout_ms: see delayed_produce.py. The connection handles one request at a time, as Kafka's
  muted channel does, so the responses stay in request order.
- With an authorizer: a transactional Produce needs WRITE on its transactional id, else every partition
  is TRANSACTIONAL_ID_AUTHORIZATION_FAILED (as Kafka's KafkaApis); then WRITE on each topic (one check
  per topic), else TOPIC_AUTHORIZATION_FAILED for its partitions, before its existence is looked at. As
  Kafka 3.x (KIP-679) an idempotent producer's right is checked once, at InitProducerId, not on every
  Produce.
The batch is validated at batch level only (sizes, CRC-32C, header rules) and its offsets are
patched in place by storage; no record is decoded on this path except for compacted topics' keys and,
when `message.timestamp.before.max.ms` is set, CreateTime timestamps (the header's max timestamp
checks `message.timestamp.after.max.ms`, one hour by default as in Kafka 4): INVALID_TIMESTAMP.
A topic whose `compression.type` names a codec stores a batch in another codec rewritten in it (its
records' bytes kept, the header too but for codec, length and CRC): the rewriting runs in a worker
thread before the append, and a rewritten batch over `max.message.bytes` is MESSAGE_TOO_LARGE.
"""

from __future__ import annotations

import asyncio

from odradek.handlers.authorization import authorize
from odradek.handlers.context import CloseConnection, RequestContext
from odradek.handlers.delayed_produce import AwaitingReplicas, wait_for_replicas
from odradek.handlers.errors import resource_failure
from odradek.handlers.leadership import leader_endpoints, leader_epoch, refusal
from odradek.handlers.registry import handles
from odradek.handlers.transactions import verify_transactional_produce
from odradek.handlers.txn_verification import Verdicts
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.codec_error import CodecError
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.produce import (
    BatchIndexAndErrorMessage,
    LeaderIdAndEpoch,
    NodeEndpoint,
    PartitionProduceData,
    PartitionProduceResponse,
    ProduceRequest,
    ProduceResponse,
    TopicProduceData,
    TopicProduceResponse,
)
from odradek.protocol.records import Compression, UnsupportedCompressionError, up_convert_message_set
from odradek.protocol.records.attributes import LOG_OVERHEAD, compression_of
from odradek.security.acl import AclOperation, ResourceType
from odradek.storage import errors as storage_errors
from odradek.storage import recompression
from odradek.storage.config import LogConfig
from odradek.storage.log import Log
from odradek.storage.partition import TopicPartition
from odradek.storage.recompression import RecompressedBatches

_MAGIC_OFFSET = 16
_LENGTH_OFFSET = 8
_ATTRIBUTES_OFFSET = 21
#: The smallest length a batch can declare (LegacyRecord.RECORD_OVERHEAD_V0, which Kafka checks first).
_MIN_RECORD_OVERHEAD = 14
_VALID_ACKS = (-1, 0, 1)


@handles(ApiKey.PRODUCE, 0, 13)
async def handle_produce(request: ProduceRequest, context: RequestContext) -> ProduceResponse | None:
    services = context.services
    responses = []
    appended: list[Log] = []
    awaiting: list[AwaitingReplicas] = []
    transactional_allowed = request.transactional_id is None or authorize(
        context, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id
    )
    # In a cluster, transactional partitions whose coordinator is another broker are verified there
    # first (KIP-890 part 1), for the whole request at once.
    verifier = services.txn_verifier
    verdicts = await verifier.verify(request, context) if verifier is not None else None
    topics: list[tuple[TopicProduceData, str | None, ErrorCode, bool]] = []
    for topic in _last_records_per_partition(request.topic_data, context.api_version):
        if context.api_version >= 13:
            state = services.cluster.topic_by_id(topic.topic_id)
            name = state.name if state is not None else None
            missing = ErrorCode.UNKNOWN_TOPIC_ID
        else:
            name = topic.name
            missing = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        allowed = transactional_allowed and (
            name is None or authorize(context, AclOperation.WRITE, ResourceType.TOPIC, name)
        )
        topics.append((topic, name, missing, allowed))
    recompressed = await _recompress_off_the_loop(topics, context)
    denied = (
        ErrorCode.TOPIC_AUTHORIZATION_FAILED
        if transactional_allowed
        else ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    )
    for topic, name, missing, allowed in topics:
        partitions = []
        for data in topic.partition_data:
            if not allowed:
                partitions.append(_failed(data.index, denied))
            elif name is None:
                partitions.append(_failed(data.index, missing))
            else:
                prepared = recompressed.get((name, data.index))
                partitions.append(
                    _append(name, data, request, context, appended, awaiting, verdicts, prepared)
                )
        responses.append(
            TopicProduceResponse(name=topic.name, topic_id=topic.topic_id, partition_responses=partitions)
        )
    await _flush_if_due(appended)
    if awaiting:
        await wait_for_replicas(awaiting, request.timeout_ms, context.services)
    if request.acks == 0:
        _close_if_failed(responses)
        return None
    return ProduceResponse(responses=responses, node_endpoints=_leaders_named(responses, context))


async def _recompress_off_the_loop(
    topics: list[tuple[TopicProduceData, str | None, ErrorCode, bool]], context: RequestContext
) -> dict[tuple[str, int], RecompressedBatches]:
    """The batches the log would rewrite in its topic's codec (compression.type), rewritten first by the
    recompression workers: compressing can take seconds (a large batch at a high zstd level), which on
    the event loop would hold every connection. Only for topics the request may write; the append uses
    a result only if it was made from the same batches for the codec and level the topic still has, and
    rewrites them itself otherwise (or for a message set, converted up on the loop)."""
    work: list[tuple[tuple[str, int], memoryview | bytes, LogConfig]] = []
    for topic, name, _, allowed in topics:
        if not allowed or name is None:
            continue
        for data in topic.partition_data:
            log = context.services.logs.get_log(name, data.index)
            if (
                log is not None
                and data.records
                and recompression.needs_recompression(data.records, log.config)
            ):
                work.append(((name, data.index), data.records, log.config))
    if not work:
        return {}
    return await asyncio.wrap_future(context.services.recompression.prepare(work))


def _leaders_named(responses: list[TopicProduceResponse], context: RequestContext) -> list[NodeEndpoint]:
    """v10+ (KIP-951): the endpoints of the leaders that NOT_LEADER_OR_FOLLOWER answers point to."""
    if context.services.replicas is None:
        return []
    named = (
        p.current_leader.leader_id
        for topic in responses
        for p in topic.partition_responses
        if p.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    )
    return [
        NodeEndpoint(node_id=b.node_id, host=b.host, port=b.port, rack=b.rack)
        for b in leader_endpoints(context, named)
    ]


def _last_records_per_partition(topics: list[TopicProduceData], api_version: int) -> list[TopicProduceData]:
    """The request's partitions, each once. Kafka keys a produce by topic partition (a map), so a
    partition named twice has only its last records appended, and is answered once."""
    keys = [
        (topic.topic_id if api_version >= 13 else topic.name, data.index)
        for topic in topics
        for data in topic.partition_data
    ]
    if len(set(keys)) == len(keys) and len({key for key, _ in keys}) == len(topics):
        return topics  # the usual request: nothing named twice
    merged: dict[object, TopicProduceData] = {}
    partitions: dict[object, dict[int, PartitionProduceData]] = {}
    for topic in topics:
        key = topic.topic_id if api_version >= 13 else topic.name
        merged.setdefault(key, topic)
        for data in topic.partition_data:
            partitions.setdefault(key, {})[data.index] = data
    return [
        TopicProduceData(
            name=topic.name, topic_id=topic.topic_id, partition_data=list(partitions.get(key, {}).values())
        )
        for key, topic in merged.items()
    ]


def _close_if_failed(responses: list[TopicProduceResponse]) -> None:
    """acks=0 has no response to carry an error, so any failed partition closes the connection (Kafka's
    KafkaApis.handleProduceRequest): the producer sees the disconnect and refreshes its metadata."""
    failed = [
        f"{topic.name or topic.topic_id}-{partition.index}: {ErrorCode(partition.error_code).name}"
        for topic in responses
        for partition in topic.partition_responses
        if partition.error_code != ErrorCode.NONE
    ]
    if failed:
        raise CloseConnection(f"produce with acks=0 failed for {', '.join(failed)}")


async def _flush_if_due(logs: list[Log]) -> None:
    """fsync the logs whose flush.messages / flush.ms is due, off the loop, before acknowledging."""
    for log in logs:
        if log.flush_needed():
            job = log.prepare_flush()
            if job is not None:
                await asyncio.to_thread(job.run)
                log.complete_flush(job)


def _append(
    topic: str,
    data: PartitionProduceData,
    request: ProduceRequest,
    context: RequestContext,
    appended: list[Log],
    awaiting: list[AwaitingReplicas],
    verdicts: Verdicts | None = None,
    recompressed: RecompressedBatches | None = None,
) -> PartitionProduceResponse:
    services = context.services
    tp = TopicPartition(topic, data.index)
    refused = refusal(context, topic, data.index)
    if refused is not None:  # ZooKeeper mode: only the partition's leader appends
        failed = _failed(data.index, refused.error_code)
        failed.current_leader = LeaderIdAndEpoch(
            leader_id=refused.leader_id, leader_epoch=refused.leader_epoch
        )
        return failed
    log = services.logs.get_log(topic, data.index)
    partition = services.cluster.partition(topic, data.index)
    # Stamped on the batches: the epoch this broker leads at, not the cache's (handlers/leadership.py)
    epoch = leader_epoch(context, topic, data.index)
    if log is None or partition is None or epoch is None:
        return _failed(data.index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    records = data.records
    if context.api_version >= 3:
        try:
            _validate_records(records, context.api_version)
        except (storage_errors.StorageError, CodecError) as error:
            return _failed(data.index, *resource_failure(error, context, f"{topic}-{data.index}"))
    elif not records:
        return _failed(data.index, ErrorCode.CORRUPT_MESSAGE, "produce request without records")
    if request.acks not in _VALID_ACKS:  # checked after the records, as Kafka's ReplicaManager does
        return _failed(data.index, ErrorCode.INVALID_REQUIRED_ACKS)
    state = services.cluster.topic(topic)
    if state is not None and state.is_internal:  # only the coordinators write there, not via Produce
        return _failed(
            data.index, ErrorCode.INVALID_TOPIC_EXCEPTION, f"cannot produce to internal topic {topic}"
        )
    if request.acks == -1 and _under_min_isr(topic, data.index, partition.isr, context):
        return _failed(data.index, ErrorCode.NOT_ENOUGH_REPLICAS)
    assert records is not None  # checked above for every version
    try:
        batches = _as_record_batches(records, context.api_version)
        unverified = verify_transactional_produce(context, topic, data.index, batches, verdicts)
        if unverified is not ErrorCode.NONE:
            return _failed(data.index, unverified)
        result = log.append(batches, leader_epoch=epoch, recompressed=recompressed)
    except storage_errors.DuplicateSequenceError as duplicate:
        # An idempotent retry of a batch already in the log: success, with the offsets it got then;
        # with acks=all only once the ISR has it (the first attempt may have timed out waiting).
        response = PartitionProduceResponse(
            index=data.index,
            error_code=ErrorCode.NONE,
            base_offset=duplicate.base_offset,
            log_append_time_ms=-1,
            log_start_offset=duplicate.log_start_offset,
        )
        _await_replicas_if_needed(tp, log, duplicate.last_offset, request, context, awaiting, response)
        return response
    except (storage_errors.StorageError, CodecError) as error:  # a failed disk is logged there
        failed = _failed(data.index, *resource_failure(error, context, f"{topic}-{data.index}"))
        failed.record_errors = _record_errors(error)
        return failed
    services.appends.notify(tp)
    appended.append(log)
    if services.traffic is not None:
        services.traffic.produced(topic, len(batches), result.records_count)
    response = PartitionProduceResponse(
        index=data.index,
        error_code=ErrorCode.NONE,
        base_offset=result.base_offset,
        log_append_time_ms=result.log_append_time,
        log_start_offset=result.log_start_offset,
    )
    _await_replicas_if_needed(tp, log, result.last_offset, request, context, awaiting, response)
    return response


def _under_min_isr(topic: str, index: int, cached_isr: list[int], context: RequestContext) -> bool:
    """acks=all's refusal: in a cluster, Kafka's effective minimum min(min.insync.replicas, replication
    factor) over the leader's ISR; on a single node, min.insync.replicas over the one replica."""
    min_insync = context.services.topics.min_insync_replicas(topic)
    replicas = context.services.replicas
    if replicas is None:
        return len(cached_isr) < min_insync
    return replicas.under_min_isr(topic, index)


def _await_replicas_if_needed(
    tp: TopicPartition,
    log: Log,
    last_offset: int,
    request: ProduceRequest,
    context: RequestContext,
    awaiting: list[AwaitingReplicas],
    response: PartitionProduceResponse,
) -> None:
    """acks=all in a cluster: the answer waits until the high watermark passes `last_offset`."""
    replicas = context.services.replicas
    if request.acks != -1 or replicas is None or log.high_watermark > last_offset:
        return
    hosted = replicas.leading.get((tp.topic, tp.partition))
    if hosted is not None:
        awaiting.append(AwaitingReplicas(tp, log, last_offset + 1, hosted.leader_epoch, response))


def _validate_records(records: bytes | memoryview | None, api_version: int) -> None:
    """Kafka's ProduceRequest.validateRecords for v3+: exactly one whole batch, of magic 2, per partition.

    Batches are counted as Kafka's batch iterator counts them: a trailing fragment too short to be a
    whole batch is not a second batch (storage refuses it later), and a first batch cut short is none."""
    view = memoryview(records or b"")
    first = _next_batch_size(view, 0)
    if first is None:
        raise storage_errors.InvalidRecordError(
            f"Produce requests with version {api_version} must have at least one record batch per partition"
        )
    if view[_MAGIC_OFFSET] != 2:
        raise storage_errors.InvalidRecordError(
            f"Produce requests with version {api_version} are only allowed to contain record batches "
            "with magic version 2"
        )
    if api_version < 7 and compression_of(
        int.from_bytes(view[_ATTRIBUTES_OFFSET : _ATTRIBUTES_OFFSET + 2])
    ) is (Compression.ZSTD):
        raise UnsupportedCompressionError(
            f"Produce requests with version {api_version} are not allowed to use ZStandard compression"
        )
    if _next_batch_size(view, first) is not None:
        raise storage_errors.InvalidRecordError(
            f"Produce requests with version {api_version} are only allowed to contain exactly one record "
            "batch per partition"
        )


def _next_batch_size(records: memoryview, position: int) -> int | None:
    """The size of the whole batch at `position`, or None when it is not all there (Kafka's
    ByteBufferLogInputStream.nextBatchSize and nextBatch); a size or magic no batch can have is corrupt."""
    remaining = len(records) - position
    if remaining < LOG_OVERHEAD:
        return None
    length = int.from_bytes(records[position + _LENGTH_OFFSET : position + LOG_OVERHEAD], signed=True)
    if length < _MIN_RECORD_OVERHEAD:
        raise storage_errors.CorruptRecordError(
            f"Record size {length} is less than the minimum record overhead ({_MIN_RECORD_OVERHEAD})"
        )
    if remaining <= _MAGIC_OFFSET:
        return None
    magic = records[position + _MAGIC_OFFSET]
    if magic > 2:  # also a negative magic, read here unsigned
        raise storage_errors.CorruptRecordError(
            f"Invalid magic found in record: {int.from_bytes([magic], signed=True)}"
        )
    size = LOG_OVERHEAD + length
    return size if remaining >= size else None


def _as_record_batches(records: bytes | memoryview, api_version: int) -> bytearray | memoryview:
    """The records as v2 batches in a mutable buffer (storage patches offsets into it).

    Records decoded from a request frame the connection received into a bytearray are a writable view
    of that frame, which is this request's own: they are patched and written where they are."""
    if len(records) <= _MAGIC_OFFSET:
        raise storage_errors.CorruptRecordError("records shorter than a batch header")
    magic = records[_MAGIC_OFFSET]
    if magic == 2:
        if isinstance(records, memoryview) and not records.readonly:
            return records
        return bytearray(records)
    if api_version >= 3 or magic > 2:
        raise storage_errors.InvalidRecordError(
            f"produce v{api_version} must carry RecordBatch v2, not magic {magic}"
        )
    return bytearray(up_convert_message_set(records, base_offset=0))


def _record_errors(error: BaseException) -> list[BatchIndexAndErrorMessage]:
    """KIP-467's per-record errors (v8+): which records of the batch made it fail, and why."""
    if not isinstance(error, storage_errors.InvalidRecordError | storage_errors.InvalidTimestampError):
        return []
    return [
        BatchIndexAndErrorMessage(batch_index=e.batch_index, batch_index_error_message=e.message)
        for e in error.record_errors
    ]


def _failed(index: int, code: ErrorCode, message: str | None = None) -> PartitionProduceResponse:
    return PartitionProduceResponse(index=index, error_code=code, base_offset=-1, error_message=message)
