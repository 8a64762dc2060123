"""Start-up of one log dir: every directory in it is loaded as a partition log, finished deleting, or
set aside, as Kafka's LogManager.loadLogs does.

A ``-delete`` directory (a deletion under way) is removed; a ``-stray`` one is kept and warned about; a
partition of a topic marked deleted (a deletion a crash interrupted) is renamed ``-delete`` and removed;
on a single node, a partition directory its topic store does not know as it is named is set aside
(``stray_logs.py``); any other directory stops the start. The rest are opened (and after a crash
recovered) with the offsets the log dir's checkpoint files hold.
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from odradek.storage.checkpoints import CheckpointFormatError, read_offset_checkpoint, unreadable_checkpoint
from odradek.storage.errors import LogDirReadError, LogStorageError
from odradek.storage.files import (
    CLEAN_SHUTDOWN_MARKER,
    CLEANER_OFFSET_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    delete_if_exists,
    fsync_dir,
)
from odradek.storage.log import Log
from odradek.storage.log_deletion import remove_directory
from odradek.storage.partition import (
    TopicPartition,
    delete_dir_name,
    future_dir_partition,
    is_delete_dir_name,
    is_stray_dir_name,
)
from odradek.storage.stray_logs import StrayLogRule, set_aside
from odradek.storage.topic_store import TopicRecord

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class LogDirOffsets:
    """What a log dir's offset checkpoint files hold, by partition."""

    recovery_points: dict[TopicPartition, int]
    log_start_offsets: dict[TopicPartition, int]
    high_watermarks: dict[TopicPartition, int]
    cleaner_offsets: dict[TopicPartition, int]
    #: The clean-shutdown marker was there: the logs need no recovery.
    had_clean_shutdown: bool

    @classmethod
    def read(cls, log_dir: Path) -> LogDirOffsets:
        return cls(
            _read_checkpoint(log_dir / RECOVERY_POINT_CHECKPOINT),
            _read_checkpoint(log_dir / LOG_START_OFFSET_CHECKPOINT),
            _read_checkpoint(log_dir / REPLICATION_OFFSET_CHECKPOINT),
            _read_checkpoint(log_dir / CLEANER_OFFSET_CHECKPOINT),
            (log_dir / CLEAN_SHUTDOWN_MARKER).exists(),
        )


#: Opens (and recovers) the log in a partition directory with the offsets of its log dir.
OpenLog = Callable[[Path, TopicPartition, LogDirOffsets], Log]


def load_log_dir(
    log_dir: Path,
    open_log: OpenLog,
    deleting: Mapping[str, uuid.UUID],
    topics: Mapping[str, TopicRecord],
    strays: StrayLogRule,
    futures: dict[TopicPartition, Log] | None = None,
) -> tuple[dict[TopicPartition, Log], bool]:
    """The logs of ``log_dir``, and whether any directory was removed or set aside (the offset
    checkpoints then name partitions that are gone). ``topics``: the topic store's records, which
    ``strays`` judges every partition directory by (or not: a cluster member learns its topics later)."""
    log_dir.mkdir(parents=True, exist_ok=True)
    offsets = LogDirOffsets.read(log_dir)
    logs: dict[TopicPartition, Log] = {}
    removed = False
    for child in sorted(log_dir.iterdir()):
        if not child.is_dir():
            continue
        if is_delete_dir_name(child.name):
            remove_directory(child)
            removed = True
            continue
        if is_stray_dir_name(child.name):
            # As Kafka: kept, never served or removed, for the operator to look at or delete.
            _log.warning("stray partition directory %s: not served; remove it once not needed", child)
            continue
        future_of = future_dir_partition(child.name)
        if future_of is not None and futures is not None:
            if future_of.topic in deleting or strays.is_gone(future_of.topic, topics):
                remove_directory(child)  # a move of a partition that is gone
                continue
            # a replica moving here when the broker stopped: the copy resumes (log_moves.py)
            futures[future_of] = open_log(child, future_of, offsets)
            continue
        tp = TopicPartition.from_dir_name(child.name)
        if tp is None:
            # As Kafka's LogManager.loadLogs: whatever else lives here is not ours to guess about.
            raise LogStorageError(
                f"Found directory {child}, {child.name!r} is not in the form of topic-partition or "
                "topic-partition.uniqueId-delete (if marked for deletion): log directories should "
                "only contain topic data"
            )
        if tp.topic in deleting:
            # A deletion a crash interrupted. Renamed first: a crash while removing leaves a `-delete`
            # dir, never a half-emptied partition that would load as a log.
            renamed = log_dir / delete_dir_name(tp)
            os.rename(child, renamed)
            fsync_dir(log_dir)
            remove_directory(renamed)
            removed = True
            continue
        if reason := strays.stray_reason(child, tp, topics):
            set_aside(child, tp, reason)
            removed = True
            continue
        logs[tp] = open_log(child, tp, offsets)
    # The marker only vouches for the shutdown before this start, and must stay gone: back after a power
    # loss, it would have the next start trust segments written from now on unchecked.
    if offsets.had_clean_shutdown:
        delete_if_exists(log_dir / CLEAN_SHUTDOWN_MARKER)
        fsync_dir(log_dir)
    return logs, removed


def _read_checkpoint(path: Path) -> dict[TopicPartition, int]:
    try:
        return read_offset_checkpoint(path)
    except CheckpointFormatError as e:
        # Kafka takes the log dir offline (CheckpointFileWithFailureHandler): the broker starts with the
        # others, and one with a single log dir stops. Guessing offsets could serve records below the
        # log start, or skip recovery.
        raise LogDirReadError(unreadable_checkpoint(e)) from e
