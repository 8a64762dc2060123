"""Reading a Fetch's partitions: each one's answer (refused, unknown, throttled, diverging, an idle
follower's, a redirect to a preferred read replica, or records from the file) within the request's
max_bytes, and again, in place, for the partitions an append woke. What the reads tell the leader of
its followers is ``partition/follower_fetch.py``'s; the wait between reads is ``handlers/fetch.py``'s."""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass

from odradek.handlers._common.context import RequestContext
from odradek.handlers._common.leadership import POINTS_TO_LEADER, refusal, replica_refusal
from odradek.partition.errors import error_code_for
from odradek.partition.fetch_sessions import CachedPartition
from odradek.partition.file_records import FileRecords
from odradek.partition.follower_fetch import leader_throttles
from odradek.protocol.codec_error import CodecError
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.fetch import (
    AbortedTransaction,
    EpochEndOffset,
    FetchRequest,
    LeaderIdAndEpoch,
    PartitionData,
)
from odradek.protocol.records import Compression
from odradek.storage.errors import OffsetOutOfRangeError, StorageError
from odradek.storage.fetch import FetchDataInfo, FetchIsolation
from odradek.storage.log import Log
from odradek.storage.partition import TopicPartition

#: Below this many bytes a fetch copies the data into the response (one write) instead of sendfile.
SENDFILE_THRESHOLD = 64 * 1024


def fetching_replica_id(request: FetchRequest, context: RequestContext) -> int:
    """The fetching follower's broker id; -1 for a consumer."""
    return request.replica_state.replica_id if context.api_version >= 15 else request.replica_id


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
    isolation: FetchIsolation
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
    replica_id = fetching_replica_id(request, context)
    # KIP-392: a consumer that may be sent elsewhere (v11+) may read from a follower; followers fetch
    # from the leader only, as do older consumers.
    from_any_replica = replica_id < 0 and context.api_version >= 11
    check = replica_refusal if from_any_replica else refusal
    refused = check(context, entry.topic, entry.partition, entry.current_leader_epoch)
    if refused is not None and refused.error_code != ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
        data = error_answer(entry, refused.error_code)  # not served here, or not at the client's epoch
        if refused.error_code in POINTS_TO_LEADER:
            data.current_leader = LeaderIdAndEpoch(
                leader_id=refused.leader_id, leader_epoch=refused.leader_epoch
            )
        return data, 0
    partition = services.cluster.partition(entry.topic, entry.partition)
    log = services.logs.get_log(entry.topic, entry.partition) if partition else None
    if partition is None or log is None:
        unknown = ErrorCode.UNKNOWN_TOPIC_ID if context.api_version >= 13 and not entry.topic else None
        return error_answer(entry, unknown or ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), 0
    unreadable = _unreadable_format(log, replica_id, context.api_version)
    if unreadable is not None:
        return error_answer(entry, unreadable), 0
    replicas = services.replicas
    if replica_id >= 0 and not replicas.leaders.is_replica(entry.topic, entry.partition, replica_id):
        return error_answer(entry, ErrorCode.NOT_LEADER_OR_FOLLOWER), 0
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
            data = _with_offsets(error_answer(entry, ErrorCode.NONE), log)
            data.preferred_read_replica = preferred
            return data, 0
    if context.api_version >= 12 and entry.last_fetched_epoch >= 0:
        try:
            diverging = _diverging_epoch(log, entry)
        except OffsetOutOfRangeError:
            return _with_offsets(error_answer(entry, ErrorCode.OFFSET_OUT_OF_RANGE), log), 0
        if diverging is not None:
            return _with_offsets(error_answer(entry, ErrorCode.NONE), log, diverging), 0
    if replica_id >= 0 and leader_throttles(
        entry, log, replica_id, services.replicas, services.replication_quotas.leader
    ):
        # As Kafka: no records, and none counted towards min_bytes (the fetch waits as if idle).
        return _with_offsets(error_answer(entry, ErrorCode.NONE), log), 0
    try:
        info = log.read(entry.fetch_offset, limit, isolation=isolation, min_one_message=first)
        records = _records(info, context.api_version)
    except OffsetOutOfRangeError:
        return _with_offsets(error_answer(entry, ErrorCode.OFFSET_OUT_OF_RANGE), log), 0
    except (StorageError, CodecError) as error:
        return error_answer(entry, error_code_for(error)), 0
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


def error_answer(entry: CachedPartition, code: ErrorCode) -> PartitionData:
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
