"""The group coordinator's runtime over `__consumer_offsets`: group shards with their timers, written
through CoordinatorResults.

Like Kafka's CoordinatorRuntime, every group step returns a CoordinatorResult; `write` appends its
records to the shard's partition (one atomic append) and only then replays them and runs the step's
callback, so the state a client is told about is always in the log. Offset commits are applied only
once the in-sync replicas hold them (the high watermark passed them): a commit that fails (refused
under min.insync.replicas, timed out, leadership lost) is never returned by OffsetFetch, which reads
what a coordinator elected from the ISR would read. Every shard lookup applies what has been
replicated since (`catch_up`), so readers never see less than the ISR holds either.
TxnOffsetCommit records are appended in a transactional batch of the producer (`write_transactional`)
and held in the shard per producer id; the COMMIT or ABORT marker the transaction coordinator writes
to the partition applies (once replicated) or drops them, on the live path and again on replay.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import TypeVar

from odradek.coordinator.client_regex import RegexMatcher
from odradek.coordinator.ports import MetadataView
from odradek.coordinator.records import (
    GROUP_METADATA,
    OFFSET_COMMIT,
    OFFSET_COMMIT_LEGACY,
    CoordinatorRecord,
)
from odradek.coordinator.result import CoordinatorResult
from odradek.coordinator.runtime import CoordinatorRuntime, PartitionState
from odradek.coordinator.settings import OFFSETS_TOPIC, GroupSettings
from odradek.coordinator.shard import GroupShard
from odradek.coordinator.timer import CoordinatorTimer, Operation, Runner
from odradek.coordinator.write_errors import (
    append_failure,
    group_metadata_error,
    offset_commit_error,
    transaction_log_error,
)
from odradek.partition.leader_append import LeaderAppend
from odradek.partition.leadership import Leadership
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.records import Compression
from odradek.storage.log_manager import LogManager

log = logging.getLogger("odradek.coordinator")

T = TypeVar("T")


class GroupRuntime(CoordinatorRuntime[GroupShard]):
    """`__consumer_offsets`: group shards, with timers, written through CoordinatorResults."""

    KEY_NAME = "group id"
    KEY_ERROR = ErrorCode.INVALID_GROUP_ID

    def __init__(
        self,
        settings: GroupSettings,
        logs: LogManager,
        cluster: MetadataView,
        node_id: int,
        regexes: RegexMatcher,
        clock: Callable[[], float] = time.time,
        timer_factory: Callable[[Runner], CoordinatorTimer] = CoordinatorTimer,
        *,
        leadership: Leadership,
    ) -> None:
        super().__init__(
            OFFSETS_TOPIC,
            "groups",
            settings.offsets_topic_num_partitions,
            settings.offsets_load_buffer_size,
            Compression(settings.offsets_topic_compression_codec),
            logs,
            cluster,
            node_id,
            clock,
            leadership=leadership,
        )
        self.settings = settings
        self.timer_factory = timer_factory
        #: Resolves the consumer groups' regex subscriptions.
        self.regexes = regexes
        self._waits: set[asyncio.Task[None]] = set()

    def new_shard(self, partition: int) -> GroupShard:
        timer = self.timer_factory(lambda key, operation: self.run_timer(partition, key, operation))
        return GroupShard(partition, self.settings, timer, self.now_ms, self.cluster, self.regexes)

    def shard_for(self, key: str) -> GroupShard:
        shard = super().shard_for(key)
        self.catch_up(shard)
        return shard

    def active_shards(self) -> list[GroupShard]:
        shards = super().active_shards()
        for shard in shards:
            self.catch_up(shard)
        return shards

    def catch_up(self, shard: GroupShard) -> None:
        """Apply the shard's offset commits that its partition's high watermark has passed since."""
        if shard.unreplicated_offsets:
            partition_log = self.logs.get_log(self.topic, shard.partition)
            if partition_log is not None:
                shard.apply_replicated(partition_log.high_watermark)

    def write(self, shard: GroupShard, result: CoordinatorResult[T] | None) -> ErrorCode | None:
        """Append `result`'s records; on success replay them (if asked: offset commits once replicated);
        tell its callback either way."""
        if result is None:
            return None
        error: ErrorCode | None = None
        if result.records:
            try:
                made = self.append_records(shard.partition, result.records)
            except Exception as failure:
                error = _client_error(result.records, append_failure(failure))
                log.warning(
                    "writing %d records to %s-%d failed: %s",
                    len(result.records),
                    OFFSETS_TOPIC,
                    shard.partition,
                    failure,
                )
            else:
                if result.replay:
                    shard.replay_appended(result.records, made.last_offset + 1)
                    self.catch_up(shard)
                if result.on_appended is not None and not made.completed_at_append():
                    self._tell_once_committed(shard, result.records, made, result.on_appended)
                    return None
        if result.on_appended is not None:
            result.on_appended(error)
        return error

    async def committed(self, partition: int, log_end_before: int) -> ErrorCode | None:
        """After a step's write: None once the in-sync replicas hold what was appended to `partition`
        since `log_end_before` (at once if nothing was), else the error its client is told."""
        if self.log_end(partition) <= log_end_before:
            return None
        outcome = await self.complete_log_end(partition, self.settings.offsets_commit_timeout_ms)
        return None if outcome is ErrorCode.NONE else transaction_log_error(outcome)

    async def offsets_committed(
        self, group_id: str, errors: dict[tuple[str, int], ErrorCode]
    ) -> ErrorCode | None:
        """After an offset commit whose partitions' `errors` are these: None once everything appended to
        the group's partition (its commit, or the earlier one it repeats) is committed, at most
        offsets.commit.timeout.ms, or at once when no partition was committed; else the error the commit
        is answered with (write_errors.py)."""
        if all(code is not ErrorCode.NONE for code in errors.values()):
            return None
        outcome = await self.complete_log_end(
            self.partition_for(group_id), self.settings.offsets_commit_timeout_ms
        )
        return None if outcome is ErrorCode.NONE else offset_commit_error(outcome)

    def log_end(self, partition: int) -> int:
        partition_log = self.logs.get_log(self.topic, partition)
        return int(partition_log.log_end_offset) if partition_log is not None else 0

    def stop_waiting(self) -> None:
        """Drop the writes still waiting for the ISR (the coordinator stops)."""
        for task in self._waits:
            task.cancel()

    def _tell_once_committed(
        self,
        shard: GroupShard,
        records: list[CoordinatorRecord],
        made: LeaderAppend,
        callback: Callable[[ErrorCode | None], None],
    ) -> None:
        """Kafka's storeGroup: the members hear how the GroupMetadata write went once the in-sync
        replicas hold it (and it is fsynced if due), or it failed, never before: a SyncGroup answered
        with an assignment a failover would lose would let two generations consume at once."""
        waiting = self.complete(made, self.settings.offsets_commit_timeout_ms)

        async def tell() -> None:
            outcome = await waiting
            if self.shards.get(shard.partition) is not shard:
                return  # unloaded meanwhile: its members were told NOT_COORDINATOR then
            callback(None if outcome is ErrorCode.NONE else _client_error(records, outcome))

        task = asyncio.get_running_loop().create_task(tell())
        self._waits.add(task)
        task.add_done_callback(self._waits.discard)

    def write_transactional(
        self, shard: GroupShard, records: list[CoordinatorRecord], producer_id: int, producer_epoch: int
    ) -> ErrorCode | None:
        """Append TxnOffsetCommit records in a transactional batch of the producer; they wait in the
        shard until the transaction's marker is written to this partition."""
        try:
            self.append_records(shard.partition, records, producer_id, producer_epoch)
        except Exception as failure:
            log.warning(
                "writing transactional offsets to %s-%d failed: %s", OFFSETS_TOPIC, shard.partition, failure
            )
            return offset_commit_error(append_failure(failure))
        for record in records:
            shard.replay_transactional(producer_id, record)
        return None

    def complete_transaction(self, partition: int, producer_id: int, committed: bool) -> None:
        """A transaction marker was just appended to the partition: the producer's offsets are
        committed once the marker is on the in-sync replicas (or dropped, for an abort)."""
        shard = self.shards.get(partition)
        partition_log = self.logs.get_log(self.topic, partition)
        if shard is None or partition_log is None:
            return
        shard.complete_transaction(producer_id, committed, committed_at=partition_log.log_end_offset)
        self.catch_up(shard)

    def run_timer(self, partition: int, key: str, operation: Operation) -> None:
        shard = self.shards.get(partition)
        if shard is None or self.states.get(partition) is not PartitionState.ACTIVE:
            return
        self.catch_up(shard)
        self.write(shard, operation())


def _client_error(records: list[CoordinatorRecord], append_error: ErrorCode) -> ErrorCode:
    """A failed write's error as the coordinator Kafka writes such records with answers it."""
    types = {record.record_type for record in records}
    if types <= {OFFSET_COMMIT, OFFSET_COMMIT_LEGACY}:
        return offset_commit_error(append_error)
    if GROUP_METADATA in types:
        return group_metadata_error(append_error)
    return transaction_log_error(append_error)  # KIP-848 groups: the new coordinator's mapping
