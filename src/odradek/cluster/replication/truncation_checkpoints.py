"""The offset checkpoints a truncation makes due, written in a worker thread, and the wait for them.

Kafka's LogManager.truncateTo rewrites recovery-point-offset-checkpoint before the fetcher thread goes
on (a truncation's callers hold the fetcher's lock meanwhile). Until it is rewritten the file claims
that the offsets at and above the truncation were fsynced; records appended there again are not, so
a power loss would bring them back torn or stale (or as a hole) under a recovery point that start-up
trusts unchecked. Here the write runs in a worker thread (an fsync on the loop would stall every
connection), and whatever appends to a truncated log waits for it first: its replica fetcher before
the next append (replica_fetcher.py), and a LeaderAndIsr that makes this broker its leader before it
leads (replica_logs.py; the request stops the partition's fetcher before it waits, as Kafka's
makeLeaders). Nothing else waits: ``pending`` is one dictionary lookup, and the fetch
path awaits only after a truncation (rare: a leader change or an unclean election).

One write serves every waiter it covers, and the storage task's own (server/storage_work.py): a write
taken after a log's last truncation covers it, whoever took it.

A write that fails takes the logs it was for offline until the broker restarts (or a StopReplica
deletes them; a replica made again has a new log): nothing appends to them, their fetcher drops them
(Kafka's markPartitionFailed), and LeaderAndIsr answers KAFKA_STORAGE_ERROR for them, to lead or to
follow. It is not retried: after a failed fsync a second one may succeed although the data of the
first never reached the disk. As in Kafka, the failed write's log dir goes offline too (storage reports
it: storage/log_dir_failure.py), with all its partitions, and the controller is told
(server/log_dir_failures.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from odradek.storage.errors import LogStorageError
from odradek.storage.flush_scheduler import FlushScheduler, TruncationCheckpointJob
from odradek.storage.log import Log

log = logging.getLogger("odradek.cluster.replicas")


class TruncationCheckpoints:
    def __init__(self, flushes: FlushScheduler) -> None:
        self._flushes = flushes
        #: The writes under way, each with the job it runs.
        self._writing: dict[asyncio.Task[None], TruncationCheckpointJob] = {}
        #: The logs a failed write was for: offline until the broker restarts or they are deleted.
        self._offline: set[Log] = set()

    def pending(self, replica_log: Log) -> bool:
        """Whether the log was truncated and the checkpoint files on disk may still claim more of it
        than it holds (or a write failed): append to it only once ``written`` returned."""
        return replica_log in self._offline or self._flushes.truncation_unsynced(replica_log) is not None

    def offline(self, replica_log: Log) -> bool:
        """Whether a failed write took the log offline (until the broker restarts)."""
        return replica_log in self._offline

    def forget_deleted(self) -> None:
        """Let go of the offline logs storage no longer holds (deleted): a partition made again here
        gets a new log, and the old one's files and state need not live on."""
        self._offline = {offline for offline in self._offline if self._flushes.holds(offline)}

    async def written(self, replica_log: Log) -> None:
        """Return once the checkpoints written after the log's last truncation are on disk (at once when
        none is due). Raises LogStorageError when writing them failed, then and at every later call."""
        self._check_online(replica_log)
        while (truncation := self._flushes.truncation_unsynced(replica_log)) is not None:
            write = next(
                (
                    task
                    for task, job in self._writing.items()
                    if job.covers_truncation(replica_log, truncation)
                ),
                None,
            )
            if write is None:
                write = self._start(self._flushes.prepare_truncation_checkpoint())
            with contextlib.suppress(Exception):  # logged in _done, and the log is offline then
                await asyncio.shield(write)  # a waiter cancelled leaves the write to the others
            self._check_online(replica_log)

    def _check_online(self, replica_log: Log) -> None:
        if replica_log in self._offline:
            raise LogStorageError(
                f"{replica_log.topic_partition} is offline: writing the offset checkpoints after its "
                "truncation failed"
            )

    async def write_due(self) -> None:
        """The storage task's turn: write them when a truncation made them due since the last write was
        taken. Raises what the write raised."""
        job = self._flushes.take_due_checkpoint()
        if job is not None:
            await asyncio.shield(self._start(job))

    def _start(self, job: TruncationCheckpointJob) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(self._write(job), name="truncation checkpoint")
        self._writing[task] = job
        task.add_done_callback(self._done)
        return task

    async def _write(self, job: TruncationCheckpointJob) -> None:
        try:
            await asyncio.to_thread(job.run)
        except Exception:  # a disk error, or a bug: either way these logs are not synced
            self._offline.update(job.covers)
            raise
        self._flushes.complete_truncation_checkpoint(job)

    def _done(self, task: asyncio.Task[None]) -> None:
        job = self._writing.pop(task, None)
        if not task.cancelled() and (error := task.exception()) is not None:
            names = sorted(str(covered.topic_partition) for covered in (job.covers if job else ()))
            log.error(
                "writing the offset checkpoints after a truncation failed: %s offline until the broker "
                "restarts",
                ", ".join(names),
                exc_info=error,
            )
