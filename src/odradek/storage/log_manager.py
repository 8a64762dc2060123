"""LogManager: every partition log under ``log.dirs``, their checkpoints, and the periodic work.

Loading a log dir at start-up is ``log_dir_loading.py``'s; the flushes and offset checkpoints that
rolls, truncations and the periodic jobs make due are ``flushes`` (``flush_scheduler.py``).

The broker's event loop owns the manager. Methods named ``take_*``/``prepare_*``/``*_plans`` run on the
loop and return jobs whose ``run()`` (or ``run_cleaning``) does the slow file work in a worker thread;
``complete_*`` hands results back on the loop. ``startup`` and ``shutdown`` are file work through and
through: run them in a thread before serving / after the loop stopped serving. See README.md.
"""

from __future__ import annotations

import functools
import logging
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType

from odradek.storage.checkpoints import MetaProperties
from odradek.storage.cleaner import CleaningPlan, CleaningResult, install_cleaning, plan_cleaning
from odradek.storage.config import ConfigValue, LogConfig
from odradek.storage.errors import LogStorageError
from odradek.storage.files import CLEAN_SHUTDOWN_MARKER, Clock, atomic_write, system_clock
from odradek.storage.flush_scheduler import FlushScheduler
from odradek.storage.log import Log
from odradek.storage.log_deletion import FileDeletionJob, TopicDeletionJob
from odradek.storage.log_dir_loading import LogDirOffsets, load_log_dir
from odradek.storage.node_id import ensure_meta_properties
from odradek.storage.partition import TopicPartition, delete_dir_name
from odradek.storage.partition_creation import PartitionCreationJob
from odradek.storage.segment import LogSegment
from odradek.storage.stray_logs import check_topic_store
from odradek.storage.topic_store import TopicRecord, TopicStore

_log = logging.getLogger(__name__)


