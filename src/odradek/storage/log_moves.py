"""Replicas moving between log dirs (KIP-113, Kafka's future logs and ReplicaAlterLogDirsThread).

AlterReplicaLogDirs makes an empty *future* log, ``<topic>-<partition>.<uuid>-future``, in the target
log dir. ``copy_to_future`` then copies the current log's batches into it, as a follower copies its
leader's (offsets, epochs and producer state as they are), a bounded amount per step, on the loop, so
that produce and fetch go on in between; a truncation of the current log (a follower's, after a leader
change) truncates the future one where their epochs part. Once it has caught up, ``ReplicaMoves.swap``
replaces the current log with it in one step on the loop (nothing appends in between): the current
log's directory is renamed ``-delete`` (removed after file.delete.delay.ms) and the future one takes
the partition's name. A start finds future logs again and the copy resumes; a future log without a
current one is what a crash in the middle of a swap leaves (it had caught up): it becomes the current
one, unless a log dir is offline at start (the current one may be there, the copy behind).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path

from odradek.storage.checkpoints import write_partition_metadata
from odradek.storage.config import LogConfig
from odradek.storage.errors import LogStorageError, OffsetOutOfRangeError
from odradek.storage.fetch import FetchIsolation
from odradek.storage.files import fsync_dir
from odradek.storage.log import Log
from odradek.storage.log_deletion import FileDeletionJob
from odradek.storage.log_dir_failure import LogDirFailureChannel, close_quietly
from odradek.storage.partition import TopicPartition, delete_dir_name, future_dir_name
from odradek.storage.segment import LogSegment

_log = logging.getLogger(__name__)

#: Schedules segments taken out of a log (truncations) for deletion after file.delete.delay.ms.
ScheduleDeletion = Callable[[list[LogSegment], int], None]


@dataclass
class ReplicaMoves:
    """The future logs of a LogManager, and where partitions not created yet are to be made."""

    #: The manager's current logs (a swap replaces one).
    logs: MutableMapping[TopicPartition, Log]
    #: Opens an empty log in a directory (the manager's: its clock, events and failure channel).
    open_log: Callable[[Path, LogConfig], Log]
    failures: LogDirFailureChannel
    future: dict[TopicPartition, Log] = field(default_factory=dict)
    #: Kafka's preferredLogDirs: the dir an AlterReplicaLogDirs named before the replica existed here.
    preferred: dict[TopicPartition, Path] = field(default_factory=dict)

    def target(self, tp: TopicPartition) -> Path | None:
        """The log dir the partition is moving to, if it is."""
        future = self.future.get(tp)
        return None if future is None else future.dir.parent

    def create_future_log(self, topic: str, partition: int, log_dir: Path) -> Log:
        """File work (a worker thread): an empty future log of the partition in ``log_dir``, starting at
        the current log's start; ``install_future_log`` it on the loop."""
        tp = TopicPartition(topic, partition)
        current = self.logs.get(tp)
        if current is None:
            raise LogStorageError(f"{tp} has no log to move")
        if self.failures.offline_log_dirs:
            # as Kafka: no future log while a dir is offline (the partition may have a copy there)
            raise LogStorageError(f"log dirs {self.failures.offline_log_dirs} are offline")
        future = self.open_log(log_dir / future_dir_name(tp), current.config)
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
        abandoned = self.abandon(tp)
        self.future[tp] = future
        if tp not in self.logs:
            return self.abandon(tp)
        return abandoned

    def cancel_move(self, topic: str, partition: int) -> FileDeletionJob | None:
        """The partition stays where it is (AlterReplicaLogDirs back to its current dir)."""
        return self.abandon(TopicPartition(topic, partition))

    def abandon(self, tp: TopicPartition) -> FileDeletionJob | None:
        """Stop moving the partition: its future log goes (a job for a worker thread)."""
        future = self.future.pop(tp, None)
        if future is None:
            return None
        try:
            future.rename_dir(future.dir.parent / delete_dir_name(tp))
        except OSError as error:
            failures = future.failures
            if failures is None:
                raise
            # as Kafka's asyncDelete of a future log (renameDir under maybeHandleIOException): its dir
            # goes offline, the files are left there and nothing more is done with them
            failures.mark_offline(future.dir.parent, error)
            close_quietly(future.segments)
            return None
        return FileDeletionJob(closing=list(future.segments), directories=[future.dir])

    def swap(self, tp: TopicPartition) -> tuple[Log, FileDeletionJob]:
        """Kafka's replaceCurrentWithFutureLog, on the loop once the future log has caught up: it is the
        partition's log from now on. Returns it, and the removal of the old one (due after
        file.delete.delay.ms: in-flight reads of its files end first)."""
        current = self.logs[tp]
        future = self.future[tp]
        assert future.log_end_offset == current.log_end_offset, "swapped before catching up"
        # each rename durable before the next, as Kafka's atomicMoveWithFallback: two dirs named after
        # the partition after a power loss (another disk may keep the second rename, not the first)
        # would stop the next start. A rename or fsync failing is its dir failing (Kafka's renameDir
        # under maybeHandleIOException): offline, raised as LogStorageError; the move then stops.
        try:
            current.rename_dir(current.dir.parent / delete_dir_name(tp))
            fsync_dir(current.dir.parent)
        except OSError as error:
            raise _dir_failed(current, error) from error
        try:
            future.rename_dir(future.dir.parent / tp.dir_name)
            fsync_dir(future.dir.parent)
        except OSError as error:
            failure = _dir_failed(future, error)
            # the copy goes with its dir: the current log takes its name back, so a start without
            # that dir still finds it (with both dirs, a start refuses the partition in two dirs)
            try:
                current.rename_dir(current.dir.parent / tp.dir_name)
                fsync_dir(current.dir.parent)
            except OSError as again:
                raise _dir_failed(current, again) from again
            raise failure from error
        del self.future[tp]
        future.auto_high_watermark = current.auto_high_watermark
        future.update_high_watermark(current.high_watermark)
        self.logs[tp] = future
        _log.info("%s moved from log dir %s to %s", tp, current.dir.parent, future.dir.parent)
        return future, FileDeletionJob(closing=list(current.segments), directories=[current.dir])


