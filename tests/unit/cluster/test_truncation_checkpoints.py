"""Power loss after a truncation: nothing appends to a truncated log before the lowered recovery point
is on disk.

Kafka's LogManager.truncateTo rewrites recovery-point-offset-checkpoint before its fetcher thread goes
on. Until then the file claims that the offsets at and above the truncation were fsynced; the new
leader's records appended there are not, so a power loss brought them back torn or stale, trusted
unchecked by a start-up (recovery starts at the recovery point). Here the checkpoint is written in a
worker thread, on a disk the test holds slow (``FsyncGate``); the on-disk file is read at every append
and when the broker starts leading."""

from __future__ import annotations

import asyncio
import errno
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from odradek.cluster.control_requests import ControllerStamp, PartitionLeadership
from odradek.cluster.metadata import ClusterMetadata
from odradek.cluster.replica_manager import ReplicaManager
from odradek.cluster.replication.fetch_state import FetcherContext, FetcherSettings, FetchState
from odradek.cluster.replication.replica_fetcher import ReplicaFetcher
from odradek.cluster.replication.truncation_checkpoints import TruncationCheckpoints
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.fetch import EpochEndOffset, PartitionData
from odradek.protocol.messages.list_offsets import (
    ListOffsetsPartitionResponse,
    ListOffsetsResponse,
    ListOffsetsTopicResponse,
)
from odradek.protocol.records import RecordBatchBuilder, iter_record_batches
from odradek.server.storage_work import run_storage_work
from odradek.storage.checkpoints import read_offset_checkpoint
from odradek.storage.config import LogConfig
from odradek.storage.fetch import FetchIsolation
from odradek.storage.files import RECOVERY_POINT_CHECKPOINT
from odradek.storage.flush_scheduler import TruncationCheckpointJob
from odradek.storage.log import Log
from odradek.storage.log_manager import LogManager
from odradek.storage.partition import TopicPartition
from odradek.storage.stray_logs import JudgedByLeaderAndIsr
from tests.support.followers import follow, follower_appends
from tests.support.fsync_gate import FsyncGate

SETTINGS = FetcherSettings(
    fetch_max_bytes=1 << 20,
    fetch_min_bytes=1,
    fetch_wait_max_ms=100,
    fetch_response_max_bytes=1 << 20,
    fetch_backoff_ms=100,
    socket_timeout_ms=1000,
    socket_receive_buffer_bytes=-1,
)
TP = TopicPartition("t", 0)
NODE = 2


@pytest.fixture
def storage_work_due() -> asyncio.Event:
    return asyncio.Event()


@pytest.fixture
def logs(tmp_path: Path, storage_work_due: asyncio.Event) -> Iterator[LogManager]:
    manager = LogManager(
        [tmp_path / "logs"],
        LogConfig.from_mapping({"segment.bytes": 300}),  # three records a segment
        strays=JudgedByLeaderAndIsr(),
        on_work_due=storage_work_due.set,
    )
    manager.startup()
    try:
        yield manager
    finally:
        manager.shutdown()


def _batches(base_offset: int, epoch: int, count: int) -> bytes:
    out = bytearray()
    for i in range(count):
        builder = RecordBatchBuilder(base_offset + i, partition_leader_epoch=epoch)
        builder.append(1_700_000_000_000, None, b"epoch-%d-offset-%d" % (epoch, base_offset + i))
        out += builder.build()
    return bytes(out)


def _written_log(logs: LogManager) -> Log:
    """Offsets 0..9 of epoch 1, fsynced, and a checkpoint on disk saying so."""
    log = logs.get_or_create_log("t", 0)
    for offset in range(10):
        log.append_as_follower(bytearray(_batches(offset, 1, 1)))
    log.flush()
    logs.flushes.prepare_checkpoint().run()
    assert _recovery_point_on_disk(logs) == 10
    return log


def _recovery_point_on_disk(logs: LogManager) -> int | None:
    return read_offset_checkpoint(logs.log_dirs[0] / RECOVERY_POINT_CHECKPOINT).get(TP)


@dataclass
class _FirstAppend:
    """What the disk held when the first append after the truncation wrote: the checkpoint file, and
    where in which segment the append began (everything from there on is not fsynced yet)."""

    offset: int
    recovery_point_claimed: int | None
    checkpoint: bytes
    segment_base: int
    position: int


