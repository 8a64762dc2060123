"""Produce (key 0): append record batches to partitions.

Version notes:
- v0-1 carry MessageSet v0, v2 MessageSet v1 (and a log-append time in the response); both are
  converted up to one RecordBatch v2 before they are appended, since the log stores v2 only, under
  Kafka's LogValidator rules (a compressed wrapper is the only message, one magic throughout). A
  v0-2 request carrying RecordBatch v2 instead may carry one batch per partition, as LogValidator
  holds it (a second is INVALID_RECORD).
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
  Produce. Transactional records (a partition's first batch) in a request with no transactional id
  are TRANSACTIONAL_ID_AUTHORIZATION_FAILED, authorizer or not (Kafka's KafkaApis).
Every refusal that needs no record comes first (partition/produce_admission.py), then the record work
some partitions need (partition/produce_records.py), in the record workers, never on the event loop:
a batch in another codec than its topic's `compression.type` is rewritten in it (its records walked
and checked, as Kafka's LogValidator rebuilds it; a rewritten batch over `max.message.bytes` is
MESSAGE_TOO_LARGE), a compacted topic's records are read for their keys, CreateTime records for the
timestamp bounds when the header alone does not settle them (INVALID_TIMESTAMP; the header's max
timestamp checks `message.timestamp.after.max.ms`, one hour by default as in Kafka 4), and an old
producer's message set is converted up in the topic's codec. Other batches are validated at batch
level only (sizes, CRC-32C, header rules) and their offsets patched in place by storage.
"""

from __future__ import annotations

from odradek.handlers._common.authorization import authorize
from odradek.handlers._common.context import CloseConnection, RequestContext
from odradek.handlers._common.leadership import leader_endpoints
from odradek.handlers._common.record_jobs import run_record_jobs
from odradek.handlers._common.registry import handles
from odradek.partition.errors import resource_failure
from odradek.partition.hosted_partition import PartitionKey
from odradek.partition.leader_append import LeaderAppend
from odradek.partition.produce_admission import Admitted, ProduceAdmission, failed_response
from odradek.partition.produce_records import record_jobs, stale
from odradek.partition.txn_verification import ProducedPartitions, transactional_producer
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.codec_error import CodecError
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.protocol.messages.produce import (
    BatchIndexAndErrorMessage,
    NodeEndpoint,
    PartitionProduceData,
    PartitionProduceResponse,
    ProduceRequest,
    ProduceResponse,
    TopicProduceData,
    TopicProduceResponse,
)
from odradek.security.acl import AclOperation, ResourceType
from odradek.storage import errors as storage_errors
from odradek.storage.partition import TopicPartition
from odradek.storage.prepared_appends import PreparedAppend
from odradek.storage.producer_state import AppendOrigin


@handles(ApiKey.PRODUCE, 0, 13)
async def handle_produce(request: ProduceRequest, context: RequestContext) -> ProduceResponse | None:
    services = context.services
    appended: list[tuple[LeaderAppend, PartitionProduceResponse]] = []
    # As Kafka's KafkaApis: transactional records need the request's transactional id (else any client
    # could append in an ongoing transaction's name), and WRITE on it.
    transactional_allowed = (
        authorize(context, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id)
        if request.transactional_id is not None
        else not _has_transactional_records(request)
    )
    # In a cluster, transactional partitions whose coordinator is another broker are verified there
    # first (KIP-890 part 1), for the whole request at once.
    verification = services.txn_verification
    verdicts = (
        await verification.verify(
            request.transactional_id, services.transactions, _partitions_by_name(request, context)
        )
        if verification is not None
        else None
    )
    admission = ProduceAdmission(
        leadership=services.leadership,
        logs=services.logs,
        metadata=services.cluster,
        transactions=services.transactions,
        context=context,
        api_version=context.api_version,
        acks=request.acks,
        transactional_id=request.transactional_id,
        verdicts=verdicts,
    )
    denied = (
        ErrorCode.TOPIC_AUTHORIZATION_FAILED
        if transactional_allowed
        else ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    )
    # Refusals first: a partition is refused, or admitted and answered once its records are appended.
    answers: list[tuple[TopicProduceData, str | None, list[PartitionProduceResponse | None]]] = []
    admitted: dict[PartitionKey, Admitted] = {}
    for topic in _last_records_per_partition(request.topic_data, context.api_version):
        name, missing = _topic_name(topic, context)
        allowed = transactional_allowed and (
            name is None or authorize(context, AclOperation.WRITE, ResourceType.TOPIC, name)
        )
        partitions: list[PartitionProduceResponse | None] = []
        for data in topic.partition_data:
            if not allowed:
                partitions.append(failed_response(data.index, denied))
            elif name is None:
                partitions.append(failed_response(data.index, missing))
            else:
                admitted_or_refused = admission.admit(name, data)
                if isinstance(admitted_or_refused, Admitted):
                    admitted[(name, data.index)] = admitted_or_refused
                    partitions.append(None)  # answered once appended
                else:
                    partitions.append(admitted_or_refused)
        answers.append((topic, name, partitions))
    prepared = await _prepare(admitted, context)
    # Admitted again only after an await (record work done): nothing else ran on the loop meanwhile
    recheck = bool(prepared)
    responses = []
    for topic, name, partitions in answers:
        for position, data in enumerate(topic.partition_data):
            if partitions[position] is None:
                assert name is not None
                key = (name, data.index)
                partitions[position] = _append(
                    name,
                    data,
                    request,
                    context,
                    appended,
                    admission,
                    admitted[key],
                    prepared.get(key),
                    recheck,
                )
        responses.append(
            TopicProduceResponse(
                name=topic.name,
                topic_id=topic.topic_id,
                partition_responses=[p for p in partitions if p is not None],
            )
        )
    await _complete(appended, request.timeout_ms, context)
    if request.acks == 0:
        _close_if_failed(responses)
        return None
    return ProduceResponse(responses=responses, node_endpoints=_leaders_named(responses, context))


