"""Fetch (key 1): read record batches from partitions, waiting for data up to max_wait_ms.

Version notes:
- v0-3 read MessageSet v0 (v0-1) or v1 (v2-3): their data is converted down from the stored v2
  batches (and so copied); v4+ get the stored bytes as they are, straight from the segment files.
  As Kafka 3.9: a consumer's v0-3 fetch of a topic with `message.downconversion.enable` false is
  UNSUPPORTED_VERSION, and a fetch before v10 of a topic whose `compression.type` is zstd is
  UNSUPPORTED_COMPRESSION_TYPE.
- v3 adds the response-level max_bytes, v4 isolation_level (read_committed stops at the last stable
  offset and lists aborted transactions), v5 log start offsets, v7 fetch sessions (KIP-227), v9 the
  current leader epoch (fencing), v11 rack id and fetching from followers (below),
  v12 flexible with diverging epochs (replication only), v13 topic ids, v15 replica state, v16+ node
  endpoints (sent only with leader changes, never on a single node).
- A fetch from the middle of a batch returns the whole batch. From v3 (KIP-74) the first partition
  with data always gets at least one whole batch even past max_bytes; later ones stop at their limits.
  Before v3, partition_max_bytes is a hard limit, as it was in Kafka 0.10.0: the converted message
  set is cut at that many bytes, so a message larger than the limit arrives partial and the client
  reports it as too large (or retries with a larger limit) instead of getting more than it asked for.
- The wait is a delayed operation woken by appends to the partitions being fetched, never by polling;
  a wake-up re-reads only the partitions woken (as Kafka's DelayedFetch.tryComplete checks offsets),
  not all of them: a follower's session of thousands of partitions would be read whole for each
  append and high watermark move of any one. In a follower's session, a partition fetched again at the
  position last read with nothing to send, whose log end, high watermark and log start are as last
  sent, is not read again (the divergence check and the read would say the same); its position is
  still recorded, which keeps the follower caught up for the ISR.
- A follower's fetch (replica_id >= 0; on a single node, whose partitions have no other replica, every
  such fetch is NOT_LEADER_OR_FOLLOWER, as in Kafka) reads up to the log end, gets DivergingEpoch when its
  last fetched epoch ends earlier in the leader's log (v12+, KIP-595's truncation), or OFFSET_OUT_OF_RANGE
  when the leader cannot place that epoch or the fetch starts below its log start (Kafka's readRecords; such
  a fetch counts for nothing), and tells the leader how far the follower has got: its fetch offset moves the
  high watermark and the ISR, and the answer carries the high watermark that fetch allowed. Only replicas of
  the partition may fetch as followers (NOT_LEADER_OR_FOLLOWER otherwise). A follower's fetch naming a
  partition at an epoch newer than the one this broker hosts it at (its LeaderAndIsr is still on the way) is
  held, whole, until that LeaderAndIsr is applied or max_wait_ms passes (then UNKNOWN_LEADER_EPOCH), where
  Kafka answers at once and the follower backs off (follower_fetch.py).
- Replication throttles (as Kafka's leader replication quota; cluster/replication/replication_quota.py):
  over leader.replication.throttled.rate, a follower not in the ISR gets the partitions the topic's
  leader.replication.throttled.replicas names for this broker without records, not counted towards
  min_bytes; what followers are sent of those partitions is recorded on the rate (follower_fetch.py).
- Fetching from followers (KIP-392, ZooKeeper mode): a consumer's fetch from v11 may be served by any
  replica of the partition, a follower reading up to its own high watermark (OFFSET_OUT_OF_RANGE past
  its log end, NOT_LEADER_OR_FOLLOWER on a broker with no replica); the leader, with
  `replica.selector.class` RackAwareReplicaSelector, answers a consumer in another rack with the
  `preferred_read_replica` an in-sync follower in its rack is (no records, and at once, as Kafka), and
  the consumer moves there. ListOffsets and older fetches stay on the leader.
- With an authorizer (as Kafka): a follower's fetch needs CLUSTER_ACTION on the cluster, a consumer's
  READ on each topic; the partitions of the others are answered TOPIC_AUTHORIZATION_FAILED, checked
  once per request and topic, and a fetch of nothing readable does not wait.
- A consumer over its client quotas (KIP-219; the connection's check, `context.fetch_quota`) is
  answered, once the read is done, with throttle_time_ms and no partitions (see `_throttled`).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence

from odradek.handlers._common.authorization import authorize, authorize_cluster
from odradek.handlers._common.context import RequestContext
from odradek.handlers._common.fetch_plan import FetchPlan, open_session, partition_key, plan_fetch
from odradek.handlers._common.fetch_reads import (
    PartitionReads,
    error_answer,
    fetch_params,
    fetching_replica_epoch,
    fetching_replica_id,
)
from odradek.handlers._common.leadership import POINTS_TO_LEADER, leader_endpoints
from odradek.handlers._common.record_jobs import run_record_jobs
from odradek.handlers._common.registry import handles
from odradek.partition.errors import error_code_for
from odradek.partition.fetch_down_conversion import Conversion, down_conversion_jobs
from odradek.partition.fetch_sessions import CachedPartition
from odradek.partition.file_records import FileRecords
from odradek.partition.follower_fetch import (
    awaiting_epochs,
    diverging,
    hold_for_epochs,
    record_follower_fetches,
    record_replication,
)
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.codec_error import CodecError
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.protocol.messages.fetch import (
    FetchableTopicResponse,
    FetchRequest,
    FetchResponse,
    NodeEndpoint,
    PartitionData,
)
from odradek.security.acl import AclOperation, ResourceType
from odradek.storage.partition import TopicPartition


@handles(ApiKey.FETCH, 0, 18)
async def handle_fetch(request: FetchRequest, context: RequestContext) -> FetchResponse:
    try:
        plan = plan_fetch(request, context)
    except KafkaError as error:  # a session error: like Kafka's, the answer names no session
        return FetchResponse(error_code=error.error_code, session_id=0, responses=[])
    denied = _unauthorized_topics(plan.partitions, request, context)
    readable = any(p.topic not in denied for p in plan.partitions)
    if context.api_version >= 3:  # the broker's fetch.max.bytes caps what a client asks for, as Kafka's
        cap = context.services.config.fetch_max_bytes
        request.max_bytes, request.min_bytes = min(request.max_bytes, cap), min(request.min_bytes, cap)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(request.max_wait_ms, 0) / 1000
    keys = [TopicPartition(p.topic, p.partition) for p in plan.partitions]
    params = fetch_params(request, context)
    replica_id = params.replica_id
    follower = replica_id >= 0
    reading = PartitionReads(plan.partitions, request, params, context, denied, keys)
    with context.services.appends.waiting_on(keys) as waiter:
        read = reading.all()
        indexes: Sequence[int] = range(len(plan.partitions))
        while True:
            if follower:
                # As Kafka: the leader learns the follower's position when the fetch arrives, not when
                # it is answered (a follower at the log end waits; its position moves the HW now).
                record_follower_fetches(
                    [plan.partitions[i] for i in indexes],
                    [read.results[i] for i in indexes],
                    replica_id,
                    fetching_replica_epoch(request, context),
                    context.services.replicas,
                    context.services.logs,
                )
            remaining = deadline - loop.time()
            held = (
                awaiting_epochs(plan.partitions, read.results, context.services.replicas)
                if follower and remaining > 0
                else []
            )
            if held:
                _release(read.results)
                await hold_for_epochs(waiter, held, context.services.replicas, deadline)
                waiter.take_woken()
                read, indexes = reading.all(), range(len(plan.partitions))
                continue
            # `errors` also counts a redirect to a preferred read replica: answered at once, as Kafka.
            if read.size >= request.min_bytes or read.errors or remaining <= 0 or not readable:
                break
            waiter.rearm()
            woke = await waiter.wait(remaining)
            woken = waiter.take_woken()
            if woke and woken is not None:
                # Only the partitions woken can have news (Kafka's DelayedFetch.tryComplete looks at each
                # partition's offsets): re-reading all would cost a session of thousands of partitions
                # a whole read for each append or high watermark move of any one of them.
                indexes = reading.again(read, woken)
            else:
                _release(read.results)
                read, indexes = reading.all(), range(len(plan.partitions))
    results, limits, size = read.results, read.limits, read.size
    throttle_ms = context.fetch_quota(size) if context.fetch_quota is not None else 0
    if throttle_ms > 0:
        return _throttled(plan, results, throttle_ms)
    if context.api_version <= 3:
        await _convert_down(plan.partitions, results, limits, context)
    if plan.opens_session:
        # A follower's session may evict consumers' sessions (Kafka's privileged sessions). Beyond Kafka
        # 3.9, which takes the replica id on the client's word, the privilege needs the id to be another
        # live broker's (a single node has none) and CLUSTER_ACTION: else any client evicts consumers'.
        privileged = (
            follower
            and replica_id != context.services.node_id
            and replica_id in context.services.cluster.live_brokers
            and authorize_cluster(context, AclOperation.CLUSTER_ACTION)
        )
        open_session(plan, privileged, context)
    return _respond(plan, results, context, replica_id >= 0)


async def _convert_down(
    partitions: list[CachedPartition],
    results: list[PartitionData],
    limits: list[int],
    context: RequestContext,
) -> None:
    """Fetch v0-3: the v2 batches read converted to the version's message set, in the record workers
    (partition/fetch_down_conversion.py); before v3 cut at the partition's limit, as Kafka 0.10.0 cut it."""
    reads = {
        index: Conversion(bytes(data.records), entry.fetch_offset, limit)
        for index, (entry, data, limit) in enumerate(zip(partitions, results, limits, strict=True))
        if data.error_code == ErrorCode.NONE and data.records
    }
    converted_reads = await run_record_jobs(down_conversion_jobs(reads, context.api_version), context)
    for index, converted in converted_reads.items():
        entry = partitions[index]
        if isinstance(converted, CodecError):
            results[index] = error_answer(entry, error_code_for(converted))
        elif context.api_version <= 2 and len(converted) > entry.max_bytes:
            results[index].records = converted[: max(entry.max_bytes, 0)]  # a partial last message
        else:
            results[index].records = converted


