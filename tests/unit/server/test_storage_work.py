"""The broker's storage tasks outlive a failed job. The roll-flush task caught only OSError: any other
exception ended it, unlogged, and no roll was flushed again until the broker restarted; and a failed
checkpoint dropped the roll flushes already taken, so their recovery points never moved. The file
deletion task caught nothing: a deletion failing otherwise than with an OSError ended it, and no
deleted segment's file was closed or removed again until the next retention check."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from odradek.cluster.replication.truncation_checkpoints import TruncationCheckpoints
from odradek.server.storage_work import run_file_deletions, run_storage_work
from odradek.storage.checkpoint_jobs import CheckpointJob
from odradek.storage.config import LogConfig
from odradek.storage.flush import FlushJob
from odradek.storage.log import Log
from odradek.storage.log_deletion import FileDeletionJob
from odradek.storage.log_manager import LogManager
from odradek.storage.stray_logs import JudgedByLeaderAndIsr
from tests.unit.storage.helpers import batch

pytestmark = pytest.mark.timeout(60)

CONFIG = LogConfig(segment_bytes=300)


def _roll(log: Log) -> None:
    rolls = len(log.segments)
    while len(log.segments) == rolls:
        log.append(batch([b"value-%03d" % log.log_end_offset]))


async def _until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 20
    while not condition():
        assert time.monotonic() < deadline, f"never: {what}"
        await asyncio.sleep(0.01)


def _failing(message: str) -> Callable[[object], None]:
    def run(_: object) -> None:
        raise RuntimeError(message)

    return run


def test_the_storage_task_logs_a_failed_job_and_runs_the_others_and_later_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def main() -> None:
        due = asyncio.Event()
        manager = LogManager([tmp_path], CONFIG, strays=JudgedByLeaderAndIsr(), on_work_due=due.set)
        task = asyncio.create_task(
            run_storage_work(manager.flushes, TruncationCheckpoints(manager.flushes), due)
        )
        rolled = manager.get_or_create_log("rolled", 0)
        truncated = manager.get_or_create_log("truncated", 0)
        try:
            with monkeypatch.context() as patch:
                patch.setattr(CheckpointJob, "run", _failing("the checkpoint failed"))
                truncated.append(batch([b"a", b"b"]))
                truncated.truncate_to(1)  # a checkpoint is due: it fails
                _roll(rolled)  # and a roll flush: it runs all the same
                await _until(lambda: rolled.recovery_point == rolled.active_segment.base_offset, "flushed")
            assert "the checkpoint failed" in caplog.text
            with monkeypatch.context() as patch:
                patch.setattr(FlushJob, "run", _failing("the flush failed"))
                _roll(rolled)
                await _until(lambda: "the flush failed" in caplog.text, "the failed flush logged")
            assert not task.done()
            _roll(rolled)  # the next roll is flushed, with what the failed one left
            await _until(lambda: rolled.recovery_point == rolled.active_segment.base_offset, "flushed again")
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    with caplog.at_level(logging.ERROR):
        asyncio.run(main())


def test_the_file_deletion_task_logs_a_failed_deletion_and_deletes_what_comes_due_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def main() -> None:
        manager = LogManager(
            [tmp_path], LogConfig(segment_bytes=300, file_delete_delay_ms=0), strays=JudgedByLeaderAndIsr()
        )
        log = manager.get_or_create_log("t", 0)
        task = asyncio.create_task(run_file_deletions(manager, interval_s=0.01))
        try:
            with monkeypatch.context() as patch:
                patch.setattr(FileDeletionJob, "run", _failing("the deletion failed"))
                _roll(log)
                manager.deletions.schedule_deletion(log.truncate_to(0), 0)
                await _until(lambda: "the deletion failed" in caplog.text, "the failed deletion logged")
            assert not task.done()
            _roll(log)
            removed = log.truncate_to(0)
            manager.deletions.schedule_deletion(removed, 0)
            await _until(lambda: not any(s.log_path.exists() for s in removed), "the segments deleted")
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    with caplog.at_level(logging.ERROR, "odradek.broker"):
        asyncio.run(main())
