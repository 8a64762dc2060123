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
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass

from odradek.handlers._common.authorization import authorize, authorize_cluster
from odradek.handlers._common.context import RequestContext
from odradek.handlers._common.leadership import POINTS_TO_LEADER, leader_endpoints, refusal, replica_refusal
from odradek.handlers._common.record_jobs import run_record_jobs
from odradek.handlers._common.registry import handles
from odradek.partition.errors import error_code_for
from odradek.partition.fetch_down_conversion import Conversion, down_conversion_jobs
from odradek.partition.fetch_sessions import CachedPartition, FetchSession, PartitionKey
from odradek.partition.file_records import FileRecords
from odradek.partition.follower_fetch import (
    awaiting_epochs,
    diverging,
    hold_for_epochs,
    leader_throttles,
    record_follower_fetches,
    record_replication,
)
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.codec_error import CodecError
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.protocol.fetch_session_epochs import FINAL_EPOCH, INITIAL_EPOCH, next_epoch
from odradek.protocol.messages.fetch import (
    AbortedTransaction,
    EpochEndOffset,
    FetchableTopicResponse,
    FetchRequest,
    FetchResponse,
    LeaderIdAndEpoch,
    NodeEndpoint,
    PartitionData,
)
from odradek.protocol.records import Compression
from odradek.security.acl import AclOperation, ResourceType
from odradek.storage.errors import OffsetOutOfRangeError, StorageError
from odradek.storage.fetch import FetchDataInfo, FetchIsolation
from odradek.storage.log import Log
from odradek.storage.partition import TopicPartition

#: Below this many bytes a fetch copies the data into the response (one write) instead of sendfile.
SENDFILE_THRESHOLD = 64 * 1024


@dataclass(slots=True)
class _Plan:
    partitions: list[CachedPartition]
    session: FetchSession | None
    incremental: bool
    session_id: int
    #: A full fetch asking for a new session: opened when answered, and not by a throttled answer.
    opens_session: bool = False


@handles(ApiKey.FETCH, 0, 18)
async def handle_fetch(request: FetchRequest, context: RequestContext) -> FetchResponse:
    try:
        plan = _plan(request, context)
    except KafkaError as error:  # a session error: like Kafka's, the answer names no session
        return FetchResponse(error_code=error.error_code, session_id=0, responses=[])
    isolation = _isolation(request, context)
    denied = _unauthorized_topics(plan.partitions, request, context)
    readable = any(p.topic not in denied for p in plan.partitions)
    if context.api_version >= 3:  # the broker's fetch.max.bytes caps what a client asks for, as Kafka's
        cap = context.services.config.fetch_max_bytes
        request.max_bytes, request.min_bytes = min(request.max_bytes, cap), min(request.min_bytes, cap)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(request.max_wait_ms, 0) / 1000
    keys = [TopicPartition(p.topic, p.partition) for p in plan.partitions]
    replica_id = _replica_id(request, context)
    follower = replica_id >= 0
    reading = _Reading(plan.partitions, request, isolation, context, denied, keys)
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
                    _replica_epoch(request, context),
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
        _open_session(plan, privileged, context)
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
            results[index] = _error(entry, error_code_for(converted))
        elif context.api_version <= 2 and len(converted) > entry.max_bytes:
            results[index].records = converted[: max(entry.max_bytes, 0)]  # a partial last message
        else:
            results[index].records = converted


def _release(results: list[PartitionData]) -> None:
    """Close the files of records read but not sent."""
    for data in results:
        if isinstance(data.records, FileRecords):
            data.records.close()


def _throttled(plan: _Plan, results: list[PartitionData], throttle_ms: int) -> FetchResponse:
    """A consumer over its quota (KIP-219, Kafka's getThrottledResponse): answered at once with the
    throttle time and no partitions, since the records would take it further over. No session is
    opened, and an incremental session's partitions keep what was last sent, so the next answer
    carries what this one left out."""
    _release(results)
    return FetchResponse(
        error_code=ErrorCode.NONE, throttle_time_ms=throttle_ms, session_id=plan.session_id, responses=[]
    )


