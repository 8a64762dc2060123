"""Appends as a follower: what a replica fetcher does to a partition's log with its leader's answer
(Kafka's ReplicaFetcherThread.processPartitionData → Partition.appendRecordsToFollowerOrFutureReplica →
UnifiedLog.appendAsFollower, and Partition.truncateTo / truncateFullyAndStartAt). The one way anything
appends to a log as follower; the fetcher (cluster/replication/replica_fetcher.py) keeps the fetching:
sessions, backoff, throttles, which partitions, and where a log diverges from its leader's.

`append_fetched` appends only to a partition hosted here as follower at the fetch's leader epoch and in
the log the fetch was for: the batches as they are (offsets, leader epochs, producer state kept; the
epoch cache learns each new epoch), fsynced if the log's flush settings make it due, then the follower's
high watermark becomes min(leader's HW, own log end), lower than before too, as Kafka's (a new leader's
lags), and its log start follows the leader's. An append or a high-watermark move raises the append
event (a consumer's fetch from this follower, KIP-392, waits on it). A log truncated since its
checkpoints were written is appended to only once its lowered recovery point is on disk
(truncation_checkpoints.py). An I/O error takes the log dir offline, as a leader's append does (the log
reports it: storage/log_dir_failure.py); LogStorageError propagates.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from odradek.partition.hosted_partition import PartitionKey
from odradek.partition.leader_append import flush_log_if_due
from odradek.partition.ports import TruncationSync
from odradek.partition.replica_manager import ReplicaManager
from odradek.protocol.messages.fetch import PartitionData
from odradek.protocol.records.framing import split_complete_batches
from odradek.storage.log import Log
from odradek.storage.partition import TopicPartition

log = logging.getLogger("odradek.cluster.replication.fetcher")


class FollowerAppends:
    def __init__(self, replicas: ReplicaManager, checkpoints: TruncationSync) -> None:
        self.replicas = replicas
        self.checkpoints = checkpoints

    async def append_fetched(
        self,
        key: PartitionKey,
        leader_epoch: int,
        replica_log: Log,
        data: PartitionData,
        fetching: Callable[[], bool],
    ) -> int | None:
        """Apply the leader's answer `data` for the partition followed at `leader_epoch` in `replica_log`.
        Returns the bytes appended (0: none, the high watermark and log start applied all the same), or
        None when nothing was applied: the partition is not (or no longer, after a wait) hosted here as
        that follower, or `fetching` (the fetcher still fetches it as it did: Kafka holds its
        partitionMapLock across the answer) says no, or the log was truncated while this waited."""
        if not self._follows(key, leader_epoch, replica_log, fetching):
            return None
        records = data.records
        # Only a partial batch may come (replica.fetch.max.bytes below a batch's size, on a partition
        # after the first): nothing to append then, the next fetch asks again.
        records = records if records and split_complete_batches(records)[0] else None
        if records:
            if self.checkpoints.pending(replica_log):
                # Truncated since the checkpoint on disk was written: it may claim the offsets this
                # writes as fsynced (Kafka writes it before its fetcher goes on, LogManager.truncateTo).
                end = replica_log.log_end_offset
                await self.checkpoints.written(replica_log)
                if not self._follows(key, leader_epoch, replica_log, fetching):
                    return None  # led here, followed at a newer epoch, since
                if replica_log.log_end_offset != end:
                    return None  # truncated again since
            replica_log.append_as_follower(records)
            await flush_log_if_due(replica_log)
            if not self._follows(key, leader_epoch, replica_log, fetching):
                return None  # led here, or followed at a newer epoch, since: not this answer's
        if data.log_start_offset > replica_log.log_start_offset:
            replica_log.increment_log_start_offset(min(data.log_start_offset, replica_log.log_end_offset))
        # Kafka's maybeUpdateHighWatermark: the leader's, clamped to this log, lower too (a new
        # leader's lags until the records of its epoch are replicated); a leader's never goes back.
        before = replica_log.high_watermark
        if replica_log.update_high_watermark(data.high_watermark) != before or records:
            self.replicas.appends.notify(TopicPartition(*key))
        return len(records) if records else 0

    def truncate(self, replica_log: Log, offset: int, why: str) -> None:
        """Drop the log's records at and after `offset` (Kafka's Partition.truncateTo); their segments
        are deleted after file.delete.delay.ms. At or past the log end it only drops the leader epochs
        assigned past it, if any."""
        if offset >= replica_log.log_end_offset:
            replica_log.truncate_to(offset)
            return
        log.info(
            "truncating %s from %d to %d (%s)",
            replica_log.topic_partition,
            replica_log.log_end_offset,
            offset,
            why,
        )
        removed = replica_log.truncate_to(offset)
        self.replicas.logs.deletions.schedule_deletion(removed, replica_log.config.file_delete_delay_ms)

    def truncate_fully_and_start_at(self, replica_log: Log, offset: int) -> None:
        """Replace the log by an empty one starting at `offset` (the leader's log starts past this one's
        end); the old segments are deleted after file.delete.delay.ms."""
        removed = replica_log.truncate_fully_and_start_at(offset)
        self.replicas.logs.deletions.schedule_deletion(removed, replica_log.config.file_delete_delay_ms)

    def _follows(
        self, key: PartitionKey, leader_epoch: int, replica_log: Log, fetching: Callable[[], bool]
    ) -> bool:
        hosted = self.replicas.hosted.get(key)
        return (
            hosted is not None
            and hosted.leader != self.replicas.node_id
            and hosted.leader_epoch == leader_epoch
            and hosted.log is replica_log
            and fetching()
        )
