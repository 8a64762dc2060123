"""Reading a Fetch's partitions: each one's answer within the request's max_bytes, and again, in place,
for the partitions an append woke. A partition not served here at the client's epoch is refused here
(naming its leader, KIP-951); the read itself (unknown, unreadable format, throttled, diverging, an
idle follower's, a redirect to a preferred read replica, or records from the file) is
``partition/partition_read.py``'s, whose answer becomes the wire's ``PartitionData`` here. What the
reads tell the leader of its followers is ``partition/follower_fetch.py``'s; the wait between reads is
``handlers/fetch.py``'s."""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass

from odradek.handlers._common.context import RequestContext
from odradek.handlers._common.leadership import POINTS_TO_LEADER, refusal, replica_refusal
from odradek.partition.fetch_sessions import CachedPartition
from odradek.partition.file_records import FileRecords
from odradek.partition.partition_read import FetchParams, read_from_log
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.fetch import AbortedTransaction, FetchRequest, LeaderIdAndEpoch, PartitionData
from odradek.storage.fetch import FetchIsolation
from odradek.storage.partition import TopicPartition


def fetching_replica_id(request: FetchRequest, context: RequestContext) -> int:
    """The fetching follower's broker id; -1 for a consumer."""
    return request.replica_state.replica_id if context.api_version >= 15 else request.replica_id


def fetch_params(request: FetchRequest, context: RequestContext) -> FetchParams:
    """The fetch's terms for partition/'s reads: who fetches, how far it may read (replicas to the log
    end, consumers to the high watermark or, read_committed, the last stable offset), its rack and
    listener."""
    replica_id = fetching_replica_id(request, context)
    if replica_id >= 0:
        isolation = FetchIsolation.LOG_END
    elif request.isolation_level == 1:
        isolation = FetchIsolation.TXN_COMMITTED
    else:
        isolation = FetchIsolation.HIGH_WATERMARK
    return FetchParams(context.api_version, replica_id, isolation, request.rack_id, context.listener)


def fetching_replica_epoch(request: FetchRequest, context: RequestContext) -> int:
    """The fetching follower's broker epoch (Fetch v15+, KIP-903); -1 when the version has none."""
    return request.replica_state.replica_epoch if context.api_version >= 15 else -1


#: A place held in a `FetchRead` until its partition is read (never sent, never changed).
_UNREAD = PartitionData(partition_index=-1, error_code=ErrorCode.NONE)


@dataclass(slots=True)
class FetchRead:
    """What a fetch has read so far: each partition's answer, the byte limit it was read with and its
    size, and in all."""

    results: list[PartitionData]
    limits: list[int]
    sizes: list[int]
    size: int = 0
    #: Partitions answered with an error (or sent to a preferred read replica): answered at once.
    errors: int = 0


@dataclass(slots=True)
class PartitionReads:
    """A fetch's partitions, read (``all``) and read again when woken (``again``)."""

    partitions: list[CachedPartition]
    request: FetchRequest
    params: FetchParams
    context: RequestContext
    denied: frozenset[str]
    keys: list[TopicPartition]
    #: Each partition's place in `partitions`, made when a wake-up first needs it.
    places: dict[TopicPartition, int] | None = None

    def all(self) -> FetchRead:
        """Every partition read, in order, within the request's max_bytes."""
        count = len(self.partitions)
        read = FetchRead([_UNREAD] * count, [0] * count, [0] * count)
        self._read(read, range(count))
        return read

    def again(self, read: FetchRead, woken: Iterable[Hashable]) -> list[int]:
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

    def _read(self, read: FetchRead, indexes: Iterable[int]) -> None:
        context = self.context
        budget = self.request.max_bytes if context.api_version >= 3 else 2**31 - 1
        # Before v3 every partition reads its first batch whole, then is cut to its limit (_records).
        hard_limit = context.api_version < 3
        for index in indexes:
            entry = self.partitions[index]
            if self.denied and entry.topic in self.denied:
                # Not an error that answers the fetch at once: as Kafka's, whose read never sees them.
                read.results[index] = error_answer(entry, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                continue
            limit = max(min(entry.max_bytes, budget - read.size), 0)
            first = read.size == 0 or hard_limit
            data, size = _read_partition(entry, limit, first, self.params, context)
            read.results[index], read.limits[index], read.sizes[index] = data, limit, size
            read.size += size
            read.errors += _is_error(data)


def _is_error(data: PartitionData) -> bool:
    """Whether the read answers the fetch at once (an error, or a redirect to a preferred read replica)."""
    return data.error_code not in (ErrorCode.NONE, ErrorCode.TOPIC_AUTHORIZATION_FAILED) or (
        data.preferred_read_replica >= 0
    )


def _read_partition(
    entry: CachedPartition, limit: int, first: bool, params: FetchParams, context: RequestContext
) -> tuple[PartitionData, int]:
    check = replica_refusal if params.from_any_replica else refusal
    refused = check(context, entry.topic, entry.partition, entry.current_leader_epoch)
    if refused is not None and refused.error_code != ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
        data = error_answer(entry, refused.error_code)  # not served here, or not at the client's epoch
        if refused.error_code in POINTS_TO_LEADER:
            data.current_leader = LeaderIdAndEpoch(
                leader_id=refused.leader_id, leader_epoch=refused.leader_epoch
            )
        return data, 0
    services = context.services
    read = read_from_log(services.replicas, services.replication_quotas.leader, params, entry, limit, first)
    code = read.error_code
    if code is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and params.api_version >= 13 and not entry.topic:
        code = ErrorCode.UNKNOWN_TOPIC_ID
    aborted = read.aborted_transactions
    data = PartitionData(
        partition_index=entry.partition,
        error_code=code,
        high_watermark=read.high_watermark,
        last_stable_offset=read.last_stable_offset,
        log_start_offset=read.log_start_offset,
        aborted_transactions=None
        if aborted is None
        else [AbortedTransaction(producer_id=a.producer_id, first_offset=a.first_offset) for a in aborted],
        preferred_read_replica=read.preferred_read_replica,
        records=read.records,
    )
    if read.diverging_epoch is not None:
        data.diverging_epoch = read.diverging_epoch
    return data, len(read.records)


def error_answer(entry: CachedPartition, code: ErrorCode) -> PartitionData:
    return PartitionData(
        partition_index=entry.partition,
        error_code=code,
        high_watermark=-1,
        last_stable_offset=-1,
        log_start_offset=-1,
        records=b"",
    )
