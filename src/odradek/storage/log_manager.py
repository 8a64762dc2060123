"""LogManager: every partition log under ``log.dirs``, their checkpoints, and the periodic work.

Its parts: loading the log dirs at start-up (``log_loading.py``, one dir in ``log_dir_loading.py``,
which directories are stray by ``strays``: ``stray_logs.py``), new partitions' placement and creation
(``partition_creation.py``), ``deletions`` (``partition_deletion.py``), ``moves`` between log dirs
(``log_moves.py``), ``cleaner`` (``cleaner_manager.py``), and ``flushes``, the flushes and offset
checkpoints that rolls, truncations and the periodic jobs make due (``flush_scheduler.py``).

The broker's event loop owns the manager. Methods named ``take_*``/``prepare_*``/``*_plans`` run on the
loop and return jobs whose ``run()`` (or ``run_cleaning``) does the slow file work in a worker thread;
``complete_*`` hands results back on the loop. ``startup`` and ``shutdown`` are file work through and
through: run them in a thread before serving / after the loop stopped serving. See README.md.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType

from odradek.storage.checkpoint_jobs import CheckpointWriteError
from odradek.storage.checkpoints import MetaProperties
from odradek.storage.cleaner_manager import CleanerManager
from odradek.storage.config import ConfigValue, LogConfig
from odradek.storage.errors import LogStorageError
from odradek.storage.files import CLEAN_SHUTDOWN_MARKER, Clock, atomic_write, system_clock
from odradek.storage.flush_scheduler import FlushScheduler
from odradek.storage.log import Log
from odradek.storage.log_dir_failure import LogDirFailureChannel, close_quietly
from odradek.storage.log_dir_loading import LogDirOffsets
from odradek.storage.log_loading import load_logs
from odradek.storage.log_moves import ReplicaMoves
from odradek.storage.node_id import ensure_meta_properties
from odradek.storage.partition import TopicPartition
from odradek.storage.partition_creation import PartitionCreationJob, place_partitions
from odradek.storage.partition_deletion import PartitionDeletions
from odradek.storage.stray_logs import JudgedByTopicStore, StrayLogRule
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
        strays: StrayLogRule | None = None,
        on_work_due: Callable[[], None] | None = None,
        on_log_dir_failure: Callable[[Path], None] | None = None,
    ) -> None:
        """``on_work_due``: called on the loop when a log rolled a segment or was truncated, so that
        whoever runs the manager's jobs takes ``flushes.take_roll_flushes`` and
        ``flushes.take_due_checkpoint`` soon (the broker wakes a task of its own).
        ``on_log_dir_failure``: called once per log dir that failed (an I/O error in it), maybe from a
        worker thread; whoever runs the manager then calls ``handle_log_dir_failure`` on the loop.
        ``strays``: which partition directories found at start-up are set aside (stray_logs.py); by
        default the topic store's judgement (a single node's)."""
        if not log_dirs:
            raise ValueError("at least one log dir is needed")
        self.log_dirs = [Path(d) for d in log_dirs]
        self.default_config = default_config or LogConfig()
        self.clock = clock
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self.strays: StrayLogRule = strays or JudgedByTopicStore()
        self.topic_store = TopicStore(self.log_dirs[0])
        self._logs: dict[TopicPartition, Log] = {}
        #: The log dirs that have failed (Kafka's LogDirFailureChannel), told by the logs themselves.
        self.failures = LogDirFailureChannel(self.log_dirs, on_log_dir_failure)
        #: The log dirs not handled as failed yet: where partitions go, what is checkpointed.
        self._live_dirs = list(self.log_dirs)
        #: The partitions whose log dir failed: offline until the broker restarts, never made again.
        self._offline_partitions: set[TopicPartition] = set()
        #: Replicas moving to another log dir: their future logs (log_moves.py).
        self.moves = ReplicaMoves(self._logs, self._open_new_log, self.failures)
        #: The flushes and offset checkpoints due (rolls and truncations tell it, as the logs' events).
        self.flushes = FlushScheduler(
            self._live_dirs, MappingProxyType(self._logs), on_work_due, self.failures
        )
        #: Partitions and topics leaving, and the files they leave (partition_deletion.py).
        self.deletions = PartitionDeletions(
            self._logs,
            self._offline_partitions,
            self.moves,
            self.topic_store,
            lambda: self.flushes.prepare_checkpoint().run,
            self.failures,
            clock,
        )
        #: Which logs are compacted, and what becomes of a cleaning (cleaner_manager.py).
        self.cleaner = CleanerManager(
            MappingProxyType(self._logs),
            MappingProxyType(self.moves.future),
            self.failures,
            self.deletions.schedule_deletion,
        )

    # -- startup and shutdown (file work: run in a thread) ---------------------------------------

    def startup(self) -> None:
        """Create the log dirs, load (and after a crash recover) every partition log, finish pending
        partition deletions. Topic config overrides from the topic store apply to the loaded logs."""
        self.strays.check_log_dirs([d for d in self.log_dirs if not self.failures.is_offline(d)])
        topics = self.topic_store.load_topics()
        deleting = self.topic_store.deleting()
        loaded = load_logs(
            self.log_dirs,
            self.failures,
            functools.partial(self._open_loaded_log, topics=topics),
            deleting,
            topics,
            self.strays,
            self.moves.future,
        )
        self._live_dirs[:] = [d for d in self._live_dirs if not self.failures.is_offline(d)]
        self._logs.update(loaded.logs)
        self._offline_partitions.update(loaded.offline)
        if loaded.removed:
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
            auto_high_watermark=False,  # a follower's rule until its leadership says (partition/)
            events=self.flushes,
            failures=self.failures,
        )
        log.cleaner_checkpoint = offsets.cleaner_offsets.get(tp)
        return log

    def shutdown(self) -> None:
        """Clean shutdown: fsync every log, snapshot producer state, write checkpoints and the clean
        shutdown marker, so the next start skips recovery."""
        for log in [*self._logs.values(), *self.moves.future.values()]:
            try:
                log.flush()
                log.close()
            except (OSError, LogStorageError) as error:
                # As Kafka's shutdown, a dir apart: its logs recover at the next start (no marker),
                # the other dirs' logs still close cleanly.
                if isinstance(error, OSError):
                    self.failures.mark_offline(log.dir.parent, error)
                close_quietly(log.segments)
        for failed in self.failures.offline_log_dirs:
            if failed in self._live_dirs:  # the checkpoints and markers below skip it
                self._live_dirs.remove(failed)
        with contextlib.suppress(CheckpointWriteError):  # a dir failing there takes itself offline
            self.flushes.prepare_checkpoint().run()
        # A topic deletion whose renames failed is left to the next start, which finishes it from its
        # mark (a retention check may still be running it in a worker thread).
        self.deletions.run_all()
        for log_dir in self._live_dirs:  # a failed dir's logs recover at the next start, as Kafka's
            if self.failures.is_offline(log_dir):
                continue
            try:
                atomic_write(log_dir / CLEAN_SHUTDOWN_MARKER, b"")
            except OSError as error:
                self.failures.mark_offline(log_dir, error)

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
        """Plan empty logs for those of ``partitions`` the topic does not have yet (placed as
        ``place_partitions`` says: a log of another ``topic_id`` leaves the manager now and the job
        sets it aside, one without an id takes it); with ``record``, the job stores it first (its
        configs are validated here). Run the job's ``run`` in a worker thread, then
        ``complete_partitions`` on the loop. One job per topic at a time."""
        if record is not None:
            config = LogConfig.from_mapping(record.configs, base=self.default_config)  # validates
        elif config is None:
            config = self.config_for(topic)
        placement = place_partitions(
            topic,
            partitions,
            topic_id,
            self._logs,
            self._live_dirs,
            self._offline_partitions,
            self.moves.preferred,
        )
        self.deletions.abandon_moves([log.topic_partition for log in placement.strays])  # copies of them
        return PartitionCreationJob(
            topic,
            topic_id,
            placement.directories,
            config,
            self._open_new_log,
            self.topic_store,
            record,
            previous=self.topic_store.load_topics().get(topic) if record is not None else None,
            strays=placement.strays,
            # captured once the strays are out: the files must not name their offsets again
            checkpoint=self.flushes.prepare_checkpoint().run if placement.strays else None,
            adopted=placement.adopted,
            failures=self.failures,
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
            auto_high_watermark=False,  # a follower's rule until its leadership says (partition/)
            events=self.flushes,
            failures=self.failures,
        )

    @property
    def future_logs(self) -> Mapping[TopicPartition, Log]:
        """The replicas moving to another log dir (KIP-113: ``moves``, log_moves.py)."""
        return dict(self.moves.future)

    # -- failed log dirs (Kafka's LogManager.handleLogDirFailure) --------------------------------

    @property
    def live_log_dirs(self) -> list[Path]:
        """The log dirs not taken offline."""
        return list(self._live_dirs)

    @property
    def offline_log_dirs(self) -> list[Path]:
        """The log dirs that failed (including one not handled yet by ``handle_log_dir_failure``)."""
        return self.failures.offline_log_dirs

    def is_offline(self, topic: str, partition: int) -> bool:
        """Whether the partition's log dir failed: it is not served here until the broker restarts."""
        return TopicPartition(topic, partition) in self._offline_partitions

    def mark_missing_offline(self, topic: str, partitions: Iterable[int]) -> list[int]:
        """A single node's partitions without a log while a log dir is offline: they may be in it, so
        they are offline rather than made again empty (Kafka's getOrCreateLog refuses a log not new
        while a dir is offline). Returns them."""
        if not self.failures.offline_log_dirs:
            return []
        missing = [p for p in partitions if TopicPartition(topic, p) not in self._logs]
        self._offline_partitions.update(TopicPartition(topic, p) for p in missing)
        return missing

    def log_dir_failed(self, log_dir: Path, error: BaseException) -> None:
        """Report an I/O error in ``log_dir`` met outside a log's own methods (a flush or checkpoint
        job in a worker thread, whose failure comes back to the loop): the dir goes offline."""
        self.failures.mark_offline(log_dir, error)

    def handle_log_dir_failure(self, log_dir: Path) -> list[TopicPartition]:
        """On the loop, after ``on_log_dir_failure``: the dir's logs leave the manager (their files are
        closed; nothing more is written there) and stay offline until restart; returns them. The
        caller stops serving them (and in a cluster tells the controller)."""
        if log_dir in self._live_dirs:
            self._live_dirs.remove(log_dir)
        gone = sorted(
            (tp for tp, log in self._logs.items() if log.dir.parent == log_dir),
            key=lambda tp: (tp.topic, tp.partition),
        )
        for tp, future in list(self.moves.future.items()):
            if future.dir.parent == log_dir or tp in gone:  # as Kafka: the move stops, the future goes
                del self.moves.future[tp]
                close_quietly(future.segments)
        for tp in gone:
            log = self._logs.pop(tp)
            self._offline_partitions.add(tp)
            close_quietly(log.segments)
        return gone

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

    def ensure_meta_properties(self, broker_id: int, cluster_id: str | None = None) -> MetaProperties:
        """``meta.properties`` of every live log dir, written or checked (see node_id.py)."""
        live = [d for d in self.log_dirs if not self.failures.is_offline(d)]
        return ensure_meta_properties(live, broker_id, cluster_id)

    # -- periodic work ---------------------------------------------------------------------------

    def cleanup_logs(self) -> int:
        """Retention for every log (``log.retention.check.interval.ms``), on the loop: moves log start
        offsets and renames removed segments; their files are removed by
        ``deletions.take_file_deletions`` jobs once ``file.delete.delay.ms`` has passed. Returns how
        many segments were removed."""
        removed = 0
        for log in self._logs.values():
            try:
                segments = log.delete_old_segments()
            except (OSError, LogStorageError) as error:  # one dir's failure must not stop the others
                _log.warning("retention of %s failed: %s", log.topic_partition, error)
                if isinstance(error, OSError):
                    self.log_dir_failed(log.dir.parent, error)
                continue
            if segments:
                self.deletions.schedule_deletion(segments, log.config.file_delete_delay_ms)
                removed += len(segments)
        return removed

    def set_producer_id_expiration_ms(self, expiration_ms: int) -> None:
        """producer.id.expiration.ms changed at run time: every log, and the ones made from now on."""
        self.producer_id_expiration_ms = expiration_ms
        for log in self._logs.values():
            log.producer_state.producer_id_expiration_ms = expiration_ms

    def remove_expired_producers(self) -> int:
        """``producer.id.expiration.check.interval.ms``: forget idle producers everywhere."""
        return sum(len(log.remove_expired_producers()) for log in self._logs.values())