def _open_session(plan: _Plan, privileged: bool, context: RequestContext) -> None:
    """The session a full fetch asked for (none when the cache keeps its sessions: answered with id 0)."""
    session = context.services.fetch_sessions.create(
        len(plan.partitions), privileged=privileged, principal=context.principal
    )
    if session is None:
        return
    for entry in plan.partitions:
        session.add(_key(entry), entry)
    plan.session, plan.session_id = session, session.session_id


def _unauthorized_topics(
    partitions: list[CachedPartition], request: FetchRequest, context: RequestContext
) -> frozenset[str]:
    """The topics this request may not read (nothing to check without an authorizer)."""
    if context.services.authorizer is None:
        return frozenset()
    topics = {p.topic for p in partitions if p.topic}
    if _replica_id(request, context) >= 0:
        return frozenset() if authorize_cluster(context, AclOperation.CLUSTER_ACTION) else frozenset(topics)
    return frozenset(t for t in topics if not authorize(context, AclOperation.READ, ResourceType.TOPIC, t))


def _plan(request: FetchRequest, context: RequestContext) -> _Plan:
    """Which partitions to read, resolving the fetch session (if any) the request names."""
    version = context.api_version
    cache = context.services.fetch_sessions
    # Kafka keys a fetch by topic partition (FetchRequest.fetchData, a LinkedHashMap): a partition named
    # twice is read once, where it was first named, with what it was last asked for.
    requested = list({_key(entry): entry for entry in _requested(request, context)}.values())
    if version < 7 or request.session_epoch == FINAL_EPOCH:
        if version >= 7 and request.session_id:
            cache.close(request.session_id, context.principal)
        return _Plan(requested, None, False, 0)
    if request.session_epoch == INITIAL_EPOCH:
        if request.session_id:
            cache.close(request.session_id, context.principal)
        return _Plan(requested, None, False, 0, opens_session=True)
    session = cache.lookup(request.session_id, request.session_epoch, context.principal)
    session.epoch = next_epoch(session.epoch)
    if version >= 13:
        _resolve_unknown_names(session, context)
    for forgotten in request.forgotten_topics_data:
        topic = _topic_name(forgotten.topic, forgotten.topic_id, context) or ""
        for partition in forgotten.partitions:
            session.partitions.pop((topic, forgotten.topic_id if version >= 13 else None, partition), None)
    for entry in requested:
        cached = session.partitions.get(_key(entry))
        if cached is None:
            session.add(_key(entry), entry)
        else:
            cached.fetch_offset = entry.fetch_offset
            cached.max_bytes = entry.max_bytes
            cached.current_leader_epoch = entry.current_leader_epoch
            cached.last_fetched_epoch = entry.last_fetched_epoch
            cached.log_start_offset = entry.log_start_offset
    return _Plan(list(session.partitions.values()), session, True, session.session_id)


def _resolve_unknown_names(session: FetchSession, context: RequestContext) -> None:
    """A partition whose topic id was unknown when it joined the session (answered UNKNOWN_TOPIC_ID)
    gets its topic's name once this broker knows the id, as Kafka's maybeResolveUnknownName: else the
    session would answer it UNKNOWN_TOPIC_ID for as long as the session lives."""
    if not session.unknown_names:
        return  # the common case: one flag looked at per fetch
    session.unknown_names = False
    for key in [key for key in session.partitions if not key[0]]:
        entry = session.partitions.pop(key)
        entry.topic = _topic_name("", key[1], context) or ""
        session.add(_key(entry), entry)


def _requested(request: FetchRequest, context: RequestContext) -> Iterable[CachedPartition]:
    version = context.api_version
    for topic in request.topics:
        name = _topic_name(topic.topic, topic.topic_id, context)
        for p in topic.partitions:
            yield CachedPartition(
                topic=name if name is not None else "",
                topic_id=topic.topic_id if version >= 13 else None,
                partition=p.partition,
                fetch_offset=p.fetch_offset,
                max_bytes=p.partition_max_bytes,
                current_leader_epoch=p.current_leader_epoch,
                last_fetched_epoch=p.last_fetched_epoch,
                log_start_offset=p.log_start_offset,
            )