def _dir_failed(log: Log, error: OSError) -> LogStorageError:
    """``log``'s dir failed: offline (told once); the exception to raise. Without a failure channel
    (tools, tests) the OSError itself."""
    failures = log.failures
    if failures is None:
        raise error
    return failures.mark_offline(log.dir.parent, error)


def copy_to_future(current: Log, future: Log, max_bytes: int, schedule_deletion: ScheduleDeletion) -> int:
    """One step of the copy, on the loop: how many bytes were copied (0: caught up, or nothing to copy
    until the current log grows)."""
    delay = future.config.file_delete_delay_ms
    epoch = future.latest_epoch
    # (a current log without epochs has none to compare: only its end bounds the copy, below)
    if (
        epoch is not None
        and current.latest_epoch is not None
        and future.log_end_offset > future.log_start_offset
    ):
        # Where the two logs' epochs part (the current one was truncated since), as a follower asks its
        # leader with OffsetForLeaderEpoch (KIP-101).
        _, end = current.end_offset_for_epoch(epoch)
        if end < future.log_end_offset:
            if end < 0:
                schedule_deletion(future.truncate_fully_and_start_at(current.log_start_offset), delay)
            else:
                schedule_deletion(future.truncate_to(end), delay)
    if future.log_end_offset > current.log_end_offset:
        schedule_deletion(future.truncate_to(current.log_end_offset), delay)
    if future.log_end_offset < current.log_start_offset or (
        future.log_end_offset == future.log_start_offset
        and future.log_start_offset != current.log_start_offset
    ):
        # what it has not copied is gone from the current log (retention, DeleteRecords): start there
        schedule_deletion(future.truncate_fully_and_start_at(current.log_start_offset), delay)
    if future.log_end_offset >= current.log_end_offset:
        return 0
    try:
        info = current.read(future.log_end_offset, max_bytes, isolation=FetchIsolation.LOG_END)
    except OffsetOutOfRangeError:
        return 0  # retention moved the log start meanwhile: the next step starts over there
    data = b"".join(region.read() for region in info.regions)
    if data:
        future.append_as_follower(data)
    future.update_high_watermark(min(current.high_watermark, future.log_end_offset))
    if future.log_start_offset < current.log_start_offset <= future.log_end_offset:
        future.increment_log_start_offset(current.log_start_offset)
    return len(data)
