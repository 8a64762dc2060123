"""What a follower's Fetch does at the leader (ZooKeeper mode), beside reading: the leader learns the
follower's position from it (the high watermark and the ISR move), and a fetch naming an epoch the
leader has not applied yet waits for its LeaderAndIsr (handlers/fetch.py's version notes)."""

from __future__ import annotations

import asyncio
from typing import Protocol

from odradek.partition.fetch_sessions import CachedPartition
from odradek.partition.ports import LeaderReplicationQuota
from odradek.partition.replica_manager import ReplicaManager
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.fetch import PartitionData
from odradek.storage.log import Log
from odradek.storage.log_manager import LogManager


class PartitionWaiter(Protocol):
    """A fetch's wait on its partitions (partition/purgatory.py's AppendWaiter): woken by their appends
    and by LeaderAndIsr."""

    def rearm(self) -> None: ...

    async def wait(self, timeout: float) -> bool: ...


def awaiting_epochs(
    partitions: list[CachedPartition], results: list[PartitionData], replicas: ReplicaManager
) -> list[CachedPartition]:
    """The partitions a follower fetches at an epoch this broker hosts them at but has not applied yet."""
    return [
        entry
        for entry, data in zip(partitions, results, strict=True)
        if data.error_code == ErrorCode.UNKNOWN_LEADER_EPOCH
        and replicas.awaits_leader_epoch(entry.topic, entry.partition, entry.current_leader_epoch)
    ]


async def hold_for_epochs(
    waiter: PartitionWaiter, held: list[CachedPartition], replicas: ReplicaManager, deadline: float
) -> None:
    """Hold a follower's fetch until this broker has applied the leader epochs it names, or until its
    max_wait_ms has passed (the caller then answers UNKNOWN_LEADER_EPOCH for what is still unknown).

    The controller sends a moved partition's LeaderAndIsr to its new leader and its followers at
    once, and a follower often applies it first. Kafka answers that follower's fetch at once with
    UNKNOWN_LEADER_EPOCH, and the follower backs the partition off for replica.fetch.backoff.ms
    (1 s), holding the new leader's high watermark and every acks=all produce of the partition that
    long. Held here, the fetch is answered as soon as the LeaderAndIsr (which wakes the partition's
    waiters) arrives. The whole fetch waits, even when its other partitions have data: answering
    those would hand the moved one its error and the backoff. Nothing waits past max_wait_ms."""
    loop = asyncio.get_running_loop()
    while any(replicas.awaits_leader_epoch(p.topic, p.partition, p.current_leader_epoch) for p in held):
        remaining = deadline - loop.time()
        if remaining <= 0:
            return
        waiter.rearm()
        await waiter.wait(remaining)


def record_follower_fetches(
    partitions: list[CachedPartition],
    results: list[PartitionData],
    replica_id: int,
    replica_epoch: int,
    replicas: ReplicaManager,
    logs: LogManager,
) -> None:
    """The leader learns each follower's log end from its fetch offset, and its broker epoch (Kafka's
    updateFollowerFetchState, after the read, and not for a fetch answered with DivergingEpoch); the
    answer then carries the high watermark as that fetch left it."""
    for entry, data in zip(partitions, results, strict=True):
        if data.error_code != ErrorCode.NONE or diverging(data):
            continue
        replicas.leaders.record_follower_fetch(
            entry.topic,
            entry.partition,
            replica_id,
            entry.fetch_offset,
            entry.log_start_offset,
            replica_epoch,
        )
        log = logs.get_log(entry.topic, entry.partition)
        if log is not None:
            data.high_watermark = log.high_watermark
            data.last_stable_offset = log.last_stable_offset


def diverging(data: PartitionData) -> bool:
    """Whether the answer tells the follower where its log parted from the leader's (DivergingEpoch)."""
    diverging = data.diverging_epoch
    return diverging is not None and (diverging.epoch >= 0 or diverging.end_offset >= 0)


def leader_throttles(
    entry: CachedPartition,
    log: Log,
    replica_id: int,
    replicas: ReplicaManager,
    quota: LeaderReplicationQuota,
) -> bool:
    """Whether the leader's replication quota holds this follower's partition back now (Kafka's
    shouldLeaderThrottle): a partition the topic's leader.replication.throttled.replicas names for this
    broker, fetched by a replica not in the ISR, while the throttled replicas' rate is over
    leader.replication.throttled.rate. It is then answered without records."""
    throttled = (
        quota.is_throttled(log.config.leader_replication_throttled_replicas, entry.partition)
        and not replicas.leaders.in_sync(entry.topic, entry.partition, replica_id)
        and quota.is_quota_exceeded()
    )
    if throttled:
        quota.count_throttled(1)
    return throttled


def record_replication(
    entry: CachedPartition, data: PartitionData, logs: LogManager, quota: LeaderReplicationQuota
) -> None:
    """The records a follower is sent of a throttled partition count towards the leader's quota, in
    sync or not (Kafka's sizeOfThrottledPartitions, after the answer is built)."""
    if not data.records:
        return
    log = logs.get_log(entry.topic, entry.partition)
    if log is not None and quota.is_throttled(
        log.config.leader_replication_throttled_replicas, entry.partition
    ):
        quota.record(len(data.records))
