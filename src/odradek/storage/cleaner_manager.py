"""Which logs are compacted, and what becomes of a cleaning, as Kafka's LogCleanerManager: the logs
that need cleaning now (not one being copied to another log dir, not one marked uncleanable), a
cleaning's failure (an I/O error takes the dir offline, any other marks the partition uncleanable) and
its completion (the cleaned segments swapped in, the replaced ones deleted later).

The log manager owns one (``LogManager.cleaner``); the cleaning itself is ``cleaner.py``'s."""

from __future__ import annotations

import logging
from collections.abc import Callable, Container, Mapping

from odradek.storage.cleaner import CleaningPlan, CleaningResult, install_cleaning, plan_cleaning
from odradek.storage.errors import LogStorageError
from odradek.storage.log import Log
from odradek.storage.log_dir_failure import LogDirFailureChannel, is_disk_error
from odradek.storage.partition import TopicPartition
from odradek.storage.segment import LogSegment

_log = logging.getLogger(__name__)


class CleanerManager:
    def __init__(
        self,
        logs: Mapping[TopicPartition, Log],
        moving: Container[TopicPartition],
        failures: LogDirFailureChannel,
        schedule_deletion: Callable[[list[LogSegment], int], None],
    ) -> None:
        """``logs``: the manager's logs (a live view); ``moving``: the partitions being copied to
        another log dir; ``schedule_deletion``: removes segments after a delay (in-flight reads end)."""
        self._logs = logs
        self._moving = moving
        self._failures = failures
        self._schedule_deletion = schedule_deletion
        #: Kafka's uncleanable partitions: their cleaning failed other than by an I/O error.
        self._uncleanable: set[TopicPartition] = set()

    def compaction_plans(self) -> list[tuple[Log, CleaningPlan]]:
        """Logs that need cleaning now; run ``run_cleaning(plan)`` in a thread, then
        ``complete_compaction`` (or ``compaction_failed`` with what it raised)."""
        # Kafka's maintainUncleanablePartitions: a partition no longer here is forgotten
        self._uncleanable &= self._logs.keys()
        plans = []
        for tp, log in list(self._logs.items()):
            # as Kafka's abortAndPauseCleaning: a log being copied is not compacted under the copy
            if tp in self._moving or tp in self._uncleanable:
                continue
            try:
                plan = plan_cleaning(log)
            except OSError as error:  # the dir's inode could not be read: the dir failed
                self._failures.mark_offline(log.dir.parent, error)
                continue
            if plan is not None:
                plans.append((log, plan))
        return plans

    @property
    def uncleanable_partitions(self) -> set[TopicPartition]:
        return self._uncleanable & self._logs.keys()

    def compaction_failed(self, log: Log, plan: CleaningPlan, error: Exception) -> None:
        """``run_cleaning(plan)`` raised ``error``: as Kafka's LogCleaner, an I/O error takes the log
        dir offline (LogDirFailureChannel), any other marks the partition uncleanable, skipped from
        then on (LogCleanerManager.markPartitionUncleanable) while its dir and the others are cleaned."""
        if self._logs.get(log.topic_partition) is not log or isinstance(error, LogStorageError):
            return  # deleted or moved meanwhile, or its dir already offline: nothing to report
        if isinstance(error, OSError):
            if any(segment.closed for segment in plan.segments) or not is_disk_error(error):
                # retention closed a segment under the cleaning (Kafka aborts it): not the disk
                _log.info("cleaning %s stopped: its segments were removed meanwhile", log.topic_partition)
                return
            self._failures.mark_offline(log.dir.parent, error)
            return
        self._uncleanable.add(log.topic_partition)
        _log.error(
            "cleaning %s failed; the partition is uncleanable until it is deleted or the broker restarts",
            log.topic_partition,
            exc_info=error,
        )

    def complete_compaction(self, log: Log, result: CleaningResult) -> None:
        """Swap the cleaned segments in (renames on the loop). A rename failing is the dir failing:
        raises LogStorageError once the dir is offline; the next start finishes or discards the swap
        from the suffixes the files have (log_loader)."""
        if self._logs.get(log.topic_partition) is not log:
            for group in result.groups:  # the log was deleted meanwhile
                group.new.delete_files()
            return
        try:
            replaced = install_cleaning(log, result)
        except OSError as error:
            raise self._failures.mark_offline(log.dir.parent, error) from error
        self._schedule_deletion(replaced, log.config.file_delete_delay_ms)
