"""LogManager: every partition log under ``log.dirs``, their checkpoints, and the periodic work.

Loading a log dir at start-up is ``log_dir_loading.py``'s; the flushes and offset checkpoints that
rolls, truncations and the periodic jobs make due are ``flushes`` (``flush_scheduler.py``).

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
from odradek.storage.checkpoints import MetaProperties, write_partition_metadata
from odradek.storage.cleaner import CleaningPlan, CleaningResult, install_cleaning, plan_cleaning
from odradek.storage.config import ConfigValue, LogConfig
from odradek.storage.errors import LogDirReadError, LogStorageError
from odradek.storage.files import CLEAN_SHUTDOWN_MARKER, Clock, atomic_write, system_clock
from odradek.storage.flush_scheduler import FlushScheduler
from odradek.storage.log import Log
from odradek.storage.log_deletion import FileDeletionJob, TopicDeletionJob
from odradek.storage.log_dir_failure import LogDirFailureChannel, is_disk_error
from odradek.storage.log_dir_loading import LogDirOffsets, load_log_dir
from odradek.storage.log_moves import ReplicaMoves
from odradek.storage.node_id import ensure_meta_properties
from odradek.storage.partition import TopicPartition, delete_dir_name, future_dir_name
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
        on_log_dir_failure: Callable[[Path], None] | None = None,
    ) -> None:
        """``on_work_due``: called on the loop when a log rolled a segment or was truncated, so that
        whoever runs the manager's jobs takes ``flushes.take_roll_flushes`` and
        ``flushes.take_due_checkpoint`` soon (the broker wakes a task of its own).
        ``on_log_dir_failure``: called once per log dir that failed (an I/O error in it), maybe from a
        worker thread; whoever runs the manager then calls ``handle_log_dir_failure`` on the loop."""
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
        #: The log dirs that have failed (Kafka's LogDirFailureChannel), told by the logs themselves.
        self.failures = LogDirFailureChannel(self.log_dirs, on_log_dir_failure)
        #: The log dirs not handled as failed yet: where partitions go, what is checkpointed.
        self._live_dirs = list(self.log_dirs)
        #: The partitions whose log dir failed: offline until the broker restarts, never made again.
        self._offline_partitions: set[TopicPartition] = set()
        #: Kafka's uncleanable partitions: their cleaning failed other than by an I/O error.
        self._uncleanable: set[TopicPartition] = set()
        #: Replicas moving to another log dir: their future logs (log_moves.py).
        self.moves = ReplicaMoves(self._logs)
        #: The flushes and offset checkpoints due (rolls and truncations tell it, as the logs' events).
        self.flushes = FlushScheduler(
            self._live_dirs, MappingProxyType(self._logs), on_work_due, self.failures
        )

    # -- startup and shutdown (file work: run in a thread) ---------------------------------------

    def startup(self) -> None:
        """Create the log dirs, load (and after a crash recover) every partition log, finish pending
        partition deletions. Topic config overrides from the topic store apply to the loaded logs."""
        if self.single_node:
            check_topic_store([d for d in self.log_dirs if not self.failures.is_offline(d)])
        topics = self.topic_store.load_topics()
        deleting = self.topic_store.deleting()
        removed = False
        open_log = functools.partial(self._open_loaded_log, topics=topics)
        for log_dir in self.log_dirs:
            if self.failures.is_offline(log_dir):  # failed at start (LogDirLocks): not loaded
                if log_dir in self._live_dirs:
                    self._live_dirs.remove(log_dir)
                continue
            opened: list[Log] = []
            try:
                logs, removed_here = load_log_dir(
                    log_dir,
                    functools.partial(_opening, open_log, opened),
                    deleting,
                    topics if self.single_node else None,
                    self.moves.future,
                )
            except (OSError, LogDirReadError) as error:
                if log_dir == self.log_dirs[0]:
                    raise  # odradek's own metadata lives there: no start without it (docs/operations.md)
                # Kafka's loadLogs: an I/O error loading a dir (a segment or index unreadable while
                # recovering, a checkpoint or partition.metadata that does not parse: an IOException in
                # Kafka's readers) takes it offline; the broker starts with the others, halting if none
                # is left
                self.failures.mark_offline(log_dir, error)
                self._live_dirs.remove(log_dir)
                for log in opened:
                    if self.moves.future.get(log.topic_partition) is log:
                        del self.moves.future[log.topic_partition]
                    for segment in log.segments:
                        with contextlib.suppress(OSError):
                            segment.close()
                continue
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
        for tp, future in list(self.moves.future.items()):
            if tp not in self._logs and self.failures.offline_log_dirs:
                # its current log may be in the failed dir, and the copy not caught up: neither made
                # the log nor copied; offline (as Kafka, whose start never promotes a future log), its
                # files kept for a start with every dir back
                del self.moves.future[tp]
                self._offline_partitions.add(tp)
                for segment in future.segments:
                    segment.close()
                _log.warning("%s: offline, its move to %s stopped: a log dir is offline", tp, future.dir)
            elif tp not in self._logs:
                # a crash in the middle of a swap (the future log had caught up): it is the log now
                del self.moves.future[tp]
                future.rename_dir(future.dir.parent / tp.dir_name)
                self._logs[tp] = future
                _log.info(
                    "%s: the move to %s is finished (a start after a crash during the swap)", tp, future.dir
                )
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
                for segment in log.segments:
                    with contextlib.suppress(OSError):
                        segment.close()
        for failed in self.failures.offline_log_dirs:
            if failed in self._live_dirs:  # the checkpoints and markers below skip it
                self._live_dirs.remove(failed)
        with contextlib.suppress(CheckpointWriteError):  # a dir failing there takes itself offline
            self.flushes.prepare_checkpoint().run()
        # A topic deletion whose renames failed is left to the next start, which finishes it from its
        # mark (a retention check may still be running it in a worker thread).
        for _, job in self._pending:
            job.run()  # never raises: a file left over is removed at the next start
        self._pending.clear()
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
            if tp in self._offline_partitions:
                # As Kafka: its replica is offline until restart; one made elsewhere would start empty
                raise LogStorageError(f"partition {tp.topic}-{tp.partition} is offline: its log dir failed")
            if not counts:
                raise LogStorageError("no log dir is online to create a partition in")
            preferred = self.moves.preferred.pop(tp, None)  # named by an AlterReplicaLogDirs
            log_dir = preferred if preferred in counts else min(counts, key=lambda d: counts[d])
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

    def _partition_counts(self) -> dict[Path, int]:
        """Partitions per live log dir (with one dir, no counting: it gets every partition anyway)."""
        counts = dict.fromkeys(self._live_dirs, 0)
        if len(counts) > 1:
            for existing in self._logs.values():
                if existing.dir.parent in counts:
                    counts[existing.dir.parent] += 1
        return counts

    # -- replicas moving between log dirs (KIP-113, log_moves.py) --------------------------------

    @property
    def future_logs(self) -> Mapping[TopicPartition, Log]:
        return dict(self.moves.future)

    def create_future_log(self, topic: str, partition: int, log_dir: Path) -> Log:
        """File work (a worker thread): an empty future log of the partition in ``log_dir``, starting at
        the current log's start; ``install_future_log`` it on the loop."""
        tp = TopicPartition(topic, partition)
        current = self._logs.get(tp)
        if current is None:
            raise LogStorageError(f"{tp} has no log to move")
        if self.failures.offline_log_dirs:
            # as Kafka: no future log while a dir is offline (the partition may have a copy there)
            raise LogStorageError(f"log dirs {self.failures.offline_log_dirs} are offline")
        future = Log.open(
            log_dir / future_dir_name(tp),
            current.config,
            clock=self.clock,
            producer_id_expiration_ms=self.producer_id_expiration_ms,
            auto_high_watermark=False,
            events=self.flushes,
            failures=self.failures,
        )
        if current.topic_id is not None:
            write_partition_metadata(future.dir, current.topic_id)
            future.topic_id = current.topic_id
        future.truncate_fully_and_start_at(current.log_start_offset)
        return future

    def install_future_log(self, future: Log) -> FileDeletionJob | None:
        """On the loop: the copy into ``future`` starts (a move to another dir under way stops, its
        future log goes: the returned job removes it). A future log whose partition went meanwhile is
        removed (the job)."""
        tp = future.topic_partition
        abandoned = self.moves.abandon(tp)
        if tp not in self._logs:
            self.moves.future[tp] = future
            return self.moves.abandon(tp)
        self.moves.future[tp] = future
        return abandoned

    def cancel_move(self, topic: str, partition: int) -> FileDeletionJob | None:
        """The partition stays where it is (AlterReplicaLogDirs back to its current dir)."""
        return self.moves.abandon(TopicPartition(topic, partition))

    def _abandon_moves(self, partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            job = self.moves.abandon(tp)
            if job is not None:
                self._pending.append((self.clock(), job))

    def schedule_file_deletion(self, job: FileDeletionJob, delay_ms: int) -> None:
        """Remove what ``job`` names once ``delay_ms`` has passed (in-flight reads end first)."""
        self._pending.append((self.clock() + delay_ms, job))

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
                for segment in future.segments:
                    with contextlib.suppress(OSError):
                        segment.close()
        for tp in gone:
            log = self._logs.pop(tp)
            self._offline_partitions.add(tp)
            for segment in log.segments:
                with contextlib.suppress(OSError):  # the disk is gone: the descriptors go all the same
                    segment.close()
        return gone

    def delete_log(self, topic: str, partition: int) -> bool:
        """Remove a partition: its dir is renamed ``<topic>-<partition>.<uuid>-delete`` now and removed
        after ``file.delete.delay.ms`` (open files keep serving in-flight reads until then)."""
        tp = TopicPartition(topic, partition)
        self._abandon_moves([tp])
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
        self._abandon_moves([tp for tp in self.moves.future if tp.topic == name])
        logs = [self._logs.pop(tp) for tp in [tp for tp in self._logs if tp.topic == name]]
        job = TopicDeletionJob(
            name, logs, self.topic_store, self.flushes.prepare_checkpoint().run, self.failures
        )
        self._topic_deletions[name] = job
        return job

    def complete_topic_deletion(self, job: TopicDeletionJob) -> None:
        """On the loop after ``job.run``: what it renamed is removed after ``file.delete.delay.ms``, the
        files of what it gave up in a failed dir are closed; an unfinished job stays in
        ``unfinished_topic_deletions`` for the next retention check."""
        _close_abandoned(job)
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
        self._abandon_moves(wanted)
        logs = [self._logs.pop(tp) for tp in wanted if tp in self._logs]
        return TopicDeletionJob(
            topic, logs, self.topic_store, self.flushes.prepare_checkpoint().run, self.failures
        )

    def complete_partition_deletion(self, job: TopicDeletionJob) -> None:
        """On the loop after ``job.run``: what it renamed is removed after ``file.delete.delay.ms``; a
        log whose dir failed under the job is offline with it (the request answers a storage error)."""
        for log in job.logs:  # not renamed, its dir not failed (a job run without one)
            self._logs[log.topic_partition] = log
        job.logs = []
        self._offline_partitions.update(log.topic_partition for log in job.abandoned)
        _close_abandoned(job)
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
        """``meta.properties`` of every live log dir, written or checked (see node_id.py)."""
        live = [d for d in self.log_dirs if not self.failures.is_offline(d)]
        return ensure_meta_properties(live, broker_id, cluster_id)

    # -- periodic work ---------------------------------------------------------------------------

    def cleanup_logs(self) -> int:
        """Retention for every log (``log.retention.check.interval.ms``), on the loop: moves log start
        offsets and renames removed segments; their files are removed by ``take_file_deletions`` jobs
        once ``file.delete.delay.ms`` has passed. Returns how many segments were removed."""
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
                self.schedule_deletion(segments, log.config.file_delete_delay_ms)
                removed += len(segments)
        return removed

    def take_file_deletions(self) -> FileDeletionJob:
        """The deletions now due, as one job for a worker thread."""
        now = self.clock()
        due = FileDeletionJob(failures=self.failures)
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
        ``complete_compaction`` (or ``compaction_failed`` with what it raised)."""
        # Kafka's maintainUncleanablePartitions: a partition no longer here is forgotten
        self._uncleanable &= self._logs.keys()
        plans = []
        for tp, log in list(self._logs.items()):
            # as Kafka's abortAndPauseCleaning: a log being copied is not compacted under the copy
            if tp in self.moves.future or tp in self._uncleanable:
                continue
            try:
                plan = plan_cleaning(log)
            except OSError as error:  # the dir's inode could not be read: the dir failed
                self.failures.mark_offline(log.dir.parent, error)
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
            self.failures.mark_offline(log.dir.parent, error)
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
            raise self.failures.mark_offline(log.dir.parent, error) from error
        self.schedule_deletion(replaced, log.config.file_delete_delay_ms)

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


def _close_abandoned(job: TopicDeletionJob) -> None:
    """The files of the logs a deletion gave up in a failed dir: closed, nothing more done there."""
    for log in job.abandoned:
        for segment in log.segments:
            with contextlib.suppress(OSError):
                segment.close()
    job.abandoned = []


def _opening(
    open_log: Callable[[Path, TopicPartition, LogDirOffsets], Log],
    opened: list[Log],
    directory: Path,
    tp: TopicPartition,
    offsets: LogDirOffsets,
) -> Log:
    """``open_log``, remembering the logs opened (closed again if their dir fails to load)."""
    log = open_log(directory, tp, offsets)
    opened.append(log)
    return log
