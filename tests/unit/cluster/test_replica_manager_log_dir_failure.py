"""The replica manager when one of its log dirs fails (Kafka's ReplicaManager.handleLogDirFailure and
its HostedPartition.Offline): the dir's partitions are neither led nor followed, the data path answers
KAFKA_STORAGE_ERROR for them, and so does every LeaderAndIsr or StopReplica naming them, whatever its
epoch, until the broker restarts; the other dir's partitions go on."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek.cluster.control_requests import ControllerStamp, PartitionLeadership, StopReplicaPartition
from odradek.cluster.metadata import ClusterMetadata
from odradek.cluster.replica_manager import ReplicaManager
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.records import RecordBatchBuilder
from odradek.storage.config import LogConfig
from odradek.storage.errors import LogStorageError
from odradek.storage.log_manager import LogManager
from odradek.storage.stray_logs import JudgedByLeaderAndIsr

NODE = 2


def _state(partition: int, leader: int, epoch: int) -> PartitionLeadership:
    return PartitionLeadership(
        topic="t",
        partition=partition,
        controller_epoch=1,
        leader=leader,
        leader_epoch=epoch,
        isr=[1, 2],
        partition_epoch=0,
        replicas=[1, 2],
    )


@pytest.fixture
def two_dirs(tmp_path: Path) -> Iterator[LogManager]:
    manager = LogManager(
        [tmp_path / "a", tmp_path / "b"], LogConfig.from_mapping({}), strays=JudgedByLeaderAndIsr()
    )
    manager.startup()
    yield manager


def _batch() -> bytearray:
    builder = RecordBatchBuilder(0)
    builder.append(0, None, b"v")
    return bytearray(builder.build())


def test_the_partitions_of_a_failed_log_dir_answer_kafka_storage_error_and_the_others_are_led(
    two_dirs: LogManager,
) -> None:
    replicas = ReplicaManager(NODE, ClusterMetadata("c", -1, []), two_dirs)

    async def scenario() -> None:
        outcome = await replicas.become_leader_or_follower(
            ControllerStamp(1, 1), [_state(0, NODE, 1), _state(1, NODE, 1)]
        )
        assert set(outcome.values()) == {ErrorCode.NONE}
        failing = two_dirs.get_log("t", 0)
        other = two_dirs.get_log("t", 1)
        assert failing is not None and other is not None and failing.dir.parent != other.dir.parent
        failing.append(_batch(), leader_epoch=1)
        broken = failing.dir.parent
        broken.rename(broken.with_name("gone"))
        broken.write_bytes(b"")
        with pytest.raises(LogStorageError):
            failing.roll()

        assert await replicas.handle_log_dir_failure(broken) == [("t", 0)]

        refusal = replicas.leader_refusal("t", 0)
        assert refusal is not None and refusal.error_code is ErrorCode.KAFKA_STORAGE_ERROR
        refusal = replicas.replica_refusal("t", 0)
        assert refusal is not None and refusal.error_code is ErrorCode.KAFKA_STORAGE_ERROR
        assert replicas.leader_refusal("t", 1) is None
        # what the controller sends after the broker's notification: the current epochs, again
        again = await replicas.become_leader_or_follower(
            ControllerStamp(1, 1), [_state(0, NODE, 1), _state(1, NODE, 1)]
        )
        assert again == {("t", 0): ErrorCode.KAFKA_STORAGE_ERROR, ("t", 1): ErrorCode.STALE_CONTROLLER_EPOCH}
        newer = await replicas.become_leader_or_follower(ControllerStamp(1, 1), [_state(0, 1, 2)])
        assert newer == {("t", 0): ErrorCode.KAFKA_STORAGE_ERROR}
        assert two_dirs.get_log("t", 0) is None  # not made again in the live dir
        stopped = await replicas.stop_replicas(
            ControllerStamp(1, 1), [StopReplicaPartition("t", 0, delete=False, leader_epoch=2)]
        )
        assert stopped == {("t", 0): ErrorCode.KAFKA_STORAGE_ERROR}

    asyncio.run(scenario())


def test_becoming_leader_when_the_epoch_checkpoint_cannot_be_written_answers_kafka_storage_error_for_it_alone(
    tmp_path: Path,
) -> None:
    """Kafka's Partition.makeLeader writes the new epoch to the leader-epoch checkpoint under
    maybeHandleIOException: the dir goes offline and that partition answers KAFKA_STORAGE_ERROR. The
    OSError escaped the LeaderAndIsr handling half-way through its partitions, the dir online."""
    failed: list[Path] = []
    two_dirs = LogManager(
        [tmp_path / "a", tmp_path / "b"],
        LogConfig.from_mapping({}),
        strays=JudgedByLeaderAndIsr(),
        on_log_dir_failure=failed.append,
    )
    two_dirs.startup()
    replicas = ReplicaManager(NODE, ClusterMetadata("c", -1, []), two_dirs)

    async def scenario() -> None:
        outcome = await replicas.become_leader_or_follower(
            ControllerStamp(1, 1), [_state(0, NODE, 1), _state(1, NODE, 1)]
        )
        assert set(outcome.values()) == {ErrorCode.NONE}
        failing = two_dirs.get_log("t", 0)
        other = two_dirs.get_log("t", 1)
        assert failing is not None and other is not None and failing.dir.parent != other.dir.parent
        broken = failing.dir.parent
        broken.rename(broken.with_name("gone"))
        broken.write_bytes(b"")

        again = await replicas.become_leader_or_follower(
            ControllerStamp(1, 2), [_state(0, NODE, 2), _state(1, NODE, 2)]
        )
        assert again == {("t", 0): ErrorCode.KAFKA_STORAGE_ERROR, ("t", 1): ErrorCode.NONE}
        assert failed == [broken]
        assert other.latest_epoch == 2

    asyncio.run(scenario())
