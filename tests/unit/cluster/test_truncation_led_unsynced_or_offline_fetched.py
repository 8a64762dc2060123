"""A truncated log that led before its lowered recovery point was on disk, a directory fsync failure
taken for a written checkpoint, and a partition the failed write took offline fetched for ever.

Kafka's makeLeaders stops the fetchers of the partitions it is about to lead before anything else; its
Utils.flushDir throws what the directory's fsync throws; its fetcher thread drops a partition whose
storage failed (AbstractFetcherThread.markPartitionFailed) and the replica manager answers
KAFKA_STORAGE_ERROR for an offline partition, as leader or follower. The helpers are
test_truncation_checkpoints.py's."""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from odradek.cluster.control_requests import ControllerStamp, PartitionLeadership, StopReplicaPartition
from odradek.cluster.metadata import ClusterMetadata
from odradek.cluster.replica_manager import ReplicaManager
from odradek.cluster.replication.fetch_state import FetchState
from odradek.cluster.replication.truncation_checkpoints import TruncationCheckpoints
from odradek.partition.hosted_partition import HostedPartition, PartitionKey
from odradek.protocol.error_codes import ErrorCode
from odradek.storage.checkpoints import read_offset_checkpoint
from odradek.storage.config import LogConfig
from odradek.storage.errors import LogStorageError
from odradek.storage.files import RECOVERY_POINT_CHECKPOINT
from odradek.storage.flush_scheduler import TruncationCheckpointJob
from odradek.storage.log import Log
from odradek.storage.log_manager import LogManager
from odradek.storage.partition import TopicPartition
from odradek.storage.stray_logs import JudgedByLeaderAndIsr
from tests.support.followers import follow
from tests.support.fsync_gate import FsyncGate
from tests.unit.cluster.test_truncation_checkpoints import NODE, _answer, _batches, _fetcher, _Leader


@pytest.fixture
def logs(tmp_path: Path) -> Iterator[LogManager]:
    manager = LogManager(
        [tmp_path / "logs"],
        LogConfig.from_mapping({"segment.bytes": 300}),  # three records a segment
        strays=JudgedByLeaderAndIsr(),
    )
    manager.startup()
    try:
        yield manager
    finally:
        manager.shutdown()


def _leadership(partition: int, leader: int, epoch: int = 3) -> PartitionLeadership:
    return PartitionLeadership(
        topic="t",
        partition=partition,
        controller_epoch=1,
        leader=leader,
        leader_epoch=epoch,
        isr=[1, NODE],
        partition_epoch=0,
        replicas=[1, NODE],
    )


def _ten_fsynced_records(logs: LogManager, partition: int) -> Log:
    replica_log = logs.get_or_create_log("t", partition)
    for offset in range(10):
        replica_log.append_as_follower(bytearray(_batches(offset, 1, 1)))
    replica_log.flush()
    return replica_log


