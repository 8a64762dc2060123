"""Deleting partitions and segments, crash-safe at every step, as Kafka does.

A topic deletion, step by step (``LogManager`` plans each step on the loop; the file work runs in a
worker thread):

1. ``TopicStore.mark_deleted``: the topic's record moves to the deletions under way, durably. Nothing
   else has changed yet: if this fails, the topic is still whole (the request gets
   KAFKA_STORAGE_ERROR). From here on the deletion is committed and always finishes.
2. On the loop, the logs leave the ``LogManager`` (no append, retention, flush or compaction reaches
   them) and the topic leaves the metadata cache.
3. ``TopicDeletionJob.run``: each partition directory is renamed ``<topic>-<partition>.<uuid>-delete``
   (``Log.rename_dir``: the open files keep serving in-flight reads, later closes use the new paths),
   the log dirs are fsynced, the offset checkpoints are rewritten without the partitions (so a topic
   created again under the name never inherits their offsets), and the mark is removed.
4. After ``file.delete.delay.ms``, a ``FileDeletionJob`` closes the segments and removes the renamed
   directories.

A crash after 1 leaves a mark: ``LogManager.startup`` renames and removes the topic's remaining
partition directories, then the mark. A crash after 3 leaves ``-delete`` directories, which startup
removes.

A file operation failing in 3 or 4 (a rename, a directory's fsync, a checkpoint, a segment's unlink, a
directory's removal) is its log dir failing: as Kafka's renameDir, delete and deleteSegmentFiles (under
maybeHandleIOException), the dir goes offline and nothing more is tried there; the job goes on in the
other dirs. The topic's mark then stays until the next start, which finishes the deletion in that dir
if it is back; until then the name cannot be reused (CreateTopics answers TOPIC_ALREADY_EXISTS, "marked
for deletion", as Kafka's controller does while a replica's deletion is ineligible). Only the mark's own
removal (the topic store) is retried, by every retention check. Without a failure channel (shutdown's
leftovers) a failed operation is logged and left to the next start.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from odradek.storage.checkpoint_jobs import CheckpointWriteError
from odradek.storage.files import fsync_dir
from odradek.storage.log import Log
from odradek.storage.log_dir_failure import LogDirFailures
from odradek.storage.partition import delete_dir_name
from odradek.storage.segment import LogSegment
from odradek.storage.topic_store import TopicStore

_log = logging.getLogger(__name__)


@dataclass(slots=True)
class FileDeletionJob:
    """Segments (already renamed ``.deleted``) and partition dirs (renamed ``-delete``) to remove."""

    segments: list[LogSegment] = field(default_factory=list)
    directories: list[Path] = field(default_factory=list)
    closing: list[LogSegment] = field(default_factory=list)
    #: Where a failed unlink or removal is reported (its log dir goes offline); None: only logged.
    failures: LogDirFailures | None = None

    def run(self) -> None:
        for segment in self.segments:
            error = _attempt(segment.delete_files, "delete segment files", segment.log_path)
            if error is not None and self.failures is not None:
                self.failures.mark_offline(segment.log_path.parent.parent, error)
        for segment in self.closing:
            _attempt(segment.close, "close segment", segment.log_path)
        for directory in self.directories:
            error = _attempt(partial(_remove_tree, directory), "remove", directory)
            if error is not None and self.failures is not None:
                self.failures.mark_offline(directory.parent, error)

    @property
    def empty(self) -> bool:
        return not (self.segments or self.directories or self.closing)

    def extend(self, other: FileDeletionJob) -> None:
        self.segments += other.segments
        self.directories += other.directories
        self.closing += other.closing


@dataclass(slots=True)
class TopicDeletionJob:
    """Step 3 for one topic: rename its partition directories ``-delete``, then drop the mark.

    ``run`` may be called again after a failure; it renames what is left.
    """

    topic: str
    #: Logs already out of the LogManager whose directory is not renamed yet.
    logs: list[Log]
    store: TopicStore
    #: Rewrites the offset checkpoints without this topic (captured on the loop).
    checkpoint: Callable[[], None]
    #: Where a log dir that fails under the job is reported: it goes offline.
    failures: LogDirFailures
    #: Filled by ``run``: logs whose directory now has its ``-delete`` name.
    renamed: list[Log] = field(default_factory=list)
    #: Log dirs holding renames not fsynced yet.
    unsynced_dirs: set[Path] = field(default_factory=set)
    #: Filled by ``run``: logs of a dir that failed (offline), renamed or not: left for the next start.
    abandoned: list[Log] = field(default_factory=list)
    finished: bool = False

    def run(self) -> None:
        """The file work, in a worker thread. Never raises for a file operation: one that failed
        takes its log dir offline (its logs go to ``abandoned``, the mark stays); only the mark's
        removal is left for the next ``run`` when it fails."""
        failed_dirs: set[Path] = set()
        for log in list(self.logs):
            if log.dir.parent in failed_dirs:
                continue  # given up with its dir
            target = log.dir.parent / delete_dir_name(log.topic_partition)
            error = _attempt(partial(log.rename_dir, target), "rename", log.dir)
            if error is None:
                self.logs.remove(log)
                self.renamed.append(log)
                self.unsynced_dirs.add(target.parent)
            else:
                self._dir_failed(log.dir.parent, error, failed_dirs)
        for log_dir in sorted(self.unsynced_dirs):  # the renames are durable before the mark goes
            error = _attempt(partial(fsync_dir, log_dir), "fsync the renames in", log_dir)
            if error is not None:
                self._dir_failed(log_dir, error, failed_dirs)
            self.unsynced_dirs.discard(log_dir)
        if not failed_dirs:
            try:
                self.checkpoint()
            except CheckpointWriteError as error:  # the job took those dirs offline
                _log.warning("deletion of %s: %s", self.topic, error)
                for log_dir in error.log_dirs:
                    self._dir_failed(log_dir, None, failed_dirs)
        if self.abandoned or failed_dirs:
            # the mark stays: the next start finishes the deletion in the failed dirs if they are back
            self.finished = True
            return
        self.finished = (
            _attempt(lambda: self.store.forget_deleted([self.topic]), "unmark deleted topic", self.topic)
            is None
        )

    def _dir_failed(self, log_dir: Path, error: OSError | None, failed_dirs: set[Path]) -> None:
        """``log_dir`` failed: offline (told once), and the job's logs there are given up."""
        if error is not None:
            self.failures.mark_offline(log_dir, error)
        failed_dirs.add(log_dir)
        for logs in (self.logs, self.renamed):
            for log in [log for log in logs if log.dir.parent == log_dir]:
                logs.remove(log)
                self.abandoned.append(log)

    def take_renamed(self, delay_ms: int, now_ms: int) -> tuple[int, FileDeletionJob] | None:
        """The delayed removal of what ``run`` renamed so far (on the loop, after ``run``)."""
        if not self.renamed:
            return None
        job = FileDeletionJob(
            closing=[segment for log in self.renamed for segment in log.segments],
            directories=[log.dir for log in self.renamed],
        )
        self.renamed = []
        return now_ms + delay_ms, job


def remove_directory(directory: Path) -> bool:
    """``rmtree`` that logs a directory it could not remove (startup tries again) instead of raising."""
    shutil.rmtree(directory, ignore_errors=True)
    if directory.exists():
        _log.warning("deletion: could not remove %s (retried at the next start)", directory)
        return False
    return True


def _remove_tree(directory: Path) -> None:
    """``rmtree`` that raises the first error only once it removed all it could."""
    errors: list[BaseException] = []

    def failed(_function: object, _path: object, raised: tuple[type, BaseException, object]) -> None:
        errors.append(raised[1])

    shutil.rmtree(directory, onerror=failed)  # onexc from Python 3.12
    if errors and directory.exists():
        first = errors[0]
        raise first if isinstance(first, OSError) else OSError(str(first))


def _attempt(operation: Callable[[], object], what: str, subject: object) -> OSError | None:
    """Run one file operation of a deletion; an OSError is logged and returned, not raised."""
    try:
        operation()
    except OSError as error:
        _log.warning("deletion: could not %s %s: %s", what, subject, error)
        return error
    return None
