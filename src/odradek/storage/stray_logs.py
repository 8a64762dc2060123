"""Stray logs (KIP-516): partition directories that are not the partition they are named after.

Kafka reads the topic id in ``partition.metadata`` and, in KRaft mode, renames a log the metadata does
not know (or knows under another topic id) ``<topic>-<partition>.<uuid>-stray``: never served, never
removed, kept for the operator. Who judges at start-up is a ``StrayLogRule`` the log manager is given by
whoever knows the broker's mode (``server/log_dirs.py``): a single node knows every topic from its topic
store, as a KRaft broker does from its metadata image (``JudgedByTopicStore``), so its start-up sets such
directories aside here, before opening them. A cluster member learns its topics from the controller
(``JudgedByLeaderAndIsr``): ``LogManager.prepare_partitions`` sets aside a loaded log of another topic id
when a LeaderAndIsr asks for the partition.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from odradek.storage.checkpoints import CheckpointFormatError, read_partition_metadata, unreadable_checkpoint
from odradek.storage.errors import LogDirReadError, LogStorageError
from odradek.storage.files import TOPICS_FILE, fsync_dir
from odradek.storage.partition import (
    TopicPartition,
    is_delete_dir_name,
    is_stray_dir_name,
    stray_dir_name,
    topic_id_to_string,
)
from odradek.storage.topic_store import TopicRecord

_log = logging.getLogger(__name__)


class StrayLogRule(Protocol):
    """Which partition directories found at start-up are not the partitions they are named after."""

    def check_log_dirs(self, log_dirs: list[Path]) -> None:
        """Before any log is loaded: raise LogStorageError if the live ``log_dirs`` cannot be judged."""

    def stray_reason(
        self, directory: Path, tp: TopicPartition, topics: Mapping[str, TopicRecord]
    ) -> str | None:
        """Why ``directory`` is not partition ``tp`` of a topic known, or None (it is, or is judged later)."""

    def is_gone(self, topic: str, topics: Mapping[str, TopicRecord]) -> bool:
        """Whether ``topic`` is known to be gone (a replica's move into another log dir is then removed)."""


class JudgedByTopicStore:
    """A single node's rule: its topic store (``topics``) knows every topic, and must be found."""

    def check_log_dirs(self, log_dirs: list[Path]) -> None:
        check_topic_store(log_dirs)

    def stray_reason(
        self, directory: Path, tp: TopicPartition, topics: Mapping[str, TopicRecord]
    ) -> str | None:
        return stray_reason(directory, tp, topics.get(tp.topic))

    def is_gone(self, topic: str, topics: Mapping[str, TopicRecord]) -> bool:
        return topic not in topics


class JudgedByLeaderAndIsr:
    """A cluster member's rule: nothing is judged at start-up; the controller's LeaderAndIsr names the
    topic ids later (``LogManager.prepare_partitions``)."""

    def check_log_dirs(self, log_dirs: list[Path]) -> None:
        return None

    def stray_reason(
        self, directory: Path, tp: TopicPartition, topics: Mapping[str, TopicRecord]
    ) -> str | None:
        return None

    def is_gone(self, topic: str, topics: Mapping[str, TopicRecord]) -> bool:
        return False


def stray_reason(directory: Path, tp: TopicPartition, record: TopicRecord | None) -> str | None:
    """Why a single node's partition directory is not the partition of a topic it knows, or None."""
    if record is None:
        return f"no topic {tp.topic!r} is known to this broker"
    if tp.partition >= record.partitions:
        return f"topic {tp.topic!r} has {record.partitions} partitions"
    try:
        topic_id = read_partition_metadata(directory)
    except CheckpointFormatError as error:
        raise LogDirReadError(unreadable_checkpoint(error)) from error
    if topic_id is not None and topic_id != record.topic_id:
        return (
            f"it holds topic id {topic_id_to_string(topic_id)}, not the topic's "
            f"{topic_id_to_string(record.topic_id)} (a topic deleted and made again under its name)"
        )
    return None


def set_aside(directory: Path, tp: TopicPartition, reason: str) -> Path:
    """Rename a partition directory not yet opened to its ``-stray`` name, durably; returns the name."""
    target = directory.parent / stray_dir_name(tp)
    os.rename(directory, target)
    fsync_dir(directory.parent)
    _log.warning("partition directory %s set aside as %s: %s", directory, target.name, reason)
    return target


def check_topic_store(log_dirs: list[Path]) -> None:
    """The topics file, which judges every partition directory of a single node, is there and in the
    first log dir. Found in another, log.dirs changed order; found nowhere while a log dir holds a
    partition directory, the first log dir is not what it was (a disk not mounted: its mount point
    left empty) or the file was lost. Either way a single node that knew no topic would set every
    partition aside, so the start stops. A first start has no partition directory yet, and the first
    topic made writes the file before its directories."""
    if (log_dirs[0] / TOPICS_FILE).exists():
        return
    for log_dir in log_dirs[1:]:
        if (log_dir / TOPICS_FILE).exists():
            raise LogStorageError(
                f"{log_dir / TOPICS_FILE} is not in the first of log.dirs ({log_dirs[0]}): the log dirs "
                "were given in another order; give them in the order they had"
            )
    partition = _first_partition_directory(log_dirs)
    if partition is not None:
        raise LogStorageError(
            f"{log_dirs[0] / TOPICS_FILE} is missing, yet {partition} holds a partition: is "
            f"{log_dirs[0]}, the first of log.dirs, mounted? Restore the file, or move the partition "
            "directories out of the log dirs to start without them"
        )


def _first_partition_directory(log_dirs: list[Path]) -> Path | None:
    for log_dir in log_dirs:
        if not log_dir.is_dir():
            continue
        for child in sorted(log_dir.iterdir()):
            name = child.name
            if is_delete_dir_name(name) or is_stray_dir_name(name) or not child.is_dir():
                continue
            if TopicPartition.from_dir_name(name) is not None:
                return child
    return None
