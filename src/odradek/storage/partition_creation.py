"""PartitionCreationJob: new, empty partition logs made in a worker thread, with few fsyncs.

A new partition is file work: its directory, ``partition.metadata``, an empty segment with its index
files, a producer snapshot and the leader epoch checkpoint, each made durable. Fifty partitions of
``__consumer_offsets`` are a few hundred fsyncs: seconds on a slow disk, which the event loop must not
wait for. ``LogManager.prepare_partitions`` plans a job on the loop (directories, config, the topic
record to store), ``run`` does every file operation in a worker thread, and
``LogManager.complete_partitions`` installs the logs on the loop. Until then nothing outside the job
holds the logs, so no request can read or append to a half-made partition.

What ``run`` writes, in order:

1. The topic record (``__odradek_topics.json``, replaced atomically: file and log dir fsynced), when
   the job carries one. A crash after this leaves a topic whose missing partitions
   ``TopicAdmin.load`` creates at the next start, as before.
2. Per partition: the directory, ``partition.metadata``, the empty segment, the snapshot and the epoch
   checkpoint. Each small file is written to ``.tmp``, fsynced, and renamed; the partition directory is
   fsynced once, after its last rename (``load_log`` ends with it). This used to be one directory fsync
   per file (three more per partition).
3. One fsync of each log dir that got new partition directories, so their names are durable too (they
   never were: a lost directory was only recreated, empty, by ``TopicAdmin.load``).

Why one directory fsync per directory is as safe as one per file: a directory fsync makes every entry
created or renamed in it before the call durable, and each file's contents were fsynced before its
rename, so after step 3 every name points at complete contents, exactly as with per-file fsyncs. Before
step 3 nothing depends on these files being durable: the topic is made visible to clients only after
``run`` returns. A crash in between leaves at worst some missing names or ``.tmp`` files, which
``load_log`` deletes or recreates (an unreadable snapshot or epoch checkpoint is ignored anyway).

If ``run`` fails, the directories it made are removed and the topic record it replaced is restored (or
removed), so a failed creation leaves nothing behind for a later attempt to trip over.

A partition whose log exists already is made only when that log belongs to another topic id (a topic
deleted and made again where this broker did not see it): the log left the manager when the job was
planned, and ``run`` first sets it aside as ``<topic>-<partition>.<uuid>-stray`` (KRaft Kafka's name;
kept for the operator, never served or removed), fsyncs the log dir and rewrites the offset checkpoints
without it, so the new log inherits none of its offsets. A log without a topic id takes the job's
(``partition.metadata`` written), keeping its records, as Kafka's ``UnifiedLog.assignTopicId``.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import uuid
from collections.abc import Callable, Container, Iterable, Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path

from odradek.storage.checkpoints import write_partition_metadata
from odradek.storage.config import LogConfig
from odradek.storage.errors import LogStorageError
from odradek.storage.files import fsync_dir
from odradek.storage.log import Log
from odradek.storage.log_dir_failure import LogDirFailures
from odradek.storage.partition import TopicPartition, stray_dir_name
from odradek.storage.topic_store import TopicRecord, TopicStore

_log = logging.getLogger(__name__)


@dataclass(slots=True)
class PartitionCreationJob:
    """New logs for some partitions of one topic; build it with ``LogManager.prepare_partitions``."""

    topic: str
    topic_id: uuid.UUID | None
    #: Partition -> its new directory (in the log dir chosen for it).
    directories: dict[int, Path]
    config: LogConfig
    open_log: Callable[[Path, LogConfig], Log]
    store: TopicStore
    #: The topic record to store first (a new topic, or a new partition count); None: already stored.
    record: TopicRecord | None = None
    #: The record ``record`` replaces, put back if the job fails.
    previous: TopicRecord | None = None
    #: Logs of these partitions that belong to another topic id, already out of the manager.
    strays: list[Log] = field(default_factory=list)
    #: Rewrites the offset checkpoints without the strays (captured on the loop once they were out).
    checkpoint: Callable[[], None] | None = None
    #: Existing logs without a topic id, to take ``topic_id``.
    adopted: dict[int, Log] = field(default_factory=dict)
    #: Filled by ``run``: partition -> its open log.
    logs: dict[int, Log] = field(default_factory=dict)
    #: Where an I/O error making a partition in a log dir is reported (Kafka's getOrCreateLog).
    failures: LogDirFailures | None = None

    @property
    def has_work(self) -> bool:
        return bool(self.directories or self.adopted)

    def run(self) -> None:
        """Every file operation of the job; call it in a worker thread."""
        made: list[Path] = []
        #: The log dir being written (None: the topic store, odradek's own file in the first dir).
        log_dir: Path | None = None
        try:
            if self.strays:
                self._set_strays_aside()
            if self.record is not None:
                self.store.put_topic(self.record)
            for partition, adopted in self.adopted.items():
                assert self.topic_id is not None
                log_dir = adopted.dir.parent
                write_partition_metadata(adopted.dir, self.topic_id)
                self.logs[partition] = adopted
            for partition, directory in self.directories.items():
                log_dir = directory.parent
                if not directory.exists():
                    directory.mkdir(parents=True)
                    made.append(directory)
                if self.topic_id is not None:
                    write_partition_metadata(directory, self.topic_id, sync_directory=False)
                self.logs[partition] = self.open_log(directory, self.config)  # fsyncs the directory last
            for log_dir in sorted({directory.parent for directory in self.directories.values()}):
                fsync_dir(log_dir)
        except OSError as error:
            self._undo(made)
            if self.failures is None or log_dir is None:
                raise
            # as Kafka's getOrCreateLog: the dir failed, not just this partition; the next would too
            raise self.failures.mark_offline(log_dir, error) from error
        except BaseException:
            self._undo(made)
            raise

    def _set_strays_aside(self) -> None:
        for stray in self.strays:
            target = stray.dir.parent / stray_dir_name(stray.topic_partition)
            source = stray.dir
            stray.rename_dir(target)
            for segment in stray.segments:  # never served: no read in flight to wait for
                with contextlib.suppress(OSError):
                    segment.close()
            _log.warning(
                "log %s of topic id %s set aside as %s: the partition now belongs to topic id %s",
                source,
                stray.topic_id,
                target.name,
                self.topic_id,
            )
        for log_dir in sorted({stray.dir.parent for stray in self.strays}):
            fsync_dir(log_dir)
        if self.checkpoint is not None:
            self.checkpoint()

    def _undo(self, made: list[Path]) -> None:
        for partition, log in self.logs.items():
            if partition in self.adopted:
                continue  # an existing log, still the manager's
            for segment in log.segments:  # not Log.close: no snapshot for a log being thrown away
                with contextlib.suppress(OSError):
                    segment.close()
        self.logs.clear()
        for directory in made:
            shutil.rmtree(directory, ignore_errors=True)
        if self.record is None:
            return
        try:
            if self.previous is not None:
                self.store.put_topic(self.previous)
            else:
                self.store.delete_topic(self.record.name)
        except OSError:
            _log.exception("could not restore the topic record of %s after a failed creation", self.topic)


@dataclass(slots=True)
class Placement:
    """Where the partitions a job makes go: new directories, logs of another topic id set aside, logs
    without an id that take the job's."""

    directories: dict[int, Path] = field(default_factory=dict)
    strays: list[Log] = field(default_factory=list)
    adopted: dict[int, Log] = field(default_factory=dict)