def _topic_name(name: str, topic_id: object, context: RequestContext) -> str | None:
    if context.api_version < 13:
        return name
    state = context.services.cluster.topic_by_id(topic_id)  # type: ignore[arg-type]
    return state.name if state is not None else None


def _key(entry: CachedPartition) -> PartitionKey:
    return (entry.topic, entry.topic_id, entry.partition)


def _replica_id(request: FetchRequest, context: RequestContext) -> int:
    """The fetching follower's broker id; -1 for a consumer."""
    return request.replica_state.replica_id if context.api_version >= 15 else request.replica_id


def _replica_epoch(request: FetchRequest, context: RequestContext) -> int:
    """The fetching follower's broker epoch (Fetch v15+, KIP-903); -1 when the version has none."""
    return request.replica_state.replica_epoch if context.api_version >= 15 else -1


def _isolation(request: FetchRequest, context: RequestContext) -> FetchIsolation:
    if _replica_id(request, context) >= 0:
        return FetchIsolation.LOG_END
    if request.isolation_level == 1:
        return FetchIsolation.TXN_COMMITTED
    return FetchIsolation.HIGH_WATERMARK


#: A place held in a `_Read` until its partition is read (never sent, never changed).
_UNREAD = PartitionData(partition_index=-1, error_code=ErrorCode.NONE)


@dataclass(slots=True)
class _Read:
    """What a fetch has read so far: each partition's answer, the byte limit it was read with and its
    size, and in all."""

    results: list[PartitionData]
    limits: list[int]
    sizes: list[int]
    size: int = 0
    #: Partitions answered with an error (or sent to a preferred read replica): answered at once.
    errors: int = 0


