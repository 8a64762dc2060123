"""A Fetch's read of one partition (Kafka's ReplicaManager.readFromLog with Partition.fetchRecords and
readRecords): the one way a client's or a follower's fetch reads a log.

The handler (handlers/_common/fetch_reads.py) has refused what this broker does not serve at the
client's epoch (it names the leader, KIP-951) and keeps the budget across partitions and the wire
answer; `read_from_log` decides the rest, in this order: the partition and its log (unknown here:
UNKNOWN_TOPIC_OR_PARTITION), a format the version cannot read (Kafka checks it in
KafkaApis.maybeConvertFetchedData, after the read; here before, with the log already in hand), a
follower that is no replica of the partition (NOT_LEADER_OR_FOLLOWER), a follower's idle position
(nothing read: its last answer still holds), the KIP-392 preferred read replica (the redirect replaces
the read), where the fetcher's last fetched epoch ends (DivergingEpoch, or OFFSET_OUT_OF_RANGE when it
cannot be placed), the leader's replication throttle, and `Log.read` itself. Storage's errors are
answered with their codes (partition/errors.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from odradek.partition.errors import error_code_for
from odradek.partition.fetch_sessions import CachedPartition
from odradek.partition.file_records import FileRecords
from odradek.partition.follower_fetch import leader_throttles
from odradek.partition.ports import LeaderReplicationQuota
from odradek.partition.replica_manager import ReplicaManager
from odradek.protocol.codec_error import CodecError
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.fetch import EpochEndOffset
from odradek.protocol.records import Compression
from odradek.storage.errors import OffsetOutOfRangeError, StorageError
from odradek.storage.fetch import FetchDataInfo, FetchIsolation
from odradek.storage.log import Log
from odradek.storage.txn_index import AbortedTxn

#: Below this many bytes a fetch copies the data into the response (one write) instead of sendfile.
SENDFILE_THRESHOLD = 64 * 1024


@dataclass(slots=True)
class FetchParams:
    """A Fetch's terms, the same for each partition it reads (Kafka's FetchParams)."""

    api_version: int
    #: The fetching follower's broker id; -1 for a consumer.
    replica_id: int
    isolation: FetchIsolation
    #: The consumer's rack (v11+, KIP-392; "" when it names none).
    client_rack: str
    #: The listener the fetch came in on: a preferred read replica must be reachable there.
    listener: str

    @property
    def from_any_replica(self) -> bool:
        """KIP-392: a consumer that may be sent elsewhere (v11+) may read from a follower; followers
        fetch from the leader only, as do older consumers."""
        return self.replica_id < 0 and self.api_version >= 11


@dataclass(slots=True)
class LogReadResult:
    """What reading one partition gave (Kafka's LogReadResult): an error, or the log's offsets with the
    records read, a diverging epoch or a preferred read replica. -1: not known (an error's)."""

    error_code: ErrorCode
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    #: The bytes to send (or, for v0-3, to convert down), or the file regions sendfile sends.
    records: bytes | FileRecords = b""
    #: A read_committed read's aborted transactions; None for any other read; () when nothing was read.
    aborted_transactions: tuple[AbortedTxn, ...] | None = ()
    diverging_epoch: EpochEndOffset | None = None
    preferred_read_replica: int = -1


def read_from_log(
    replicas: ReplicaManager,
    quota: LeaderReplicationQuota,
    params: FetchParams,
    entry: CachedPartition,
    limit: int,
    min_one_message: bool,
) -> LogReadResult:
    """Read `entry`'s partition from its fetch offset, at most `limit` bytes (but one whole batch with
    `min_one_message`), for a fetch the handler has not refused (the module's docstring gives the
    order). A follower's read that sent nothing records its position as idle in `entry`."""
    replica_id = params.replica_id
    partition = replicas.cluster.partition(entry.topic, entry.partition)
    log = replicas.logs.get_log(entry.topic, entry.partition) if partition else None
    if partition is None or log is None:
        return LogReadResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    unreadable = _unreadable_format(log, replica_id, params.api_version)
    if unreadable is not None:
        return LogReadResult(unreadable)
    if replica_id >= 0 and not replicas.leaders.is_replica(entry.topic, entry.partition, replica_id):
        return LogReadResult(ErrorCode.NOT_LEADER_OR_FOLLOWER)
    if replica_id >= 0 and _idle(entry, log):
        # Nothing the divergence check, the throttle or the read could say differs from the last
        # answer: at 10,000 partitions these reads were most of a leader's work. What it was last sent
        # (record_follower_fetches then sets the high watermark and last stable offset the fetch leaves).
        return LogReadResult(
            ErrorCode.NONE, log.high_watermark, entry.sent_last_stable_offset, log.log_start_offset
        )
    if params.from_any_replica:
        preferred = replicas.leaders.preferred_read_replica(
            entry.topic, entry.partition, params.client_rack, params.listener, entry.fetch_offset
        )
        if preferred >= 0:
            # Kafka's readFromLog: the redirect replaces the read; the offsets still go along.
            redirect = _with_offsets(ErrorCode.NONE, log)
            redirect.preferred_read_replica = preferred
            return redirect
    if params.api_version >= 12 and entry.last_fetched_epoch >= 0:
        try:
            diverging = _diverging_epoch(log, entry)
        except OffsetOutOfRangeError:
            return _with_offsets(ErrorCode.OFFSET_OUT_OF_RANGE, log)
        if diverging is not None:
            parted = _with_offsets(ErrorCode.NONE, log)
            parted.diverging_epoch = diverging
            return parted
    if replica_id >= 0 and leader_throttles(entry, log, replica_id, replicas, quota):
        # As Kafka: no records, and none counted towards min_bytes (the fetch waits as if idle).
        return _with_offsets(ErrorCode.NONE, log)
    try:
        info = log.read(
            entry.fetch_offset, limit, isolation=params.isolation, min_one_message=min_one_message
        )
        records = _records(info, params.api_version)
    except OffsetOutOfRangeError:
        return _with_offsets(ErrorCode.OFFSET_OUT_OF_RANGE, log)
    except (StorageError, CodecError) as error:
        return LogReadResult(error_code_for(error))
    if replica_id >= 0 and not records:
        entry.idle_position = (entry.fetch_offset, entry.last_fetched_epoch)
    return LogReadResult(
        ErrorCode.NONE,
        info.high_watermark,
        info.last_stable_offset,
        info.log_start_offset,
        records,
        info.aborted_transactions,
    )


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


def _with_offsets(code: ErrorCode, log: Log) -> LogReadResult:
    return LogReadResult(code, log.high_watermark, log.last_stable_offset, log.log_start_offset)
