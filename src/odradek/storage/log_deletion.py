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
removes. A rename failing in 3 (a disk error) keeps the job, retried by every retention check, and the
name cannot be reused until it finishes (CreateTopics answers TOPIC_ALREADY_EXISTS, "marked for
deletion", as Kafka's controller does).

Every file operation of a deletion job fails alone: it is logged and the rest of the job goes on, so one
bad directory never strands the others (or the periodic job that runs it, or the shutdown).
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from odradek.storage.files import fsync_dir
from odradek.storage.log import Log
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

    def run(self) -> None:
        for segment in self.segments:
            _attempt(segment.delete_files, "delete segment files", segment.log_path)
        for segment in self.closing:
            _attempt(segment.close, "close segment", segment.log_path)
        for directory in self.directories:
            remove_directory(directory)

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
    #: Filled by ``run``: logs whose directory now has its ``-delete`` name.
    renamed: list[Log] = field(default_factory=list)
    #: Log dirs holding renames not fsynced yet (one whose fsync failed is tried again by the next ``run``).
    unsynced_dirs: set[Path] = field(default_factory=set)
    finished: bool = False

    def run(self) -> None:
        """The file work, in a worker thread. Never raises for a file operation: one that failed
        leaves its log in ``logs`` (or its log dir in ``unsynced_dirs``), and the mark in place, for
        the next ``run``."""
        for log in list(self.logs):
            target = log.dir.parent / delete_dir_name(log.topic_partition)
            if _attempt(partial(log.rename_dir, target), "rename", log.dir):
                self.logs.remove(log)
                self.renamed.append(log)
                self.unsynced_dirs.add(target.parent)
        for log_dir in sorted(self.unsynced_dirs):  # the renames are durable before the mark goes
            if _attempt(partial(fsync_dir, log_dir), "fsync the renames in", log_dir):
                self.unsynced_dirs.discard(log_dir)
        if self.logs or self.unsynced_dirs:
            return
        if _attempt(self.checkpoint, "rewrite offset checkpoints after deleting", self.topic):
            self.finished = _attempt(
                lambda: self.store.forget_deleted([self.topic]), "unmark deleted topic", self.topic
            )

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


def _attempt(operation: Callable[[], object], what: str, subject: object) -> bool:
    """Run one file operation of a deletion; an OSError is logged, not raised."""
    try:
        operation()
    except OSError as error:
        _log.warning("deletion: could not %s %s: %s", what, subject, error)
        return False
    return True