def _release(results: list[PartitionData]) -> None:
    """Close the files of records read but not sent."""
    for data in results:
        if isinstance(data.records, FileRecords):
            data.records.close()


def _throttled(plan: FetchPlan, results: list[PartitionData], throttle_ms: int) -> FetchResponse:
    """A consumer over its quota (KIP-219, Kafka's getThrottledResponse): answered at once with the
    throttle time and no partitions, since the records would take it further over. No session is
    opened, and an incremental session's partitions keep what was last sent, so the next answer
    carries what this one left out."""
    _release(results)
    return FetchResponse(
        error_code=ErrorCode.NONE, throttle_time_ms=throttle_ms, session_id=plan.session_id, responses=[]
    )


def _unauthorized_topics(
    partitions: list[CachedPartition], request: FetchRequest, context: RequestContext
) -> frozenset[str]:
    """The topics this request may not read (nothing to check without an authorizer)."""
    if context.services.authorizer is None:
        return frozenset()
    topics = {p.topic for p in partitions if p.topic}
    if fetching_replica_id(request, context) >= 0:
        return frozenset() if authorize_cluster(context, AclOperation.CLUSTER_ACTION) else frozenset(topics)
    return frozenset(t for t in topics if not authorize(context, AclOperation.READ, ResourceType.TOPIC, t))


