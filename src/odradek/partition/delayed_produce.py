"""acks=all: a Produce answered once the in-sync replicas hold its records (Kafka's DelayedProduce).

After the leader's append, each partition waits until its high watermark passes the batch's last
offset. The wait is the same delayed operation that fetches use: the high watermark's moves notify the
partition (as appends do), and the waiter re-checks. The answer per partition is as Kafka's
checkEnoughReplicasReachOffset: NONE when the HW passed and the ISR still has min.insync.replicas,
NOT_ENOUGH_REPLICAS_AFTER_APPEND when it passed but the (maximal) ISR has shrunk below Kafka's effective
minimum, min(min.insync.replicas, replication factor), by then, REQUEST_TIMED_OUT after timeout_ms, and
NOT_LEADER_OR_FOLLOWER when the leadership moved away meanwhile: this broker became a follower or
stopped hosting the partition (even if it leads it again by now: its log may have been truncated).
A new leader epoch that keeps this broker leader (an ISR change, a reassignment, a preferred election
back here) is no reason to answer: as after Kafka's makeLeader, the append stays in the log and its
wait goes on (a spurious retriable error would make a producer that is not idempotent write twice).
On a single node (and for a leader alone in its ISR) the HW is the log end after the append: no wait.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Protocol

from odradek.partition.hosted_partition import HostedPartition, PartitionKey
from odradek.partition.purgatory import AppendNotifier
from odradek.protocol.error_codes import ErrorCode
from odradek.storage.log import Log
from odradek.storage.partition import TopicPartition


class LeaderReplicas(Protocol):
    """What the wait asks of the replica manager (partition/replica_manager.py): which partitions it
    leads and since when, their ISR, and the append events that wake the wait."""

    @property
    def leading(self) -> dict[PartitionKey, HostedPartition]: ...

    @property
    def appends(self) -> AppendNotifier: ...

    def still_leading_since(self, topic: str, partition: int, leader_epoch: int) -> bool: ...

    def under_min_isr(self, topic: str, partition: int, maximal: bool = False) -> bool: ...


@dataclass(frozen=True, slots=True)
class AwaitingReplicas:
    """One partition's append waiting for the ISR."""

    partition: TopicPartition
    log: Log
    #: The HW that acknowledges the append: its last offset + 1.
    required_offset: int
    #: The leader epoch of the append.
    leader_epoch: int


async def wait_for_replicas(
    awaiting: list[AwaitingReplicas], timeout_ms: int, replicas: LeaderReplicas
) -> list[ErrorCode]:
    """Wait until every partition is decided (or the timeout); each one's answer, in order."""
    undecided = [a for a in awaiting if _outcome(a, replicas) is None]
    if undecided:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(timeout_ms, 0) / 1000
        with replicas.appends.waiting_on([a.partition for a in undecided]) as waiter:
            while undecided:
                remaining = deadline - loop.time()
                if remaining <= 0:
                    break
                waiter.rearm()
                await waiter.wait(remaining)
                undecided = [a for a in undecided if _outcome(a, replicas) is None]
    outcomes = (_outcome(entry, replicas) for entry in awaiting)
    return [ErrorCode.REQUEST_TIMED_OUT if outcome is None else outcome for outcome in outcomes]


def _outcome(entry: AwaitingReplicas, replicas: LeaderReplicas) -> ErrorCode | None:
    """The partition's answer once decided; None while it still waits."""
    if not replicas.still_leading_since(entry.partition.topic, entry.partition.partition, entry.leader_epoch):
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    topic, index = entry.partition
    # the partition's log now, as Kafka's DelayedProduce asks its Partition: a log-dir move may have
    # swapped in a copy since the append, and only that one's high watermark moves
    hosted = replicas.leading.get((topic, index))
    current = hosted.log if hosted is not None else entry.log
    if current.high_watermark < entry.required_offset:
        return None
    if replicas.under_min_isr(topic, index, maximal=True):
        return ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
    return ErrorCode.NONE


async def replication_outcome(
    partition: TopicPartition, required_offset: int, timeout_ms: int, replicas: LeaderReplicas
) -> ErrorCode:
    """What a partition led here holds up to `required_offset` (a coordinator's log end, its step's
    answer: ReplicaManager.complete_log_end): waited for as a Produce's, and answered with the same
    append errors (NONE, REQUEST_TIMED_OUT, NOT_ENOUGH_REPLICAS_AFTER_APPEND, NOT_LEADER_OR_FOLLOWER),
    which the coordinator maps for its client (coordinator/write_errors.py)."""
    hosted = replicas.leading.get((partition.topic, partition.partition))
    if hosted is None:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    entry = AwaitingReplicas(partition, hosted.log, required_offset, hosted.leader_epoch)
    [outcome] = await wait_for_replicas([entry], timeout_ms, replicas)
    return outcome


def decided_now(
    hosted_log: Log, partition: TopicPartition, leader_epoch: int, replicas: LeaderReplicas
) -> ErrorCode | None:
    """`replication_outcome` for the log's end when it needs no wait (the high watermark is there):
    its answer; None when a wait is needed."""
    return _outcome(
        AwaitingReplicas(partition, hosted_log, hosted_log.log_end_offset, leader_epoch), replicas
    )