def _watch_appends(log: Log, logs: LogManager, monkeypatch: pytest.MonkeyPatch) -> list[_FirstAppend]:
    seen: list[_FirstAppend] = []
    append = log.append_as_follower
    path = logs.log_dirs[0] / RECOVERY_POINT_CHECKPOINT

    def watched(records: Any) -> Any:
        active = log.active_segment
        seen.append(
            _FirstAppend(
                log.log_end_offset,
                _recovery_point_on_disk(logs),
                path.read_bytes(),
                active.base_offset,
                active.size,
            )
        )
        return append(records)

    monkeypatch.setattr(log, "append_as_follower", watched)
    return seen


def _offsets_held(log: Log) -> list[int]:
    """The base offsets of the batches a read from the log start serves, segment after segment."""
    held: list[int] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20, isolation=FetchIsolation.LOG_END).read_bytes()
        batches = list(iter_record_batches(data))
        if not batches:
            break
        held += [batch.base_offset for batch in batches]
        offset = batches[-1].last_offset + 1
    return held


def _answer(records: bytes = b"", diverging: tuple[int, int] = (-1, -1)) -> PartitionData:
    return PartitionData(
        partition_index=0,
        error_code=ErrorCode.NONE,
        high_watermark=0,
        last_stable_offset=0,
        log_start_offset=0,
        diverging_epoch=EpochEndOffset(epoch=diverging[0], end_offset=diverging[1]),
        records=records,
    )


class _Leader:
    """Answers the ListOffsets a fetcher sends while resolving OFFSET_OUT_OF_RANGE."""

    def __init__(self, latest: int, earliest: int) -> None:
        self.offsets = {-1: latest, -2: earliest}

    async def send(self, request: Any, version: int) -> Any:
        timestamp = request.topics[0].partitions[0].timestamp
        partition = ListOffsetsPartitionResponse(
            partition_index=0, error_code=0, offset=self.offsets[timestamp]
        )
        return ListOffsetsResponse(topics=[ListOffsetsTopicResponse(name="t", partitions=[partition])])


def _fetcher(logs: LogManager, checkpoints: TruncationCheckpoints) -> ReplicaFetcher:
    context = FetcherContext(
        node_id=NODE,
        broker_epoch=lambda: 7,
        endpoint=lambda _: None,
        local_host=None,
        followers=follower_appends(logs, NODE, checkpoints),
    )
    return ReplicaFetcher("test-fetcher", 1, SETTINGS, context)


def _truncate_then_append(
    logs: LogManager, storage_work_due: asyncio.Event, monkeypatch: pytest.MonkeyPatch, how: str
) -> list[_FirstAppend]:
    """The new leader (epoch 2) diverged at offset 4: the follower cuts 4..9 and appends the leader's
    4..9, while the storage task's checkpoint write is under way on a slow disk."""
    log = _written_log(logs)
    seen = _watch_appends(log, logs, monkeypatch)
    gate = FsyncGate(hold_marker=RECOVERY_POINT_CHECKPOINT)
    monkeypatch.setattr(os, "fsync", gate)
    checkpoints = TruncationCheckpoints(logs.flushes)

    async def main() -> None:
        storage_task = asyncio.get_running_loop().create_task(
            run_storage_work(logs.flushes, checkpoints, storage_work_due)
        )
        fetcher = _fetcher(logs, checkpoints)
        try:
            state = FetchState("t", 0, None, leader_epoch=2, log=log)
            follow(fetcher, state)
            if how == "diverging epoch":
                await fetcher._apply(_Leader(0, 0), state, _answer(diverging=(1, 4)))
            elif how == "as it began to follow":  # (the fetcher manager cuts a log without epochs)
                log.truncate_to(4)
            else:
                out_of_range = _answer()
                out_of_range.error_code = ErrorCode.OFFSET_OUT_OF_RANGE
                await fetcher._apply(_Leader(latest=4, earliest=0), state, out_of_range)
            assert log.log_end_offset == 4
            assert await asyncio.to_thread(gate.holding.wait, 10)  # the checkpoint's write is on its way
            first = _answer(_batches(4, 2, 3))
            appending = asyncio.ensure_future(fetcher._apply(_Leader(0, 0), state, first))
            await asyncio.sleep(0)  # one turn of the loop: the answer is handled while the write is held
            gate.release()
            await asyncio.wait_for(appending, 10)
            await fetcher._apply(_Leader(0, 0), state, _answer(_batches(7, 2, 3)))
        finally:
            gate.release()
            fetcher.task.cancel()
            storage_task.cancel()
            await asyncio.gather(fetcher.task, storage_task, return_exceptions=True)

    asyncio.run(main())
    assert log.log_end_offset == 10
    assert len(log.segments) > 2  # the appended records rolled a segment
    return seen


