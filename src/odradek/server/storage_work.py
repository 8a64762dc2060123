"""The broker's storage tasks: the file work a roll or a truncation makes due, run as soon as it is,
and the file deletions that come due.

Kafka's flush of the segments below a new one (a task UnifiedLog.roll schedules: they are fsynced soon
after it was made and the recovery point moves up to it, whatever flush.ms and flush.messages say),
and its recovery point checkpoint after a truncation (LogManager.truncateTo; whatever appends to the
truncated log waits for it: cluster/replication/truncation_checkpoints.py). The logs tell their
LogManager's ``flushes`` (``storage.flush_scheduler``), which sets ``due``; the jobs run in worker
threads.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from odradek.cluster.replication.truncation_checkpoints import TruncationCheckpoints
from odradek.storage.flush_scheduler import FlushScheduler
from odradek.storage.log_manager import LogManager

log = logging.getLogger("odradek.broker")

#: How often due file deletions are looked for: a list check on the loop, a thread only when one is due.
FILE_DELETION_CHECK_S = 0.5


async def run_storage_work(
    flushes: FlushScheduler, checkpoints: TruncationCheckpoints, due: asyncio.Event
) -> None:
    """Take and run the due jobs each time ``due`` is set, until cancelled. A job that fails is logged
    and the others still run; nothing it claimed is lost: a failed flush leaves the recovery point
    where it was (the next flush of the log takes its segments again), a failed checkpoint after a
    truncation takes the logs it was for offline (truncation_checkpoints.py)."""
    while True:
        await due.wait()
        due.clear()
        jobs = flushes.take_roll_flushes()
        with contextlib.suppress(Exception):  # logged where it failed (truncation_checkpoints.py)
            await checkpoints.write_due()
        for flushed, job in jobs:
            try:
                await asyncio.to_thread(job.run)
            except Exception:
                log.exception("flushing the segments %s rolled over failed", flushed.topic_partition)
                continue
            flushes.complete_flushes([(flushed, job)])


async def run_file_deletions(logs: LogManager, interval_s: float = FILE_DELETION_CHECK_S) -> None:
    """Kafka's delete-logs task: deleted segments and partition directories (and their open files)
    go once their file.delete.delay.ms has passed, not at the next retention check minutes later. A
    job logs the files it could not remove (the next start removes what is left); anything else that
    fails is logged here, and the task goes on."""
    while True:
        await asyncio.sleep(interval_s)
        job = logs.deletions.take_file_deletions()
        if not job.empty:
            try:
                await asyncio.to_thread(job.run)
            except Exception:
                log.exception("deleting the files of deleted segments and partitions failed")