def _respond(
    plan: FetchPlan, results: list[PartitionData], context: RequestContext, replica_fetch: bool
) -> FetchResponse:
    version = context.api_version
    topics: dict[tuple[str, object], FetchableTopicResponse] = {}
    for entry, data in zip(plan.partitions, results, strict=True):
        if plan.incremental and not _must_send(entry, data):
            continue
        if plan.incremental and plan.session is not None and data.records:
            # As Kafka: a partition that got records is fetched last next time, so that under
            # max_bytes a busy partition early in the session does not starve the later ones.
            plan.session.partitions.move_to_end(partition_key(entry))
        entry.sent_high_watermark = data.high_watermark
        entry.sent_last_stable_offset = data.last_stable_offset
        entry.sent_log_start_offset = data.log_start_offset
        key = (entry.topic, entry.topic_id)
        topic = topics.get(key)
        if topic is None:
            topic = FetchableTopicResponse(topic=entry.topic, partitions=[])
            if version >= 13 and isinstance(entry.topic_id, uuid.UUID):
                topic.topic_id = entry.topic_id
            topics[key] = topic
        topic.partitions.append(data)
        # As Kafka's BytesOutPerSec: bytes to clients only (a follower's fetch is replication traffic).
        if replica_fetch:
            record_replication(entry, data, context.services.logs, context.services.replication_quotas.leader)
        elif data.records and context.services.traffic is not None:
            context.services.traffic.fetched(entry.topic, len(data.records))
    return FetchResponse(
        error_code=ErrorCode.NONE,
        session_id=plan.session_id,
        responses=list(topics.values()),
        node_endpoints=_leaders_named(results, context),
    )


def _leaders_named(results: list[PartitionData], context: RequestContext) -> list[NodeEndpoint]:
    """v16+ (KIP-951): the endpoints of the leaders that refusals point to."""
    named = (d.current_leader.leader_id for d in results if d.error_code in POINTS_TO_LEADER)
    return [
        NodeEndpoint(node_id=b.node_id, host=b.host, port=b.port, rack=b.rack)
        for b in leader_endpoints(context, named)
    ]


def _must_send(entry: CachedPartition, data: PartitionData) -> bool:
    """In an incremental session, a partition is answered only when there is something new to say."""
    return bool(
        data.records
        or data.error_code != ErrorCode.NONE
        or data.preferred_read_replica >= 0
        or diverging(data)  # a fetcher whose log parted from the leader's must hear where, as Kafka
        or data.high_watermark != entry.sent_high_watermark
        or data.last_stable_offset != entry.sent_last_stable_offset
        or data.log_start_offset != entry.sent_log_start_offset
    )
