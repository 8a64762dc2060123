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
import functools
from dataclasses import dataclass

from odradek.cluster.leadership import IsrWait
from odradek.handlers.services import Services
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.produce import PartitionProduceResponse
from odradek.storage.log import Log
from odradek.storage.partition import TopicPartition


@dataclass(slots=True)
class AwaitingReplicas:
    """One partition's append waiting for the ISR."""

    partition: TopicPartition
    log: Log
    #: The HW that acknowledges the append: its last offset + 1.
    required_offset: int
    #: The leader epoch of the append.
    leader_epoch: int
    response: PartitionProduceResponse


async def wait_for_replicas(awaiting: list[AwaitingReplicas], timeout_ms: int, services: Services) -> None:
    """Wait until every partition is decided (or the timeout), then set each one's answer."""
    undecided = [a for a in awaiting if _outcome(a, services) is None]
    if undecided:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(timeout_ms, 0) / 1000
        with services.appends.waiting_on([a.partition for a in undecided]) as waiter:
            while undecided:
                remaining = deadline - loop.time()
                if remaining <= 0:
                    break
                waiter.rearm()
                await waiter.wait(remaining)
                undecided = [a for a in undecided if _outcome(a, services) is None]
    for entry in awaiting:
        outcome = _outcome(entry, services)
        entry.response.error_code = ErrorCode.REQUEST_TIMED_OUT if outcome is None else outcome
        if entry.response.error_code != ErrorCode.NONE:
            entry.response.base_offset = -1
            entry.response.log_append_time_ms = -1


def _outcome(entry: AwaitingReplicas, services: Services) -> ErrorCode | None:
    """The partition's answer once decided; None while it still waits."""
    replicas = services.replicas
    if replicas is None:  # a single node: the append itself moved the HW
        return ErrorCode.NONE
    if not replicas.still_leading_since(entry.partition.topic, entry.partition.partition, entry.leader_epoch):
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    if entry.log.high_watermark < entry.required_offset:
        return None
    topic, index = entry.partition
    if replicas.under_min_isr(topic, index, maximal=True):
        return ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
    return ErrorCode.NONE


async def replication_outcome(
    partition: TopicPartition, required_offset: int, timeout_ms: int, services: Services
) -> ErrorCode:
    """A coordinator's own write (an acks=all append to its internal topic, just made, up to
    `required_offset`): waited for as a Produce's, and answered with the same append errors (NONE,
    REQUEST_TIMED_OUT, NOT_ENOUGH_REPLICAS_AFTER_APPEND, NOT_LEADER_OR_FOLLOWER), which the coordinator
    maps for its client (coordinator/write_errors.py)."""
    replicas = services.replicas
    if replicas is None:
        return ErrorCode.NONE  # a single node: the append itself moved the HW
    hosted = replicas.leading.get((partition.topic, partition.partition))
    log = services.logs.get_log(partition.topic, partition.partition)
    if hosted is None or log is None:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    answer = PartitionProduceResponse(index=partition.partition)
    entry = AwaitingReplicas(partition, log, required_offset, hosted.leader_epoch, answer)
    await wait_for_replicas([entry], timeout_ms, services)
    return ErrorCode(answer.error_code)


def isr_wait(services: Services) -> IsrWait:
    """`replication_outcome` for the broker's own acks=-1 appends: the coordinators' writes to their
    internal topics and transaction markers (cluster/leadership.py)."""
    return functools.partial(replication_outcome, services=services)