def test_a_new_leader_truncated_while_leader_and_isr_waits_for_another_partition_is_waited_for_too(
    logs: LogManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    """LeaderAndIsr makes this broker leader of t-0 and t-1. t-0 had nothing pending: its wait returned
    at once. t-1 was truncated: its checkpoint write is on a slow disk. Meanwhile t-0's log was
    truncated (by its fetcher, still running), and t-0 then led with its lowered recovery point not on
    disk: producers appended over offsets the file claimed fsynced. What leads is checked for a pending
    truncation with no wait between the last check and the leading."""
    log0, log1 = _ten_fsynced_records(logs, 0), _ten_fsynced_records(logs, 1)
    logs.flushes.prepare_checkpoint().run()
    checkpoints = TruncationCheckpoints(logs.flushes)
    replicas = ReplicaManager(NODE, ClusterMetadata("c", -1, []), logs, truncation_checkpoints=checkpoints)
    gate = FsyncGate(hold_marker=RECOVERY_POINT_CHECKPOINT)
    monkeypatch.setattr(os, "fsync", gate)
    seen: list[tuple[bool, int | None, int]] = []

    def leadership_changed(leaders: list[PartitionKey], others: list[PartitionKey]) -> None:
        on_disk = read_offset_checkpoint(logs.log_dirs[0] / RECOVERY_POINT_CHECKPOINT)
        seen.append((checkpoints.pending(log0), on_disk.get(TopicPartition("t", 0)), log0.log_end_offset))

    replicas.add_leadership_listener(leadership_changed)

    async def main() -> None:
        fetcher = _fetcher(logs, checkpoints)
        state = FetchState("t", 0, None, leader_epoch=2, log=log0)
        follow(fetcher, state)
        try:
            log1.truncate_to(5)  # t-1's fetcher truncated it just before
            leading = asyncio.ensure_future(
                replicas.become_leader_or_follower(
                    ControllerStamp(1, 1), [_leadership(0, NODE), _leadership(1, NODE)]
                )
            )
            assert await asyncio.to_thread(gate.holding.wait, 10)  # t-1's write held on the disk
            await fetcher._apply(_Leader(0, 0), state, _answer(diverging=(1, 4)))  # t-0 diverged at 4
            assert log0.log_end_offset == 4
            gate.release()
            await asyncio.wait_for(leading, 10)
        finally:
            gate.release()
            fetcher.task.cancel()
            await asyncio.gather(fetcher.task, return_exceptions=True)

    asyncio.run(main())
    assert seen, "never led"
    pending, on_disk, end = seen[0]
    assert not pending and on_disk is not None and on_disk <= end, (
        f"t-0 leads with its truncation unsynced: pending={pending}, checkpoint on disk claims {on_disk}, "
        f"log end {end}"
    )


class _Fetchers:
    """The replica manager's fetchers, recording what it asks."""

    def __init__(self, followed: set[PartitionKey]) -> None:
        self.followed = followed

    def add_partitions(self, partitions: list[HostedPartition]) -> None:
        self.followed.update((hosted.topic, hosted.partition) for hosted in partitions)

    def remove_partitions(self, keys: Iterable[PartitionKey]) -> None:
        self.followed.difference_update(keys)


def test_leader_and_isr_stops_fetching_the_partitions_it_makes_this_broker_lead_before_it_waits_for_anything(
    logs: LogManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As Kafka's makeLeaders: a fetcher still fetching a partition about to be led here may truncate
    it (a DivergingEpoch from its old leader) while LeaderAndIsr waits for another partition's
    checkpoint write; the fetchers were told only after every log was ready."""
    _ten_fsynced_records(logs, 0)
    log1 = _ten_fsynced_records(logs, 1)
    logs.flushes.prepare_checkpoint().run()
    replicas = ReplicaManager(NODE, ClusterMetadata("c", -1, []), logs)
    followed = {("t", 0), ("t", 1)}
    replicas.fetchers = _Fetchers(followed)
    gate = FsyncGate(hold_marker=RECOVERY_POINT_CHECKPOINT)
    monkeypatch.setattr(os, "fsync", gate)

    async def main() -> set[PartitionKey]:
        log1.truncate_to(5)
        leading = asyncio.ensure_future(
            replicas.become_leader_or_follower(
                ControllerStamp(1, 1), [_leadership(0, NODE), _leadership(1, NODE)]
            )
        )
        try:
            assert await asyncio.to_thread(gate.holding.wait, 10)  # t-1's write held on the disk
            still_followed = set(followed)
        finally:
            gate.release()
        await asyncio.wait_for(leading, 10)
        return still_followed

    assert asyncio.run(main()) == set(), "fetched while LeaderAndIsr waited to lead them"


def test_an_eio_fsyncing_a_directory_after_a_truncation_fails_the_checkpoint_write(
    logs: LogManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checkpoint is renamed into place and the log dir fsynced; the truncated log's directory (the
    removed segments' renames) is fsynced too. files.fsync_dir swallowed every OSError of os.fsync, EIO
    included: the write 'succeeded', the log was not offline and the follower appended, though the
    rename of the lowered checkpoint may never reach the disk (Kafka's Utils.flushDir throws)."""
    replica_log = _ten_fsynced_records(logs, 0)
    logs.flushes.prepare_checkpoint().run()
    checkpoints = TruncationCheckpoints(logs.flushes)
    real = os.fsync

    def failing_on_directories(fd: int) -> None:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(errno.EIO, "Input/output error")
        real(fd)

    monkeypatch.setattr(os, "fsync", failing_on_directories)

    async def main() -> None:
        replica_log.truncate_to(4)
        await checkpoints.written(replica_log)

    with pytest.raises(LogStorageError):
        asyncio.run(main())
    assert checkpoints.pending(replica_log)


def test_a_partition_a_failed_checkpoint_write_took_offline_is_no_longer_fetched_nor_logged_every_backoff(
    logs: LogManager, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A failed truncation checkpoint takes t-0 offline until restart. It stayed in the fetcher: after
    each replica.fetch.backoff.ms it was fetched again (the leader reading and sending up to
    replica.fetch.max.bytes every time), and every answer logged an ERROR with a traceback, for as long
    as the broker ran. Kafka's fetcher marks such a partition failed and stops fetching it."""
    replica_log = logs.get_or_create_log("t", 0)
    for offset in range(10):
        replica_log.append_as_follower(bytearray(_batches(offset, 1, 1)))

    def failing(job: TruncationCheckpointJob) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(TruncationCheckpointJob, "run", failing)
    checkpoints = TruncationCheckpoints(logs.flushes)

    async def main() -> None:
        fetcher = _fetcher(logs, checkpoints)
        try:
            state = FetchState("t", 0, None, leader_epoch=2, log=replica_log)
            follow(fetcher, state)
            await fetcher._apply(_Leader(0, 0), state, _answer(diverging=(1, 4)))
            with caplog.at_level(logging.ERROR):
                for _ in range(5):  # five backoffs later
                    state.delayed_until = 0
                    await fetcher._apply(_Leader(0, 0), state, _answer(_batches(4, 2, 3)))
            errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
            assert state.key not in fetcher.partitions and len(errors) <= 2, (
                f"still fetched: {state.key in fetcher.partitions}; {len(errors)} ERROR records"
            )
        finally:
            fetcher.task.cancel()
            await asyncio.gather(fetcher.task, return_exceptions=True)

    asyncio.run(main())


def test_an_offline_partition_is_answered_kafka_storage_error_as_a_follower_too_and_never_fetched_again(
    logs: LogManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only a LeaderAndIsr making this broker leader asked whether the log was offline: as a follower
    the partition was handed to a fetcher again, fetched every backoff for ever. Kafka answers
    KAFKA_STORAGE_ERROR for an offline partition whatever the request makes of it."""
    replica_log = _ten_fsynced_records(logs, 0)

    def failing(job: TruncationCheckpointJob) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(TruncationCheckpointJob, "run", failing)
    checkpoints = TruncationCheckpoints(logs.flushes)
    replicas = ReplicaManager(NODE, ClusterMetadata("c", -1, []), logs, truncation_checkpoints=checkpoints)
    followed: set[PartitionKey] = set()
    replicas.fetchers = _Fetchers(followed)

    async def main() -> dict[PartitionKey, ErrorCode]:
        first = await replicas.become_leader_or_follower(ControllerStamp(1, 1), [_leadership(0, 1, epoch=2)])
        assert first == {("t", 0): ErrorCode.NONE} and followed == {("t", 0)}
        replica_log.truncate_to(4)
        with pytest.raises(LogStorageError):
            await checkpoints.written(replica_log)
        followed.clear()  # its fetcher let go of it
        return await replicas.become_leader_or_follower(ControllerStamp(1, 1), [_leadership(0, 1, epoch=3)])

    assert asyncio.run(main()) == {("t", 0): ErrorCode.KAFKA_STORAGE_ERROR}
    assert followed == set(), "an offline partition was handed to a fetcher again"
    assert replicas.hosted[("t", 0)].leader_epoch == 2


def test_an_offline_log_is_let_go_once_stop_replica_deleted_it(
    logs: LogManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The offline logs were kept for as long as the broker ran, deleted or not (their segments, indexes
    and producer state with them). A controller deletes a replica (its topic deleted, or the replica
    moved away) with StopReplica."""
    replica_log = _ten_fsynced_records(logs, 0)

    def failing(job: TruncationCheckpointJob) -> None:
        raise OSError(errno.EIO, "Input/output error")

    checkpoints = TruncationCheckpoints(logs.flushes)
    replicas = ReplicaManager(NODE, ClusterMetadata("c", -1, []), logs, truncation_checkpoints=checkpoints)
    stamp = ControllerStamp(1, 1)

    async def main() -> None:
        await replicas.become_leader_or_follower(stamp, [_leadership(0, 1, epoch=2)])
        replica_log.truncate_to(4)
        with monkeypatch.context() as disk:
            disk.setattr(TruncationCheckpointJob, "run", failing)
            with pytest.raises(LogStorageError):
                await checkpoints.written(replica_log)
        assert checkpoints.offline(replica_log)
        stopped = await replicas.stop_replicas(stamp, [StopReplicaPartition("t", 0, delete=True)])
        assert stopped == {("t", 0): ErrorCode.NONE}

    asyncio.run(main())
    assert logs.get_log("t", 0) is None
    assert not checkpoints.offline(replica_log), "a deleted log is still held as offline"