def place_partitions(
    topic: str,
    partitions: Iterable[int],
    topic_id: uuid.UUID | None,
    logs: MutableMapping[TopicPartition, Log],
    live_dirs: list[Path],
    offline: Container[TopicPartition],
    preferred: dict[TopicPartition, Path],
) -> Placement:
    """Each of ``partitions`` the topic does not have yet goes to the live log dir holding the fewest
    partitions, or the one an AlterReplicaLogDirs named (taken from ``preferred``). A log of another
    topic id leaves ``logs`` now (never served again) and the new one takes its directory. Raises
    LogStorageError for an offline partition (its replica is offline until restart, as Kafka: one made
    elsewhere would start empty) or when no log dir is online."""
    counts = _partition_counts(live_dirs, logs)
    placement = Placement()
    for partition in partitions:
        tp = TopicPartition(topic, partition)
        existing = logs.get(tp)
        if existing is not None:
            if existing.matches_topic_id(topic_id):
                continue
            if existing.topic_id is None:
                placement.adopted[partition] = existing
                continue
            placement.strays.append(logs.pop(tp))
            placement.directories[partition] = existing.dir  # the new log takes its place
            continue
        if partition in placement.directories:
            continue
        if tp in offline:
            raise LogStorageError(f"partition {tp.topic}-{tp.partition} is offline: its log dir failed")
        if not counts:
            raise LogStorageError("no log dir is online to create a partition in")
        chosen = preferred.pop(tp, None)
        log_dir = chosen if chosen in counts else min(counts, key=lambda d: counts[d])
        counts[log_dir] += 1
        placement.directories[partition] = log_dir / tp.dir_name
    return placement


def _partition_counts(live_dirs: list[Path], logs: Mapping[TopicPartition, Log]) -> dict[Path, int]:
    """Partitions per live log dir (with one dir, no counting: it gets every partition anyway)."""
    counts = dict.fromkeys(live_dirs, 0)
    if len(counts) > 1:
        for existing in logs.values():
            if existing.dir.parent in counts:
                counts[existing.dir.parent] += 1
    return counts
