"""Partitions leaving the log manager: one partition's log (``delete_log``), a topic's (the steps of
``log_deletion.py``), some of a topic's replicas (a controller's StopReplica), and the files they leave,
removed once ``file.delete.delay.ms`` has passed (in-flight reads end first) by ``take_file_deletions``
jobs, as Kafka's LogManager does with its logs to be deleted.

The log manager owns one (``LogManager.deletions``) over its logs; the jobs themselves are
``log_deletion.py``'s."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from odradek.storage.files import Clock
from odradek.storage.log import Log
from odradek.storage.log_deletion import FileDeletionJob, TopicDeletionJob
from odradek.storage.log_dir_failure import LogDirFailureChannel, close_quietly
from odradek.storage.log_moves import ReplicaMoves
from odradek.storage.partition import TopicPartition, delete_dir_name
from odradek.storage.segment import LogSegment
from odradek.storage.topic_store import TopicStore


class PartitionDeletions:
    def __init__(
        self,
        logs: dict[TopicPartition, Log],
        offline: set[TopicPartition],
        moves: ReplicaMoves,
        topic_store: TopicStore,
        checkpoint: Callable[[], Callable[[], None]],
        failures: LogDirFailureChannel,
        clock: Clock,
    ) -> None:
        """``logs`` and ``offline``: the manager's logs and offline partitions, changed here;
        ``checkpoint``: prepares the offset checkpoints' rewrite of the logs left (a job to run)."""
        self._logs = logs
        self._offline = offline
        self._moves = moves
        self._topic_store = topic_store
        self._checkpoint = checkpoint
        self._failures = failures
        self._clock = clock
        self._pending: list[tuple[int, FileDeletionJob]] = []
        self._topic_deletions: dict[str, TopicDeletionJob] = {}

    def delete_log(self, topic: str, partition: int) -> bool:
        """Remove a partition: its dir is renamed ``<topic>-<partition>.<uuid>-delete`` now and removed
        after ``file.delete.delay.ms`` (open files keep serving in-flight reads until then)."""
        tp = TopicPartition(topic, partition)
        self.abandon_moves([tp])
        log = self._logs.pop(tp, None)
        if log is None:
            return False
        log.rename_dir(log.dir.parent / delete_dir_name(tp))
        job = FileDeletionJob(closing=list(log.segments), directories=[log.dir])
        self._pending.append((self._clock() + log.config.file_delete_delay_ms, job))
        return True

    def mark_topic_deleted(self, name: str) -> bool:
        """Step 1 of a topic deletion (file work: a worker thread), see log_deletion.py. Raises OSError
        with nothing changed; False if the topic has no record."""
        return self._topic_store.mark_deleted(name)

    def take_topic_deletion(self, name: str) -> TopicDeletionJob:
        """Step 2, on the loop: the topic's logs leave the manager; run the job in a worker thread, then
        ``complete_topic_deletion``."""
        self.abandon_moves([tp for tp in self._moves.future if tp.topic == name])
        logs = [self._logs.pop(tp) for tp in [tp for tp in self._logs if tp.topic == name]]
        job = TopicDeletionJob(name, logs, self._topic_store, self._checkpoint(), self._failures)
        self._topic_deletions[name] = job
        return job

    def complete_topic_deletion(self, job: TopicDeletionJob) -> None:
        """On the loop after ``job.run``: what it renamed is removed after ``file.delete.delay.ms``, the
        files of what it gave up in a failed dir are closed; an unfinished job stays in
        ``unfinished_topic_deletions`` for the next retention check."""
        self._schedule_renamed(job)
        if job.finished:
            self._topic_deletions.pop(job.topic, None)

    def take_partition_deletion(self, topic: str, partitions: Iterable[int]) -> TopicDeletionJob:
        """Some partitions of a topic go (a controller's StopReplica with delete, one replica at a time):
        their logs leave the manager now; run the job in a worker thread (it renames them ``-delete``
        and rewrites the checkpoints), then ``complete_partition_deletion``. No topic record is marked:
        a crash before the renames leaves the partitions whole, and the controller, whose deletion is
        pending until every replica answered, sends StopReplica again."""
        wanted = [TopicPartition(topic, partition) for partition in partitions]
        self.abandon_moves(wanted)
        logs = [self._logs.pop(tp) for tp in wanted if tp in self._logs]
        return TopicDeletionJob(topic, logs, self._topic_store, self._checkpoint(), self._failures)

    def complete_partition_deletion(self, job: TopicDeletionJob) -> None:
        """On the loop after ``job.run``: what it renamed is removed after ``file.delete.delay.ms``; a
        log whose dir failed under the job is offline with it (the request answers a storage error)."""
        for log in job.logs:  # not renamed, its dir not failed (a job run without one)
            self._logs[log.topic_partition] = log
        job.logs = []
        self._offline.update(log.topic_partition for log in job.abandoned)
        self._schedule_renamed(job)

    def unfinished_topic_deletions(self) -> list[TopicDeletionJob]:
        """Topic deletions whose renames failed (a disk error): run and complete them again."""
        return list(self._topic_deletions.values())

    def delete_topic(self, name: str) -> bool:
        """Forget the topic and delete its partition logs, every step here (tests, tools); the broker
        runs the steps itself, the file work in worker threads. False if the topic had no record."""
        marked = self.mark_topic_deleted(name)
        job = self.take_topic_deletion(name)
        job.run()
        self.complete_topic_deletion(job)
        return marked

    def is_topic_being_deleted(self, name: str) -> bool:
        """Whether a deletion of ``name`` is under way (the name cannot be reused until it is done)."""
        return name in self._topic_deletions or name in self._topic_store.deleting()

    # -- the files left, removed after a delay ---------------------------------------------------

    def schedule_deletion(self, segments: list[LogSegment], delay_ms: int) -> None:
        """Queue segments taken out of a log (e.g. by ``Log.truncate_to``) for a later file deletion job."""
        if segments:
            self._pending.append((self._clock() + delay_ms, FileDeletionJob(segments=segments)))

    def schedule_file_deletion(self, job: FileDeletionJob, delay_ms: int) -> None:
        """Remove what ``job`` names once ``delay_ms`` has passed (in-flight reads end first)."""
        self._pending.append((self._clock() + delay_ms, job))

    def take_file_deletions(self) -> FileDeletionJob:
        """The deletions now due, as one job for a worker thread."""
        now = self._clock()
        due = FileDeletionJob(failures=self._failures)
        keep = []
        for when, job in self._pending:
            if when <= now:
                due.extend(job)
            else:
                keep.append((when, job))
        self._pending = keep
        return due

    def run_all(self) -> None:
        """At shutdown: every deletion queued, due or not (a file left over is removed at the next start)."""
        for _, job in self._pending:
            job.run()  # never raises
        self._pending.clear()

    def abandon_moves(self, partitions: Iterable[TopicPartition]) -> None:
        """Stop the partitions' moves to another log dir: their future logs go (now -delete)."""
        for tp in partitions:
            job = self._moves.abandon(tp)
            if job is not None:
                self._pending.append((self._clock(), job))

    def _schedule_renamed(self, job: TopicDeletionJob) -> None:
        # the files of the logs the job gave up in a failed dir: closed, nothing more done there
        for log in job.abandoned:
            close_quietly(log.segments)
        job.abandoned = []
        delay_ms = max((log.config.file_delete_delay_ms for log in job.renamed), default=0)
        due = job.take_renamed(delay_ms, self._clock())
        if due is not None:
            self._pending.append(due)
