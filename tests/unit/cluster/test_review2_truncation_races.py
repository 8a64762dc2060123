"""Review findings on the truncsync merge (review2 branch only)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from odradek.cluster.control_requests import ControllerStamp, PartitionLeadership
from odradek.cluster.metadata import ClusterMetadata
from odradek.cluster.replica_manager import ReplicaManager
from odradek.cluster.replication.fetch_state import FetchState
from odradek.cluster.replication.truncation_checkpoints import TruncationCheckpoints
from odradek.storage.files import RECOVERY_POINT_CHECKPOINT
from odradek.storage.log_manager import LogManager
from tests.support.fsync_gate import FsyncGate
from tests.unit.cluster.test_truncation_checkpoints import (  # noqa: F401  (fixtures)
    NODE,
    _answer,
    _batches,
    _fetcher,
    _Leader,
    logs,
    storage_work_due,
)
from odradek.storage.checkpoints import read_offset_checkpoint
from odradek.storage.partition import TopicPartition


def _leadership(partition: int, leader: int) -> PartitionLeadership:
    return PartitionLeadership(
        topic="t",
        partition=partition,
        controller_epoch=1,
        leader=leader,
        leader_epoch=3,
        isr=[1, NODE],
        partition_epoch=0,
        replicas=[1, NODE],
    )


def test_a_log_truncated_by_its_fetcher_while_leader_and_isr_waits_for_another_partition_leads_unsynced(
    logs: LogManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    """LeaderAndIsr makes this broker leader of t-0 and t-1. t-0 has nothing pending: `written` returns
    at once. t-1 was truncated: its write is on a slow disk. Meanwhile t-0's fetcher (still running: it
    is removed only after every log was prepared) gets a DivergingEpoch and truncates t-0. t-0 then
    leads with its lowered recovery point not on disk: producers append over offsets the file claims."""
    log0 = logs.get_or_create_log("t", 0)
    log1 = logs.get_or_create_log("t", 1)
    for lg in (log0, log1):
        for offset in range(10):
            lg.append_as_follower(bytearray(_batches(offset, 1, 1)))
        lg.flush()
    logs.flushes.prepare_checkpoint().run()
    checkpoints = TruncationCheckpoints(logs.flushes)
    replicas = ReplicaManager(NODE, ClusterMetadata("c", -1, []), logs, truncation_checkpoints=checkpoints)
    gate = FsyncGate(hold_marker=RECOVERY_POINT_CHECKPOINT)
    monkeypatch.setattr(os, "fsync", gate)
    seen: list[tuple[bool, int | None, int]] = []

    def leadership_changed(leaders: list[tuple[str, int]], others: list[tuple[str, int]]) -> None:
        on_disk = read_offset_checkpoint(logs.log_dirs[0] / RECOVERY_POINT_CHECKPOINT)
        seen.append((checkpoints.pending(log0), on_disk.get(TopicPartition("t", 0)), log0.log_end_offset))

    replicas.on_leadership_change = leadership_changed

    async def main() -> None:
        fetcher = _fetcher(logs, checkpoints)
        state = FetchState("t", 0, None, leader_epoch=2, log=log0)
        fetcher.partitions[state.key] = state
        try:
            log1.truncate_to(5)  # t-1's fetcher truncated it just before
            leading = asyncio.ensure_future(
                replicas.become_leader_or_follower(ControllerStamp(1, 1), [_leadership(0, NODE), _leadership(1, NODE)])
            )
            assert await asyncio.to_thread(gate.holding.wait, 10)  # t-1's write held on the disk
            # t-0's fetcher, still fetching, is told its log diverged at 4
            await fetcher._apply(_Leader(0, 0), state, _answer(diverging=(1, 4)))
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


def test_a_failed_directory_fsync_after_a_truncation_is_taken_for_a_written_checkpoint(
    logs: LogManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checkpoint is renamed into place and the log dir fsynced; the truncated log's directory
    (the removed segments' renames) is fsynced too. files.fsync_dir swallows every OSError of
    os.fsync, EIO included: the write 'succeeds', the log is not offline and the follower appends,
    though the rename of the lowered checkpoint may never reach the disk (Kafka's Utils.flushDir
    throws, and the log dir goes offline)."""
    import errno
    import stat

    from odradek.storage.errors import LogStorageError

    log = logs.get_or_create_log("t", 0)
    for offset in range(10):
        log.append_as_follower(bytearray(_batches(offset, 1, 1)))
    log.flush()
    logs.flushes.prepare_checkpoint().run()
    checkpoints = TruncationCheckpoints(logs.flushes)
    real = os.fsync

    def failing_on_directories(fd: int) -> None:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(errno.EIO, "Input/output error")
        real(fd)

    monkeypatch.setattr(os, "fsync", failing_on_directories)

    async def main() -> None:
        log.truncate_to(4)
        await checkpoints.written(log)

    with pytest.raises(LogStorageError):
        asyncio.run(main())


def test_an_offline_partition_is_no_longer_fetched(
    logs: LogManager, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A failed truncation checkpoint takes t-0 offline until restart. Kafka's fetcher marks such a
    partition failed and stops fetching it (AbstractFetcherThread.markPartitionFailed). Here it stays
    in the fetcher: after each replica.fetch.backoff.ms it is fetched again (the leader reads and
    sends up to replica.fetch.max.bytes every time), and every answer logs an ERROR with a traceback,
    for as long as the broker runs."""
    import errno
    import logging

    from odradek.storage.flush_scheduler import TruncationCheckpointJob

    log = logs.get_or_create_log("t", 0)
    for offset in range(10):
        log.append_as_follower(bytearray(_batches(offset, 1, 1)))

    def failing(job: TruncationCheckpointJob) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(TruncationCheckpointJob, "run", failing)
    checkpoints = TruncationCheckpoints(logs.flushes)

    async def main() -> None:
        fetcher = _fetcher(logs, checkpoints)
        try:
            state = FetchState("t", 0, None, leader_epoch=2, log=log)
            fetcher.partitions[state.key] = state
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