def _topic_name(topic: TopicProduceData, context: RequestContext) -> tuple[str | None, ErrorCode]:
    """The topic's name (v13+ names it by id), and the error for a topic this broker does not know."""
    if context.api_version >= 13:
        state = context.services.cluster.topic_by_id(topic.topic_id)
        return (state.name if state is not None else None), ErrorCode.UNKNOWN_TOPIC_ID
    return topic.name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def _has_transactional_records(request: ProduceRequest) -> bool:
    """Whether a partition's first batch is transactional (Kafka's RequestUtils.hasTransactionalRecords)."""
    return any(
        transactional_producer(data.records) is not None
        for topic in request.topic_data
        for data in topic.partition_data
        if data.records
    )


def _partitions_by_name(request: ProduceRequest, context: RequestContext) -> ProducedPartitions:
    """Each partition's topic name (None: an unknown topic id), index and records."""
    for topic in request.topic_data:
        name = _topic_name(topic, context)[0]
        for data in topic.partition_data:
            yield name, data.index, data.records


async def _prepare(
    admitted: dict[PartitionKey, Admitted], context: RequestContext
) -> dict[PartitionKey, PreparedAppend]:
    """The admitted partitions' record work, in the record workers; done once more for those whose topic
    config changed meanwhile (partition/produce_records.py)."""
    prepared = await run_record_jobs(record_jobs(admitted), context)
    again = stale(admitted, prepared)
    if again:
        prepared.update(await run_record_jobs(record_jobs(again), context))
    return prepared


def _leaders_named(responses: list[TopicProduceResponse], context: RequestContext) -> list[NodeEndpoint]:
    """v10+ (KIP-951): the endpoints of the leaders that NOT_LEADER_OR_FOLLOWER answers point to."""
    named = [
        p.current_leader.leader_id
        for topic in responses
        for p in topic.partition_responses
        if p.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    ]
    if not named:  # the usual answer: no leader to name
        return []
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


async def _complete(
    appended: list[tuple[LeaderAppend, PartitionProduceResponse]], timeout_ms: int, context: RequestContext
) -> None:
    """Each appended partition answered once its append is due (fsynced if due; acks=all: on the ISR):
    the replica manager's delayed produce decides, the answers only carry it. Not awaited when every
    answer is known at the append (no fsync due, no acks=all wait: a single node's usual case)."""
    if all(made.completed_at_append() for made, _ in appended):
        return
    outcomes = await context.services.replicas.complete_appends([a for a, _ in appended], timeout_ms)
    for (_, response), outcome in zip(appended, outcomes, strict=True):
        if outcome is not ErrorCode.NONE:
            response.error_code = outcome
            response.base_offset = -1
            response.log_append_time_ms = -1


def _append(
    topic: str,
    data: PartitionProduceData,
    request: ProduceRequest,
    context: RequestContext,
    appended: list[tuple[LeaderAppend, PartitionProduceResponse]],
    admission: ProduceAdmission,
    before: Admitted,
    prepared: PreparedAppend | None,
    recheck: bool,
) -> PartitionProduceResponse:
    services = context.services
    # Admitted again when the record work was awaited: leadership, the log or the ISR may have moved.
    again = admission.admit(topic, data, before) if recheck else before
    if not isinstance(again, Admitted):
        return again
    batches = again.records
    tp = TopicPartition(topic, data.index)
    if prepared is not None and prepared.error is not None:
        return _refused(topic, data.index, prepared.error, context)
    if again.message_set:
        assert prepared is not None  # every message set is converted up by a record worker
        assert isinstance(prepared.source, bytearray)  # made by the conversion: the append patches it
        batches = prepared.source
    try:
        made = services.replicas.append_records(tp, batches, AppendOrigin.CLIENT, request.acks, prepared)
    except KafkaError as refused:  # leadership or the ISR, admitted just above: not expected here
        return failed_response(data.index, refused.error_code)
    except (storage_errors.StorageError, CodecError) as error:  # a failed disk is logged there
        return _refused(topic, data.index, error, context)
    if services.traffic is not None and not made.duplicate:
        services.traffic.produced(topic, len(batches), made.records_count)
    # An idempotent retry of a batch already in the log (a duplicate) is a success, with the offsets it
    # got then; with acks=all only once the ISR has it (the first attempt may have timed out waiting).
    response = PartitionProduceResponse(
        index=data.index,
        error_code=ErrorCode.NONE,
        base_offset=made.base_offset,
        log_append_time_ms=made.log_append_time,
        log_start_offset=made.log_start_offset,
    )
    appended.append((made, response))
    return response


def _refused(topic: str, index: int, error: Exception, context: RequestContext) -> PartitionProduceResponse:
    """The partition's answer to a refusal of its records; a failed disk is answered with no message
    and logged (partition/errors.py)."""
    failed = failed_response(index, *resource_failure(error, context, f"{topic}-{index}"))
    failed.record_errors = _record_errors(error)
    return failed


def _record_errors(error: BaseException) -> list[BatchIndexAndErrorMessage]:
    """KIP-467's per-record errors (v8+): which records of the batch made it fail, and why."""
    if not isinstance(error, storage_errors.InvalidRecordError | storage_errors.InvalidTimestampError):
        return []
    return [
        BatchIndexAndErrorMessage(batch_index=e.batch_index, batch_index_error_message=e.message)
        for e in error.record_errors
    ]
