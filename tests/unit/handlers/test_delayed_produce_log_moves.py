"""An acks=all Produce waiting for the ISR while its partition's log moves to another log dir."""

from __future__ import annotations

import asyncio
from pathlib import Path

from odradek.cluster.control_requests import ControllerStamp, PartitionLeadership
from odradek.cluster.metadata import ClusterMetadata
from odradek.cluster.replica_manager import ReplicaManager
from odradek.partition.delayed_produce import AwaitingReplicas, wait_for_replicas
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.records import RecordBatchBuilder
from odradek.storage.config import LogConfig
from odradek.storage.log_manager import LogManager
from odradek.storage.log_moves import copy_to_future
from odradek.storage.partition import TopicPartition
from odradek.storage.stray_logs import JudgedByLeaderAndIsr

NODE = 2


def test_an_acks_all_produce_is_acknowledged_by_the_high_watermark_of_the_log_moved_in_meanwhile(
    tmp_path: Path,
) -> None:
    """The wait held the Log it appended to; once a log-dir move swapped in the copy, the followers'
    fetches moved the new log's high watermark, never the old one's: the replicated append was answered
    REQUEST_TIMED_OUT (and retried: duplicates without idempotence). Kafka's DelayedProduce asks the
    partition's current log."""
    logs = LogManager(
        [tmp_path / "a", tmp_path / "b"], LogConfig.from_mapping({}), strays=JudgedByLeaderAndIsr()
    )
    logs.startup()
    replicas = ReplicaManager(NODE, ClusterMetadata("c", -1, []), logs)

    async def scenario() -> None:
        state = PartitionLeadership(
            topic="t",
            partition=0,
            controller_epoch=1,
            leader=NODE,
            leader_epoch=1,
            isr=[1, 2],
            partition_epoch=0,
            replicas=[1, 2],
        )
        assert await replicas.become_leader_or_follower(ControllerStamp(1, 1), [state]) == {
            ("t", 0): ErrorCode.NONE
        }
        old = logs.get_log("t", 0)
        assert old is not None
        builder = RecordBatchBuilder(0)
        builder.append(0, None, b"v")
        old.append(bytearray(builder.build()), leader_epoch=1)
        assert old.high_watermark == 0  # the follower has not fetched it yet
        waiting = AwaitingReplicas(TopicPartition("t", 0), old, 1, 1)

        other = next(d for d in logs.log_dirs if d != old.dir.parent)
        future = logs.moves.create_future_log("t", 0, other)
        assert logs.moves.install_future_log(future) is None
        while copy_to_future(old, future, 1 << 20, logs.deletions.schedule_deletion):
            pass
        new, _ = logs.moves.swap(TopicPartition("t", 0))
        replicas.replace_log(("t", 0), new)
        new.update_high_watermark(1)  # the follower fetched the record: the leader's HW moved

        assert await wait_for_replicas([waiting], 0, replicas) == [ErrorCode.NONE]

    try:
        asyncio.run(scenario())
    finally:
        logs.shutdown()
