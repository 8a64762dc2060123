"""The share coordinator (KIP-932): the share-group state of the keys whose `__share_group_state`
partition this broker leads, served to the share partitions (in-process, as their SharePersister) and to
other brokers (the five *ShareGroupState RPCs, handlers/share_group_state.py).

A key `group:topicId:partition` lives in the partition its Java hash picks, as Kafka's
ShareCoordinatorService. Each step runs under the key's lock: the shard checks it and makes the record,
the record is appended and waits for the in-sync replicas (`share.coordinator.write.timeout.ms`), and
only then is it replayed into the shard and the caller answered. A failed write leaves the state in
memory as it was; the next step of the key sees every step before it.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable

from odradek.config.broker import BrokerConfig
from odradek.coordinator.committed_writes import append_committed
from odradek.coordinator.runtime import CoordinatorRuntime
from odradek.coordinator.share.records import ShareStateRecord
from odradek.coordinator.share.shard import ShareShard
from odradek.partition.delete_records import delete_records
from odradek.partition.share.persister import (
    SharePartitionKey,
    ShareState,
    ShareStateError,
    ShareStateSummary,
    StateBatch,
)
from odradek.protocol.error_codes import ErrorCode, KafkaError

SHARE_STATE_TOPIC = "__share_group_state"
#: The bytes of one state batch in a record (first and last offset, delivery state and count).
BATCH_BYTES = 8 + 8 + 1 + 2
log = logging.getLogger("odradek.coordinator.share")


def share_state_topic_configs(config: BrokerConfig) -> dict[str, str]:
    """`__share_group_state`'s topic configs, as Kafka 4.4's: records are kept (retention.ms -1) and
    deleted only below what every state still needs, never compacted (a compaction would keep one
    ShareUpdate per key and lose the ones before it)."""
    return {
        "cleanup.policy": "delete",
        "retention.ms": "-1",
        "compression.type": "producer",
        "segment.bytes": str(config.share_coordinator_state_topic_segment_bytes),
        "min.insync.replicas": str(config.share_coordinator_state_topic_min_isr),
    }


class ShareCoordinator:
    def __init__(
        self,
        config: BrokerConfig,
        runtime: CoordinatorRuntime[ShareShard],
        ensure_topic: Callable[[], Awaitable[bool]],
    ) -> None:
        self.config = config
        self.runtime = runtime
        self.ensure_topic = ensure_topic
        self._locks: dict[SharePartitionKey, tuple[asyncio.Lock, int]] = {}
        self._refreshing = asyncio.Lock()
        self._tasks: set[asyncio.Task[None]] = set()
        self.started = False

    # ----- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        """Load the partitions led here, if the topic exists. As Kafka 4.x, the topic is created on
        first use only (the first FindCoordinator or persister call for a share key), on a single node
        too: a broker whose clients use no share groups lists no `__share_group_state`."""
        self.started = True
        await self.refresh_leadership()
        config = self.config
        self._spawn(self._every(lambda: config.share_coordinator_state_topic_prune_interval_ms, self.prune))
        self._spawn(
            self._every(
                lambda: config.share_coordinator_cold_partition_snapshot_interval_ms,
                self.snapshot_cold_states,
            )
        )

    def stop(self) -> None:
        self.started = False
        for task in self._tasks:
            task.cancel()
        for partition in list(self.runtime.shards):
            self.runtime.resign(partition)

    def leadership_changed(self) -> None:
        """Cluster mode's hook (LeaderAndIsr, StopReplica): load the partitions led here, drop others."""
        if self.started:
            self._spawn(self.refresh_leadership())

    async def refresh_leadership(self) -> None:
        async with self._refreshing:
            runtime = self.runtime
            topic = runtime.cluster.topic(SHARE_STATE_TOPIC)
            if topic is None:
                return
            for state in topic.partitions:
                epoch = runtime.leadership.leader_epoch(SHARE_STATE_TOPIC, state.partition)
                if epoch is None:
                    if state.partition in runtime.shards:
                        runtime.resign(state.partition)
                    continue
                if runtime.leader_epochs.get(state.partition, epoch) != epoch:
                    # led again at a newer epoch: the epochs other leaders wrote may be newer than ours
                    runtime.resign(state.partition)
                runtime.become_leader(state.partition)
            await runtime.wait_loaded()

    async def prune(self) -> None:
        """Delete the records of the partitions loaded here that no state needs any more (Kafka's
        share.coordinator.state.topic.prune.interval.ms job): up to the oldest state's newest
        snapshot, never past the high watermark, so a follower elected next loads the same states.
        Followers move their log start offset up as the leader's, as after DeleteRecords."""
        runtime = self.runtime
        for shard in runtime.active_shards():
            offset = shard.last_redundant_offset()
            log_ = runtime.logs.get_log(SHARE_STATE_TOPIC, shard.partition)
            if offset is None or log_ is None:
                continue
            start = log_.log_start_offset
            try:  # the leader, cleanup.policy and offset rules are the entry's
                pruned = delete_records(
                    runtime.leadership,
                    runtime.logs,
                    SHARE_STATE_TOPIC,
                    shard.partition,
                    min(offset, log_.high_watermark),
                )
            except KafkaError as refused:  # led elsewhere now, or not a partition records leave
                log.debug("%s-%d not pruned: %s", SHARE_STATE_TOPIC, shard.partition, refused)
                continue
            if pruned > start:
                log.debug("pruned %s-%d to %d", SHARE_STATE_TOPIC, shard.partition, pruned)

    async def snapshot_cold_states(self) -> None:
        """Write a new snapshot of every state whose newest is older than
        `share.coordinator.cold.partition.snapshot.interval.ms`: an idle state's old snapshot would
        hold its partition's pruning back for ever (Kafka's snapshotColdPartitions)."""
        interval_ms = self.config.share_coordinator_cold_partition_snapshot_interval_ms
        for shard in self.runtime.active_shards():
            for key in shard.cold_states(interval_ms):
                try:
                    async with self._step(key) as current:
                        record = current.cold_snapshot(key)
                        if record is not None:
                            await self._commit(current, record)
                except ShareStateError as error:  # moved, or the write failed: the next round tries
                    log.debug("no snapshot of idle state %s: %s", key.coordinator_key, error)

    @staticmethod
    async def _every(interval_ms: Callable[[], int], job: Callable[[], Awaitable[None]]) -> None:
        """Run `job` every `interval_ms()` ms, until cancelled."""
        while True:
            await asyncio.sleep(interval_ms() / 1000)
            try:
                await job()
            except Exception:
                log.exception("the share coordinator's %s failed", getattr(job, "__name__", "job"))

    def coordinator_node(self, key: str) -> int | None:
        """The broker leading `key`'s partition (None: not known yet, the topic being created)."""
        runtime = self.runtime
        if not self.started:
            return None
        if runtime.cluster.topic(SHARE_STATE_TOPIC) is None:
            self._spawn(self.create_and_load())
            return None
        state = runtime.cluster.partition(SHARE_STATE_TOPIC, runtime.partition_for(key))
        if state is None or state.leader_id < 0:
            return None
        return int(state.leader_id)

    async def create_and_load(self) -> None:
        """Create the topic if it is missing, then load the partitions led here."""
        if await self.ensure_topic():
            await self.refresh_leadership()

    def _spawn(self, work: Awaitable[None]) -> None:
        task: asyncio.Task[None] = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ----- the persister (SharePersister) ---------------------------------------------------------

    async def initialize(self, key: SharePartitionKey, state_epoch: int, start_offset: int) -> None:
        async with self._step(key) as shard:
            await self._commit(shard, shard.initialize(key, state_epoch, start_offset))

    async def read(self, key: SharePartitionKey, leader_epoch: int) -> ShareState:
        async with self._step(key) as shard:
            state, record = shard.read(key, leader_epoch)
            if record is not None:
                await self._commit(shard, record)
            return state

    async def write(
        self,
        key: SharePartitionKey,
        state_epoch: int,
        leader_epoch: int,
        start_offset: int,
        batches: tuple[StateBatch, ...],
        delivery_complete_count: int = -1,
    ) -> None:
        async with self._step(key) as shard:
            self.check_batch_count(shard.partition, len(batches))
            record = shard.write(
                key, state_epoch, leader_epoch, start_offset, batches, delivery_complete_count
            )
            await self._commit(shard, record)

    async def delete(self, key: SharePartitionKey) -> None:
        async with self._step(key) as shard:
            record = shard.delete(key)
            if record is not None:
                await self._commit(shard, record)

    def forget_topics(self, topic_ids: set[uuid.UUID]) -> None:
        """`topics_deleted` in the background (the controller's UpdateMetadata does not wait for it)."""
        if self.started:
            self._spawn(self.topics_deleted(topic_ids))

    async def topics_deleted(self, topic_ids: set[uuid.UUID]) -> None:
        """Topics were deleted: every group's state of their partitions loaded here is tombstoned
        (Kafka 4.4's on-topics-deleted cleanup), so that it is neither kept nor served again."""
        for shard in self.runtime.active_shards():
            for key in [k for k in shard.states if k.topic_id in topic_ids]:
                try:
                    await self.delete(key)
                except ShareStateError as error:  # moved meanwhile: its new coordinator has it
                    log.info("state %s of a deleted topic not deleted here: %s", key.coordinator_key, error)

    async def read_summary(self, key: SharePartitionKey, leader_epoch: int) -> ShareStateSummary:
        async with self._step(key) as shard:
            return shard.read_summary(key)

    def check_batch_count(self, partition: int, count: int) -> None:
        """Refuse a write of more state batches than one record of the partition can hold (each takes
        at least BATCH_BYTES), before any of them is combined or encoded: that work, on the event loop,
        would only end in the append's refusal of a record larger than max.message.bytes."""
        log_ = self.runtime.logs.get_log(SHARE_STATE_TOPIC, partition)
        if log_ is not None and count > log_.config.max_message_bytes // BATCH_BYTES:
            raise ShareStateError(
                ErrorCode.UNKNOWN_SERVER_ERROR,
                f"{count} state batches are more than a record of {SHARE_STATE_TOPIC} holds.",
            )

    # ----- steps ----------------------------------------------------------------------------------

    def _step(self, key: SharePartitionKey) -> _KeyStep:
        return _KeyStep(self, key)

    def shard_for(self, key: SharePartitionKey) -> ShareShard:
        """The loaded shard of `key`, or the ShareStateError its caller retries on (NOT_COORDINATOR,
        COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE)."""
        if not self.started:
            raise ShareStateError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        try:
            return self.runtime.shard_for(key.coordinator_key)
        except KafkaError as error:
            raise ShareStateError(error.error_code, error.error_message) from None

    async def _commit(self, shard: ShareShard, record: ShareStateRecord) -> None:
        """Append `record` to the shard's partition, wait for the ISR, then replay it into the shard."""
        runtime = self.runtime
        partition = shard.partition
        timeout_ms = self.config.share_coordinator_write_timeout_ms
        try:
            made = await append_committed(runtime, partition, [record], timeout_ms)
        except KafkaError as failed:
            raise ShareStateError(failed.error_code) from None
        if runtime.shards.get(partition) is not shard:
            raise ShareStateError(ErrorCode.NOT_COORDINATOR)  # unloaded meanwhile: the new one replays it
        shard.replay(record, made.last_offset)  # one record appended


class _KeyStep:
    """One step of a key: its shard, under the key's lock (dropped once no step waits for it)."""

    def __init__(self, coordinator: ShareCoordinator, key: SharePartitionKey) -> None:
        self.coordinator = coordinator
        self.key = key

    async def __aenter__(self) -> ShareShard:
        locks = self.coordinator._locks
        lock, users = locks.get(self.key, (asyncio.Lock(), 0))
        locks[self.key] = (lock, users + 1)
        try:
            await lock.acquire()
        except BaseException:
            self._release_user()
            raise
        try:
            return self.coordinator.shard_for(self.key)  # after the wait: the shard may have moved
        except BaseException:
            lock.release()
            self._release_user()
            raise

    async def __aexit__(self, *_exc: object) -> None:
        lock, _users = self.coordinator._locks[self.key]
        lock.release()
        self._release_user()

    def _release_user(self) -> None:
        locks = self.coordinator._locks
        lock, users = locks[self.key]
        if users <= 1:
            del locks[self.key]
        else:
            locks[self.key] = (lock, users - 1)