@pytest.mark.parametrize("how", ["diverging epoch", "out of range", "as it began to follow"])
def test_a_follower_appends_after_a_truncation_only_once_the_lowered_recovery_point_is_on_disk(
    logs: LogManager, storage_work_due: asyncio.Event, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """The leader's records were appended at once, under a file still claiming 10."""
    seen = _truncate_then_append(logs, storage_work_due, monkeypatch, how)
    claims = [(append.offset, append.recovery_point_claimed) for append in seen]
    assert seen and all(claimed is not None and claimed <= offset for offset, claimed in claims), (
        f"appended at offsets the checkpoint on disk claimed fsynced (offset, claimed): {claims}"
    )


@pytest.mark.parametrize("how", ["diverging epoch", "out of range", "as it began to follow"])
def test_a_power_loss_after_the_appends_that_follow_a_truncation_leaves_no_hole_below_the_recovery_point(
    logs: LogManager,
    storage_work_due: asyncio.Event,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    how: str,
) -> None:
    """The power fails right after the leader's records were appended: the checkpoint is as it was
    then, the records written since the truncation never reached the disk (zero-filled). The start-up
    trusted the old recovery point, 10: the segment holding 4..6 was below where recovery began, and the
    log came back ending at 7 with nothing at 4..6, a hole the follower never fetches again."""
    seen = _truncate_then_append(logs, storage_work_due, monkeypatch, how)
    first = seen[0]
    crashed = tmp_path / "after-power-loss"
    shutil.copytree(logs.log_dirs[0], crashed)
    (crashed / RECOVERY_POINT_CHECKPOINT).write_bytes(first.checkpoint)
    for path in sorted((crashed / "t-0").glob("*.log")):
        base = int(path.name.split(".")[0])
        if base >= first.segment_base:
            with path.open("r+b") as segment:
                start = first.position if base == first.segment_base else 0
                size = segment.seek(0, os.SEEK_END)
                segment.seek(start)
                segment.write(bytes(size - start))
    restarted = LogManager([crashed], logs.default_config, strays=JudgedByLeaderAndIsr())
    restarted.startup()
    try:
        log = restarted.get_log("t", 0)
        assert log is not None
        held = _offsets_held(log)
        assert (log.log_end_offset, held) == (4, [0, 1, 2, 3])  # what was fsynced; 4.. is fetched again
    finally:
        restarted.shutdown()


def test_a_checkpoint_write_on_a_slow_disk_holds_back_only_the_truncated_partition(
    logs: LogManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The wait must not stall the broker: the write runs in a worker thread, and while the disk holds
    it the loop goes on, another fetcher appends its own partition, and only the truncated partition's
    append waits (Kafka's truncateTo blocks just the fetcher thread that truncated)."""
    log = _written_log(logs)
    other = logs.get_or_create_log("u", 0)
    gate = FsyncGate(hold_marker=RECOVERY_POINT_CHECKPOINT)
    monkeypatch.setattr(os, "fsync", gate)
    checkpoints = TruncationCheckpoints(logs.flushes)

    async def main() -> None:
        truncated_fetcher = _fetcher(logs, checkpoints)
        other_fetcher = _fetcher(logs, checkpoints)
        try:
            state = FetchState("t", 0, None, leader_epoch=2, log=log)
            follow(truncated_fetcher, state)
            other_state = FetchState("u", 0, None, leader_epoch=1, log=other)
            follow(other_fetcher, other_state)
            await truncated_fetcher._apply(_Leader(0, 0), state, _answer(diverging=(1, 4)))
            appending = asyncio.ensure_future(
                truncated_fetcher._apply(_Leader(0, 0), state, _answer(_batches(4, 2, 3)))
            )
            assert await asyncio.to_thread(gate.holding.wait, 10)  # the write is held in its thread
            await asyncio.wait_for(
                other_fetcher._apply(_Leader(0, 0), other_state, _answer(_batches(0, 1, 3))), 10
            )
            assert other.log_end_offset == 3
            assert not appending.done() and log.log_end_offset == 4
            gate.release()
            await asyncio.wait_for(appending, 10)
            assert log.log_end_offset == 7
        finally:
            gate.release()
            for fetcher in (truncated_fetcher, other_fetcher):
                fetcher.task.cancel()
                await asyncio.gather(fetcher.task, return_exceptions=True)

    asyncio.run(main())
    assert gate.calls_under(RECOVERY_POINT_CHECKPOINT)
    assert not [call.path for call in gate.calls if call.on_main_thread]


def test_a_truncated_log_is_led_only_once_its_lowered_recovery_point_is_on_disk(
    logs: LogManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fetcher truncated the log (a divergence) and a LeaderAndIsr made this broker the leader
    before the checkpoint was written: producers appended at once over offsets the file still claimed."""
    log = _written_log(logs)
    gate = FsyncGate(hold_marker=RECOVERY_POINT_CHECKPOINT)
    monkeypatch.setattr(os, "fsync", gate)
    replicas = ReplicaManager(NODE, ClusterMetadata("c", -1, []), logs)
    claimed_when_leading: list[int | None] = []

    def leadership_changed(leaders: list[tuple[str, int]], others: list[tuple[str, int]]) -> None:
        if ("t", 0) in leaders:
            claimed_when_leading.append(_recovery_point_on_disk(logs))

    replicas.add_leadership_listener(leadership_changed)

    async def main() -> None:
        log.truncate_to(4)
        leading = asyncio.ensure_future(
            replicas.become_leader_or_follower(
                ControllerStamp(1, 1),
                [
                    PartitionLeadership(
                        topic="t",
                        partition=0,
                        controller_epoch=1,
                        leader=NODE,
                        leader_epoch=3,
                        isr=[NODE],
                        partition_epoch=0,
                        replicas=[1, NODE],
                    )
                ],
            )
        )
        await asyncio.sleep(0)  # one turn of the loop: the request is handled while the write is held
        gate.release()
        assert await asyncio.wait_for(leading, 10) == {("t", 0): ErrorCode.NONE}

    try:
        asyncio.run(main())
    finally:
        gate.release()
    assert replicas.leader_epoch("t", 0) == 3
    assert claimed_when_leading == [4]


def test_a_failed_checkpoint_write_takes_the_truncated_partition_offline_and_nothing_appends_to_it(
    logs: LogManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk refused the write (ENOSPC, EIO). The partition was held back, then written again at its
    next answer and appended: after a failed fsync a second one can succeed though the first one's data
    never reached the disk, so Kafka never retries there (the log dir goes offline). Here the partition
    stays offline until the broker restarts: no append, even once another truncation's write went
    through, and no leadership (KAFKA_STORAGE_ERROR)."""
    log = _written_log(logs)
    other = logs.get_or_create_log("u", 0)
    for offset in range(5):
        other.append_as_follower(bytearray(_batches(offset, 1, 1)))
    checkpoints = TruncationCheckpoints(logs.flushes)
    run = TruncationCheckpointJob.run
    failures = [OSError(errno.EIO, "Input/output error")]

    def failing_once(job: TruncationCheckpointJob) -> None:
        if failures:
            raise failures.pop()
        run(job)

    monkeypatch.setattr(TruncationCheckpointJob, "run", failing_once)
    replicas = ReplicaManager(NODE, ClusterMetadata("c", -1, []), logs, truncation_checkpoints=checkpoints)

    async def main() -> None:
        fetcher = _fetcher(logs, checkpoints)
        try:
            state = FetchState("t", 0, None, leader_epoch=2, log=log)
            follow(fetcher, state)
            other_state = FetchState("u", 0, None, leader_epoch=2, log=other)
            follow(fetcher, other_state)
            await fetcher._apply(_Leader(0, 0), state, _answer(diverging=(1, 4)))
            await fetcher._apply(_Leader(0, 0), state, _answer(_batches(4, 2, 3)))
            assert (log.log_end_offset, _recovery_point_on_disk(logs)) == (4, 10)
            assert state.key not in fetcher.partitions and not fetcher.task.done()  # fetched no more
            # another partition truncated since: its own write goes through, and it appends
            await fetcher._apply(_Leader(0, 0), other_state, _answer(diverging=(1, 3)))
            await fetcher._apply(_Leader(0, 0), other_state, _answer(_batches(3, 2, 2)))
            assert other.log_end_offset == 5
            for _ in range(2):
                await fetcher._apply(_Leader(0, 0), state, _answer(_batches(4, 2, 3)))
                assert log.log_end_offset == 4
            assert checkpoints.pending(log)
            outcome = await replicas.become_leader_or_follower(
                ControllerStamp(1, 1),
                [
                    PartitionLeadership(
                        topic="t",
                        partition=0,
                        controller_epoch=1,
                        leader=NODE,
                        leader_epoch=3,
                        isr=[NODE],
                        partition_epoch=0,
                        replicas=[1, NODE],
                    )
                ],
            )
            assert outcome == {("t", 0): ErrorCode.KAFKA_STORAGE_ERROR}
            assert replicas.leader_epoch("t", 0) != 3
        finally:
            fetcher.task.cancel()
            await asyncio.gather(fetcher.task, return_exceptions=True)

    asyncio.run(main())
