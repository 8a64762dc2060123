"""The broker's storage task: the file work a roll or a truncation makes due, run as soon as it is.

Kafka's flush of the segments below a new one (a task UnifiedLog.roll schedules: they are fsynced soon
after it was made and the recovery point moves up to it, whatever flush.ms and flush.messages say),
and its recovery point checkpoint after a truncation (LogManager.truncateTo). The logs tell their
LogManager's ``flushes`` (``storage.flush_scheduler``), which sets ``due``; the jobs run in worker
threads.
"""

from __future__ import annotations

import asyncio
import logging

from odradek.storage.flush import FlushJob
from odradek.storage.flush_scheduler import FlushScheduler

log = logging.getLogger("odradek.broker")


async def run_storage_work(flushes: FlushScheduler, due: asyncio.Event) -> None:
    """Take and run the due jobs each time ``due`` is set, until cancelled."""
    while True:
        await due.wait()
        due.clear()
        checkpoint = flushes.take_due_checkpoint()
        jobs = flushes.take_roll_flushes()
        try:
            if checkpoint is not None:
                await asyncio.to_thread(checkpoint.run)
            if jobs:
                await asyncio.to_thread(_run_all, [job for _, job in jobs])
                flushes.complete_flushes(jobs)
        except OSError:
            log.exception("flushing rolled segments or writing checkpoints failed")


def _run_all(jobs: list[FlushJob]) -> None:
    for job in jobs:
        job.run()