class LogManager:
    def __init__(
        self,
        log_dirs: Sequence[Path | str],
        default_config: LogConfig | None = None,
        *,
        clock: Clock = system_clock,
        producer_id_expiration_ms: int = 86_400_000,
        single_node: bool = True,
        on_work_due: Callable[[], None] | None = None,
    ) -> None:
        """``on_work_due``: called on the loop when a log rolled a segment or was truncated, so that
        whoever runs the manager's jobs takes ``flushes.take_roll_flushes`` and
        ``flushes.take_due_checkpoint`` soon (the broker wakes a task of its own)."""
        if not log_dirs:
            raise ValueError("at least one log dir is needed")
        self.log_dirs = [Path(d) for d in log_dirs]
        self.default_config = default_config or LogConfig()
        self.clock = clock
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self.single_node = single_node
        self.topic_store = TopicStore(self.log_dirs[0])
        self._logs: dict[TopicPartition, Log] = {}
        self._pending: list[tuple[int, FileDeletionJob]] = []
        self._topic_deletions: dict[str, TopicDeletionJob] = {}
        #: The flushes and offset checkpoints due (rolls and truncations tell it, as the logs' events).
        self.flushes = FlushScheduler(self.log_dirs, MappingProxyType(self._logs), on_work_due)

    # -- startup and shutdown (file work: run in a thread) ---------------------------------------

    def startup(self) -> None:
        """Create the log dirs, load (and after a crash recover) every partition log, finish pending
        partition deletions. Topic config overrides from the topic store apply to the loaded logs."""
        if self.single_node:
            check_topic_store(self.log_dirs)
        topics = self.topic_store.load_topics()
        deleting = self.topic_store.deleting()
        removed = False
        open_log = functools.partial(self._open_loaded_log, topics=topics)
        for log_dir in self.log_dirs:
            logs, removed_here = load_log_dir(
                log_dir, open_log, deleting, topics if self.single_node else None
            )
            for tp, log in logs.items():
                if (previous := self._logs.get(tp)) is not None:
                    # As Kafka's LogManager.loadLog: which one holds the records to serve is not ours
                    # to guess (a log dir not mounted while the partition was made again in another?).
                    raise LogStorageError(
                        f"partition {tp.topic}-{tp.partition} has a directory in two log dirs, "
                        f"{previous.dir} and {log.dir}: move the one not to serve out of the log dirs"
                    )
                self._logs[tp] = log
            removed = removed or removed_here
        if removed:
            # Kafka too rewrites them: a topic created again under a deleted name (or a stray's) must
            # not inherit the old partitions' recovery points and log start offsets at the next start.
            self.flushes.prepare_checkpoint().run()
        self.topic_store.forget_deleted(deleting)

    def _open_loaded_log(
        self,
        directory: Path,
        tp: TopicPartition,
        offsets: LogDirOffsets,
        *,
        topics: Mapping[str, TopicRecord],
    ) -> Log:
        log = Log.open(
            directory,
            self.config_for(tp.topic, topics),
            clock=self.clock,
            recovery_point=offsets.recovery_points.get(tp, 0),
            log_start_offset=offsets.log_start_offsets.get(tp),
            high_watermark=offsets.high_watermarks.get(tp),
            had_clean_shutdown=offsets.had_clean_shutdown,
            producer_id_expiration_ms=self.producer_id_expiration_ms,
            auto_high_watermark=self.single_node,
            events=self.flushes,
        )
        log.cleaner_checkpoint = offsets.cleaner_offsets.get(tp)
        return log

    def shutdown(self) -> None:
        """Clean shutdown: fsync every log, snapshot producer state, write checkpoints and the clean
        shutdown marker, so the next start skips recovery."""
        for log in self._logs.values():
            log.flush()
            log.close()
        self.flushes.prepare_checkpoint().run()
        # A topic deletion whose renames failed is left to the next start, which finishes it from its
        # mark (a retention check may still be running it in a worker thread).
        for _, job in self._pending:
            job.run()  # never raises: a file left over is removed at the next start
        self._pending.clear()
        for log_dir in self.log_dirs:
            atomic_write(log_dir / CLEAN_SHUTDOWN_MARKER, b"")

    # -- partitions ------------------------------------------------------------------------------

    @property
    def logs(self) -> Mapping[TopicPartition, Log]:
        return dict(self._logs)

    def get_log(self, topic: str, partition: int) -> Log | None:
        return self._logs.get(TopicPartition(topic, partition))

    def get_or_create_log(
        self,
        topic: str,
        partition: int,
        *,
        topic_id: uuid.UUID | None = None,
        config: LogConfig | None = None,
    ) -> Log:
        """The partition's log, created empty (in the log dir holding the fewest partitions) if absent.
        Creating is file work (fsyncs): the loop uses ``prepare_partitions`` instead."""
        log = self._logs.get(TopicPartition(topic, partition))
        if log is not None and log.matches_topic_id(topic_id):
            return log
        job = self.prepare_partitions(topic, [partition], topic_id=topic_id, config=config)
        job.run()
        self.complete_partitions(job)
        return self._logs[TopicPartition(topic, partition)]

    def prepare_partitions(
        self,
        topic: str,
        partitions: Iterable[int],
        *,
        topic_id: uuid.UUID | None = None,
        config: LogConfig | None = None,
        record: TopicRecord | None = None,
    ) -> PartitionCreationJob:
        """Plan empty logs for those of ``partitions`` the topic does not have yet, each in the log dir
        holding the fewest partitions; with ``record``, the job stores it first (a new topic or a new
        partition count; its configs are validated here). Run the job's ``run`` in a worker thread,
        then ``complete_partitions`` on the loop. One job per topic at a time.

        With ``topic_id``, an existing log of another topic id leaves the manager now (it is not the
        partition asked for: never served again) and the job sets it aside before making a new one;
        an existing log without an id takes ``topic_id`` (see partition_creation.py)."""
        if record is not None:
            config = LogConfig.from_mapping(record.configs, base=self.default_config)  # validates
        elif config is None:
            config = self.config_for(topic)
        counts = self._partition_counts()
        directories: dict[int, Path] = {}
        strays: list[Log] = []
        adopted: dict[int, Log] = {}
        for partition in partitions:
            tp = TopicPartition(topic, partition)
            existing = self._logs.get(tp)
            if existing is not None:
                if existing.matches_topic_id(topic_id):
                    continue
                if existing.topic_id is None:
                    adopted[partition] = existing
                    continue
                strays.append(self._logs.pop(tp))
                directories[partition] = existing.dir  # the new log takes its place
                continue
            if partition in directories:
                continue
            log_dir = min(self.log_dirs, key=lambda d: counts[d])
            counts[log_dir] += 1
            directories[partition] = log_dir / tp.dir_name
        return PartitionCreationJob(
            topic,
            topic_id,
            directories,
            config,
            self._open_new_log,
            self.topic_store,
            record,
            previous=self.topic_store.load_topics().get(topic) if record is not None else None,
            strays=strays,
            # captured once the strays are out: the files must not name their offsets again
            checkpoint=self.flushes.prepare_checkpoint().run if strays else None,
            adopted=adopted,
        )

    def complete_partitions(self, job: PartitionCreationJob) -> list[Log]:
        """Install the logs a finished ``PartitionCreationJob`` made; returns them."""
        for partition, log in job.logs.items():
            if job.topic_id is not None:
                log.topic_id = job.topic_id  # an adopted log's partition.metadata is written now
            self._logs[TopicPartition(job.topic, partition)] = log
        return list(job.logs.values())

    def _open_new_log(self, directory: Path, config: LogConfig) -> Log:
        return Log.open(
            directory,
            config,
            clock=self.clock,
            producer_id_expiration_ms=self.producer_id_expiration_ms,
            auto_high_watermark=self.single_node,
            events=self.flushes,
        )

    def _partition_counts(self) -> dict[Path, int]:
        """Partitions per log dir (with one dir, no counting: it gets every partition anyway)."""
        counts = dict.fromkeys(self.log_dirs, 0)
        if len(self.log_dirs) > 1:
            for existing in self._logs.values():
                counts[existing.dir.parent] = counts.get(existing.dir.parent, 0) + 1
        return counts

    def delete_log(self, topic: str, partition: int) -> bool:
        """Remove a partition: its dir is renamed ``<topic>-<partition>.<uuid>-delete`` now and removed
        after ``file.delete.delay.ms`` (open files keep serving in-flight reads until then)."""
        tp = TopicPartition(topic, partition)
        log = self._logs.pop(tp, None)
        if log is None:
            return False
        log.rename_dir(log.dir.parent / delete_dir_name(tp))
        job = FileDeletionJob(closing=list(log.segments), directories=[log.dir])
        self._pending.append((self.clock() + log.config.file_delete_delay_ms, job))
        return True

    def mark_topic_deleted(self, name: str) -> bool:
        """Step 1 of a topic deletion (file work: a worker thread), see log_deletion.py. Raises OSError
        with nothing changed; False if the topic has no record."""
        return self.topic_store.mark_deleted(name)

    def take_topic_deletion(self, name: str) -> TopicDeletionJob:
        """Step 2, on the loop: the topic's logs leave the manager; run the job in a worker thread, then
        ``complete_topic_deletion``."""
        logs = [self._logs.pop(tp) for tp in [tp for tp in self._logs if tp.topic == name]]
        job = TopicDeletionJob(name, logs, self.topic_store, self.flushes.prepare_checkpoint().run)
        self._topic_deletions[name] = job
        return job

    def complete_topic_deletion(self, job: TopicDeletionJob) -> None:
        """On the loop after ``job.run``: what it renamed is removed after ``file.delete.delay.ms``; an
        unfinished job stays in ``unfinished_topic_deletions`` for the next retention check."""
        delay_ms = max((log.config.file_delete_delay_ms for log in job.renamed), default=0)
        due = job.take_renamed(delay_ms, self.clock())
        if due is not None:
            self._pending.append(due)
        if job.finished:
            self._topic_deletions.pop(job.topic, None)

    def take_partition_deletion(self, topic: str, partitions: Iterable[int]) -> TopicDeletionJob:
        """Some partitions of a topic go (a controller's StopReplica with delete, one replica at a time):
        their logs leave the manager now; run the job in a worker thread (it renames them ``-delete``
        and rewrites the checkpoints), then ``complete_partition_deletion``. No topic record is marked:
        a crash before the renames leaves the partitions whole, and the controller, whose deletion is
        pending until every replica answered, sends StopReplica again."""
        wanted = [TopicPartition(topic, partition) for partition in partitions]
        logs = [self._logs.pop(tp) for tp in wanted if tp in self._logs]
        return TopicDeletionJob(topic, logs, self.topic_store, self.flushes.prepare_checkpoint().run)

    def complete_partition_deletion(self, job: TopicDeletionJob) -> None:
        """On the loop after ``job.run``: what it renamed is removed after ``file.delete.delay.ms``; a
        log whose rename failed is back in the manager, as it was (the request answers a storage error)."""
        for log in job.logs:
            self._logs[log.topic_partition] = log
        job.logs = []
        delay_ms = max((log.config.file_delete_delay_ms for log in job.renamed), default=0)
        due = job.take_renamed(delay_ms, self.clock())
        if due is not None:
            self._pending.append(due)

    def unfinished_topic_deletions(self) -> list[TopicDeletionJob]:
        """Topic deletions whose renames failed (a disk error): run and complete them again."""
        return list(self._topic_deletions.values())

    def is_topic_being_deleted(self, name: str) -> bool:
        """Whether a deletion of ``name`` is under way (the name cannot be reused until it is done)."""
        return name in self._topic_deletions or name in self.topic_store.deleting()

    # -- topics ----------------------------------------------------------------------------------

    def config_for(self, topic: str, topics: Mapping[str, TopicRecord] | None = None) -> LogConfig:
        """The broker defaults overridden by the topic's stored configs."""
        record = (topics if topics is not None else self.topic_store.load_topics()).get(topic)
        if record is None:
            return self.default_config
        return LogConfig.from_mapping(record.configs, base=self.default_config)

    def save_topic(
        self,
        name: str,
        topic_id: uuid.UUID,
        partitions: int,
        configs: Mapping[str, ConfigValue] | None = None,
        replication_factor: int = 1,
    ) -> TopicRecord:
        """Persist a topic (create, add partitions, alter configs); new configs apply to its logs now.
        Writing the store is file work: the loop validates with ``topic_log_config``, calls
        ``topic_store.save_topic`` in a worker thread, then ``apply_topic_config``."""
        config = self.topic_log_config(configs or {})  # validates first
        record = self.topic_store.save_topic(name, topic_id, partitions, configs, replication_factor)
        self.apply_topic_config(name, config)
        return record

    def topic_log_config(self, configs: Mapping[str, ConfigValue]) -> LogConfig:
        """The log config of a topic with these overrides; raises InvalidLogConfigError."""
        return LogConfig.from_mapping(configs, base=self.default_config)

    def apply_topic_config(self, name: str, config: LogConfig) -> None:
        """New topic configs (already stored) apply to the topic's logs from now on."""
        for tp, log in self._logs.items():
            if tp.topic == name:
                log.update_config(config)

    def load_topics(self) -> dict[str, TopicRecord]:
        return self.topic_store.load_topics()

    def delete_topic(self, name: str) -> bool:
        """Forget the topic and delete its partition logs, every step here (tests, tools); the broker
        runs the steps itself, the file work in worker threads. False if the topic had no record."""
        marked = self.mark_topic_deleted(name)
        job = self.take_topic_deletion(name)
        job.run()
        self.complete_topic_deletion(job)
        return marked

    def ensure_meta_properties(self, broker_id: int, cluster_id: str | None = None) -> MetaProperties:
        """``meta.properties`` of every log dir, written or checked (see node_id.py)."""
        return ensure_meta_properties(self.log_dirs, broker_id, cluster_id)

    # -- periodic work ---------------------------------------------------------------------------

    def cleanup_logs(self) -> int:
        """Retention for every log (``log.retention.check.interval.ms``), on the loop: moves log start
        offsets and renames removed segments; their files are removed by ``take_file_deletions`` jobs
        once ``file.delete.delay.ms`` has passed. Returns how many segments were removed."""
        removed = 0
        for log in self._logs.values():
            try:
                segments = log.delete_old_segments()
            except OSError as error:  # one log's disk error must not stop retention for the others
                _log.warning("retention of %s failed: %s", log.topic_partition, error)
                continue
            if segments:
                self.schedule_deletion(segments, log.config.file_delete_delay_ms)
                removed += len(segments)
        return removed

    def take_file_deletions(self) -> FileDeletionJob:
        """The deletions now due, as one job for a worker thread."""
        now = self.clock()
        due = FileDeletionJob()
        keep = []
        for when, job in self._pending:
            if when <= now:
                due.extend(job)
            else:
                keep.append((when, job))
        self._pending = keep
        return due

    def compaction_plans(self) -> list[tuple[Log, CleaningPlan]]:
        """Logs that need cleaning now; run ``run_cleaning(plan)`` in a thread, then
        ``complete_compaction``."""
        return [(log, plan) for log in self._logs.values() if (plan := plan_cleaning(log)) is not None]

    def complete_compaction(self, log: Log, result: CleaningResult) -> None:
        if self._logs.get(log.topic_partition) is not log:
            for group in result.groups:  # the log was deleted meanwhile
                group.new.delete_files()
            return
        self.schedule_deletion(install_cleaning(log, result), log.config.file_delete_delay_ms)

    def set_producer_id_expiration_ms(self, expiration_ms: int) -> None:
        """producer.id.expiration.ms changed at run time: every log, and the ones made from now on."""
        self.producer_id_expiration_ms = expiration_ms
        for log in self._logs.values():
            log.producer_state.producer_id_expiration_ms = expiration_ms

    def remove_expired_producers(self) -> int:
        """``producer.id.expiration.check.interval.ms``: forget idle producers everywhere."""
        return sum(len(log.remove_expired_producers()) for log in self._logs.values())

    def schedule_deletion(self, segments: list[LogSegment], delay_ms: int) -> None:
        """Queue segments taken out of a log (e.g. by ``Log.truncate_to``) for a later file deletion job."""
        if segments:
            self._pending.append((self.clock() + delay_ms, FileDeletionJob(segments=segments)))
