"""The flushes and offset checkpoints a LogManager's logs make due, taken on the loop as jobs.

Kafka's LogManager runs this work on its scheduler: the flush of the segments below a new one (a task
UnifiedLog.roll schedules), the flushes ``flush.ms``/``flush.messages`` ask for (flushDirtyLogs), the
recovery point checkpoint written at once after a truncation (truncateTo), and the periodic offset
checkpoints. Here the logs tell the scheduler of their rolls and truncations (``LogEvents``, on the
loop), and it calls ``on_work_due`` so that its owner takes the jobs soon: ``take_roll_flushes`` and
``take_due_checkpoint``. Every job's ``run`` is file work for a worker thread; a flush job is then
completed on the loop (``complete_flushes``), which moves the recovery points (see flush.py).

A truncated log is ``truncation_unsynced`` from its truncation until a ``TruncationCheckpointJob``
taken after it completed (``complete_truncation_checkpoint``): until then the checkpoint file on disk
may claim the offsets the truncation removed as fsynced, so nothing may write there again (Kafka's
truncateTo returns only once the file is rewritten; cluster/replication/truncation_checkpoints.py has
the appenders wait).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from odradek.storage.checkpoint_jobs import CheckpointJob, CheckpointWriter
from odradek.storage.files import (
    CLEANER_OFFSET_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
)
from odradek.storage.flush import FlushJob
from odradek.storage.log import Log
from odradek.storage.log_dir_failure import LogDirFailures
from odradek.storage.partition import TopicPartition


@dataclass(slots=True)
class TruncationCheckpointJob:
    """The file work after truncations: each truncated log's directory (the renames of the segments it
    removed, a new segment's file) and leader epoch checkpoint fsynced, then the offset checkpoints
    written. ``run`` in a worker thread, then ``FlushScheduler.complete_truncation_checkpoint`` on the
    loop. The cut segment is not fsynced (as in Kafka): its dirty pages could take seconds, and what
    a power loss brings back of its old tail lies past the lowered recovery point, validated at start
    and truncated again by the next fetch."""

    checkpoint: CheckpointJob
    #: The truncated logs' fsyncs (``FlushJob`` for its ``run`` alone: never completed, it moves no
    #: recovery point). Before the checkpoint, so that a recovery point raised by a full truncation (the
    #: log starts over past its old end) never claims old segments whose renames a power loss undid.
    fsyncs: list[FlushJob]
    #: Each truncated log it covers, with the number of its truncation (see ``truncation_unsynced``).
    covers: dict[Log, int]

    def run(self) -> None:
        for job in self.fsyncs:
            job.run()
        self.checkpoint.run()

    def covers_truncation(self, log: Log, truncation: int | None) -> bool:
        return truncation is not None and self.covers.get(log) == truncation


class FlushScheduler:
    """The due flushes and checkpoints of the logs in ``logs`` (the manager's, as they change)."""

    def __init__(
        self,
        log_dirs: Sequence[Path],
        logs: Mapping[TopicPartition, Log],
        on_work_due: Callable[[], None] | None = None,
        failures: LogDirFailures | None = None,
    ) -> None:
        self._log_dirs = log_dirs
        self._failures = failures
        self._logs = logs
        self._on_work_due = on_work_due
        self._checkpoints = CheckpointWriter()
        self._rolled: dict[int, Log] = {}
        self._checkpoint_due = False
        #: Truncated logs whose lowered recovery point is not on disk yet, with their truncation's number.
        self._unsynced: dict[Log, int] = {}
        self._truncations = 0

    # -- what the logs tell (LogEvents) ----------------------------------------------------------

    def log_rolled(self, log: Log) -> None:
        """The log's old segments are due a flush."""
        self._rolled[id(log)] = log
        if self._on_work_due is not None:
            self._on_work_due()

    def log_truncated(self, log: Log) -> None:
        """The recovery point checkpoint is due, and nothing may write to the log until it is written."""
        self._truncations += 1
        self._unsynced[log] = self._truncations
        self._checkpoint_due = True
        if self._on_work_due is not None:
            self._on_work_due()

    # -- truncations -----------------------------------------------------------------------------

    def holds(self, log: Log) -> bool:
        """Whether ``log`` is still the manager's (not deleted, nor set aside)."""
        return self._logs.get(log.topic_partition) is log

    def truncation_unsynced(self, log: Log) -> int | None:
        """The number of the log's last truncation while no checkpoint taken after it is on disk (its
        recovery point there may claim offsets the truncation removed); None once one is."""
        return self._unsynced.get(log)

    # -- flushes ---------------------------------------------------------------------------------

    def take_roll_flushes(self) -> list[tuple[Log, FlushJob]]:
        """The flushes the logs' rolls asked for (Kafka's flush of the old segment at a roll): run each
        job's ``run`` in a worker thread, then ``complete_flushes``. A log deleted meanwhile is skipped."""
        rolled, self._rolled = self._rolled, {}
        jobs = []
        for log in rolled.values():
            if self._logs.get(log.topic_partition) is log and (job := log.prepare_roll_flush()) is not None:
                jobs.append((log, job))
        return jobs

    def prepare_flushes(self) -> list[tuple[Log, FlushJob]]:
        """Flush jobs for the logs whose ``flush.ms``/``flush.messages`` is due."""
        jobs = []
        for log in self._logs.values():
            if log.flush_needed():
                job = log.prepare_flush()
                if job is not None:
                    jobs.append((log, job))
        return jobs

    @staticmethod
    def complete_flushes(jobs: Iterable[tuple[Log, FlushJob]]) -> None:
        for log, job in jobs:
            log.complete_flush(job)

    # -- offset checkpoints ----------------------------------------------------------------------

    def take_due_checkpoint(self) -> TruncationCheckpointJob | None:
        """The offset checkpoints, if a truncation lowered a recovery point since the last one was
        taken: the file must stop claiming the offsets above it before they are written again (Kafka
        rewrites it in LogManager.truncateTo). Run it in a worker thread, then
        ``complete_truncation_checkpoint``."""
        if not self._checkpoint_due:
            return None
        return self.prepare_truncation_checkpoint()

    def prepare_truncation_checkpoint(self) -> TruncationCheckpointJob:
        """As ``take_due_checkpoint``, due or not: for every truncated log not synced yet (a job taken
        before may have failed)."""
        self._checkpoint_due = False
        fsyncs = [
            FlushJob(
                log.log_end_offset, [], [log.leader_epoch_cache.path], log.dir, failed=self._reporter(log)
            )
            for log in self._unsynced
            if self._logs.get(log.topic_partition) is log  # a deleted log's files are going
        ]
        return TruncationCheckpointJob(self.prepare_checkpoint(), fsyncs, dict(self._unsynced))

    def complete_truncation_checkpoint(self, job: TruncationCheckpointJob) -> None:
        """``job`` ran: the logs it covers are synced, unless truncated again since it was taken."""
        for log, truncation in job.covers.items():
            if self._unsynced.get(log) == truncation:
                del self._unsynced[log]

    def prepare_checkpoint(self) -> CheckpointJob:
        """Recovery points, log start offsets, high watermarks and cleaner offsets, per log dir
        (``log.flush.offset.checkpoint.interval.ms``)."""
        files: list[tuple[Path, dict[TopicPartition, int]]] = []
        for log_dir in self._log_dirs:
            logs = {tp: log for tp, log in self._logs.items() if log.dir.parent == log_dir}
            files.append(
                (log_dir / RECOVERY_POINT_CHECKPOINT, {tp: lg.recovery_point for tp, lg in logs.items()})
            )
            files.append(
                (log_dir / LOG_START_OFFSET_CHECKPOINT, {tp: lg.log_start_offset for tp, lg in logs.items()})
            )
            files.append(
                (log_dir / REPLICATION_OFFSET_CHECKPOINT, {tp: lg.high_watermark for tp, lg in logs.items()})
            )
            cleaner = {
                tp: lg.cleaner_checkpoint for tp, lg in logs.items() if lg.cleaner_checkpoint is not None
            }
            files.append((log_dir / CLEANER_OFFSET_CHECKPOINT, cleaner))
        return self._captured(files)

    def prepare_high_watermark_checkpoint(self) -> CheckpointJob:
        """Only the high watermarks, per log dir: a cluster member's followers and leaders advance them
        apart from the log ends (``replica.high.watermark.checkpoint.interval.ms``, Kafka's 5 s)."""
        return self._captured(
            [
                (
                    log_dir / REPLICATION_OFFSET_CHECKPOINT,
                    {tp: log.high_watermark for tp, log in self._logs.items() if log.dir.parent == log_dir},
                )
                for log_dir in self._log_dirs
            ]
        )

    def _reporter(self, log: Log) -> Callable[[OSError], None] | None:
        """A failed fsync of ``log``'s files takes its log dir offline (raising LogStorageError)."""
        failures = self._failures
        if failures is None:
            return None

        def failed(error: OSError) -> None:
            raise failures.mark_offline(log.dir.parent, error) from error

        return failed

    def _captured(self, files: list[tuple[Path, dict[TopicPartition, int]]]) -> CheckpointJob:
        self._checkpoints.captured += 1
        return CheckpointJob(files, self._checkpoints.captured, self._checkpoints, self._failures)