@dataclass(slots=True)
class _Reading:
    partitions: list[CachedPartition]
    request: FetchRequest
    isolation: FetchIsolation
    context: RequestContext
    denied: frozenset[str]
    keys: list[TopicPartition]
    #: Each partition's place in `partitions`, made when a wake-up first needs it.
    places: dict[TopicPartition, int] | None = None

    def all(self) -> _Read:
        """Every partition read, in order, within the request's max_bytes."""
        count = len(self.partitions)
        read = _Read([_UNREAD] * count, [0] * count, [0] * count)
        self._read(read, range(count))
        return read

    def again(self, read: _Read, woken: Iterable[Hashable]) -> list[int]:
        """Re-read the partitions `woken` in place (the others keep what they read); their places."""
        if self.places is None:
            self.places = {key: index for index, key in enumerate(self.keys)}
        places = self.places
        indexes = sorted(places[key] for key in woken if key in places)
        for index in indexes:
            data = read.results[index]
            if isinstance(data.records, FileRecords):
                data.records.close()
            read.size -= read.sizes[index]
            read.errors -= _is_error(data)
        self._read(read, indexes)
        return indexes

    def _read(self, read: _Read, indexes: Iterable[int]) -> None:
        context = self.context
        budget = self.request.max_bytes if context.api_version >= 3 else 2**31 - 1
        # Before v3 every partition reads its first batch whole, then is cut to its limit (_records).
        hard_limit = context.api_version < 3
        for index in indexes:
            entry = self.partitions[index]
            if self.denied and entry.topic in self.denied:
                # Not an error that answers the fetch at once: as Kafka's, whose read never sees them.
                read.results[index] = _error(entry, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                continue
            limit = max(min(entry.max_bytes, budget - read.size), 0)
            first = read.size == 0 or hard_limit
            data, size = _read_partition(entry, limit, first, self.isolation, context, self.request)
            read.results[index], read.limits[index], read.sizes[index] = data, limit, size
            read.size += size
            read.errors += _is_error(data)


def _is_error(data: PartitionData) -> bool:
    """Whether the read answers the fetch at once (an error, or a redirect to a preferred read replica)."""
    return data.error_code not in (ErrorCode.NONE, ErrorCode.TOPIC_AUTHORIZATION_FAILED) or (
        data.preferred_read_replica >= 0
    )


def _read_partition(
    entry: CachedPartition,
    limit: int,
    first: bool,
    isolation: FetchIsolation,
    context: RequestContext,
    request: FetchRequest,
) -> tuple[PartitionData, int]:
    services = context.services
    replica_id = _replica_id(request, context)
    # KIP-392: a consumer that may be sent elsewhere (v11+) may read from a follower; followers fetch
    # from the leader only, as do older consumers.
    from_any_replica = replica_id < 0 and context.api_version >= 11
    check = replica_refusal if from_any_replica else refusal
    refused = check(context, entry.topic, entry.partition, entry.current_leader_epoch)
    if refused is not None and refused.error_code != ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
        data = _error(entry, refused.error_code)  # not served here, or not at the client's epoch
        if refused.error_code in POINTS_TO_LEADER:
            data.current_leader = LeaderIdAndEpoch(
                leader_id=refused.leader_id, leader_epoch=refused.leader_epoch
            )
        return data, 0
    partition = services.cluster.partition(entry.topic, entry.partition)
    log = services.logs.get_log(entry.topic, entry.partition) if partition else None
    if partition is None or log is None:
        unknown = ErrorCode.UNKNOWN_TOPIC_ID if context.api_version >= 13 and not entry.topic else None
        return _error(entry, unknown or ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), 0
    unreadable = _unreadable_format(log, replica_id, context.api_version)
    if unreadable is not None:
        return _error(entry, unreadable), 0
    replicas = services.replicas
    if replica_id >= 0 and not replicas.leaders.is_replica(entry.topic, entry.partition, replica_id):
        return _error(entry, ErrorCode.NOT_LEADER_OR_FOLLOWER), 0
    if replica_id >= 0 and _idle(entry, log):
        # Nothing the divergence check, the throttle or the read could say differs from the last
        # answer: at 10,000 partitions these reads were most of a leader's work.
        return _idle_answer(entry, log), 0
    if from_any_replica:
        preferred = replicas.leaders.preferred_read_replica(
            entry.topic, entry.partition, request.rack_id, context.listener, entry.fetch_offset
        )
        if preferred >= 0:
            # Kafka's readFromLog: the redirect replaces the read; the offsets still go along.
            data = _with_offsets(_error(entry, ErrorCode.NONE), log)
            data.preferred_read_replica = preferred
            return data, 0
    if context.api_version >= 12 and entry.last_fetched_epoch >= 0:
        try:
            diverging = _diverging_epoch(log, entry)
        except OffsetOutOfRangeError:
            return _with_offsets(_error(entry, ErrorCode.OFFSET_OUT_OF_RANGE), log), 0
        if diverging is not None:
            return _with_offsets(_error(entry, ErrorCode.NONE), log, diverging), 0
    if replica_id >= 0 and leader_throttles(
        entry, log, replica_id, services.replicas, services.replication_quotas.leader
    ):
        # As Kafka: no records, and none counted towards min_bytes (the fetch waits as if idle).
        return _with_offsets(_error(entry, ErrorCode.NONE), log), 0
    try:
        info = log.read(entry.fetch_offset, limit, isolation=isolation, min_one_message=first)
        records = _records(info, context.api_version)
    except OffsetOutOfRangeError:
        return _with_offsets(_error(entry, ErrorCode.OFFSET_OUT_OF_RANGE), log), 0
    except (StorageError, CodecError) as error:
        return _error(entry, error_code_for(error)), 0
    aborted = None
    if info.aborted_transactions is not None:
        aborted = [
            AbortedTransaction(producer_id=a.producer_id, first_offset=a.first_offset)
            for a in info.aborted_transactions
        ]
    if replica_id >= 0 and not records:
        entry.idle_position = (entry.fetch_offset, entry.last_fetched_epoch)
    data = PartitionData(
        partition_index=entry.partition,
        error_code=ErrorCode.NONE,
        high_watermark=info.high_watermark,
        last_stable_offset=info.last_stable_offset,
        log_start_offset=info.log_start_offset,
        aborted_transactions=aborted,
        records=records,
    )
    return data, len(records)


def _idle(entry: CachedPartition, log: Log) -> bool:
    """Whether a follower's fetch of `entry` is, in its session, the one last read with nothing to send
    (same position, nothing appended since) and the offsets it was last sent are still the log's.

    The position read before decided divergence (the leader's epochs change only with its log end) and
    found nothing to throttle; a partition whose leadership moved is refused before this check."""
    return (
        entry.idle_position is not None
        and entry.idle_position == (entry.fetch_offset, entry.last_fetched_epoch)
        and entry.fetch_offset == log.log_end_offset
        and entry.sent_high_watermark == log.high_watermark
        and entry.sent_log_start_offset == log.log_start_offset
    )


def _idle_answer(entry: CachedPartition, log: Log) -> PartitionData:
    """An idle partition's answer: what it was last sent (record_follower_fetches then sets the high
    watermark and last stable offset the follower's fetch leaves)."""
    return PartitionData(
        partition_index=entry.partition,
        error_code=ErrorCode.NONE,
        high_watermark=log.high_watermark,
        last_stable_offset=entry.sent_last_stable_offset,
        log_start_offset=log.log_start_offset,
        records=b"",
    )


def _unreadable_format(log: Log, replica_id: int, api_version: int) -> ErrorCode | None:
    """Kafka's KafkaApis.maybeConvertFetchedData: a zstd topic is not served before v10 (which those
    clients cannot read), nor a consumer's v0-3 fetch (read by converting down) of a topic with
    message.downconversion.enable false."""
    stored = log.config.compression
    if api_version < 10 and stored is not None and stored.compression is Compression.ZSTD:
        return ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    if api_version <= 3 and replica_id < 0 and not log.config.message_downconversion_enable:
        return ErrorCode.UNSUPPORTED_VERSION
    return None


def _diverging_epoch(log: Log, entry: CachedPartition) -> EpochEndOffset | None:
    """Kafka's Partition.readRecords: where the fetcher's last fetched epoch ends in this log, when
    that is before its fetch offset (or the epoch is unknown here): the fetcher truncates there.

    Raises OffsetOutOfRangeError when this log cannot place the epoch (newer than any here: UNDEFINED)
    or the fetch starts below the log start: a DivergingEpoch of (-1, -1) would read, on the wire, as
    none at all, and the fetch would count toward the high watermark and the ISR."""
    epoch, end_offset = log.end_offset_for_epoch(entry.last_fetched_epoch)
    if epoch < 0 or end_offset < 0:
        raise OffsetOutOfRangeError(entry.fetch_offset, log.log_start_offset, log.log_end_offset)
    if entry.fetch_offset < log.log_start_offset:
        raise OffsetOutOfRangeError(entry.fetch_offset, log.log_start_offset, log.log_end_offset)
    if end_offset < entry.fetch_offset or epoch < entry.last_fetched_epoch:
        return EpochEndOffset(epoch=epoch, end_offset=end_offset)
    return None


def _records(info: FetchDataInfo, api_version: int) -> bytes | FileRecords:
    """The bytes read, to send (v4+), or to convert down once the fetch is answered (v0-3)."""
    size = info.size
    if not size:
        return b""
    if api_version <= 3 or size < SENDFILE_THRESHOLD:
        return info.read_bytes()
    return FileRecords(info.regions)


def _error(entry: CachedPartition, code: ErrorCode) -> PartitionData:
    return PartitionData(
        partition_index=entry.partition,
        error_code=code,
        high_watermark=-1,
        last_stable_offset=-1,
        log_start_offset=-1,
        records=b"",
    )


def _with_offsets(data: PartitionData, log: object, diverging: EpochEndOffset | None = None) -> PartitionData:
    data.high_watermark = getattr(log, "high_watermark", -1)
    data.last_stable_offset = getattr(log, "last_stable_offset", -1)
    data.log_start_offset = getattr(log, "log_start_offset", -1)
    if diverging is not None:
        data.diverging_epoch = diverging
    return data


def _respond(
    plan: _Plan, results: list[PartitionData], context: RequestContext, replica_fetch: bool
) -> FetchResponse:
    version = context.api_version
    topics: dict[tuple[str, object], FetchableTopicResponse] = {}
    for entry, data in zip(plan.partitions, results, strict=True):
        if plan.incremental and not _must_send(entry, data):
            continue
        if plan.incremental and plan.session is not None and data.records:
            # As Kafka: a partition that got records is fetched last next time, so that under
            # max_bytes a busy partition early in the session does not starve the later ones.
            plan.session.partitions.move_to_end(_key(entry))
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
