"""Start-up of every log dir, as Kafka's LogManager.loadLogs: each dir loaded (``log_dir_loading.py``),
a dir that fails to load taken offline (but the first, which holds odradek's own metadata), a partition
found in two dirs refused, and the replica moves a stop interrupted either resumed, finished (a crash
during the swap) or stopped (a log dir is offline); a future log of another topic id than its
current log's is set aside (``-stray``)."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from odradek.storage.errors import LogDirReadError, LogStorageError
from odradek.storage.log import Log
from odradek.storage.log_dir_failure import LogDirFailureChannel, close_quietly
from odradek.storage.log_dir_loading import LogDirOffsets, OpenLog, load_log_dir
from odradek.storage.partition import TopicPartition
from odradek.storage.stray_logs import StrayLogRule, set_aside
from odradek.storage.topic_store import TopicRecord

_log = logging.getLogger(__name__)


@dataclass
class LoadedLogs:
    """What the log dirs held at start-up."""

    logs: dict[TopicPartition, Log] = field(default_factory=dict)
    #: Partitions whose move was stopped because a log dir is offline: offline until a start with all.
    offline: set[TopicPartition] = field(default_factory=set)
    #: A directory was removed or set aside: the offset checkpoints name partitions that are gone.
    removed: bool = False


def load_logs(
    log_dirs: list[Path],
    failures: LogDirFailureChannel,
    open_log: OpenLog,
    deleting: Mapping[str, uuid.UUID],
    topics: Mapping[str, TopicRecord],
    strays: StrayLogRule,
    futures: dict[TopicPartition, Log],
) -> LoadedLogs:
    """Load every log dir not offline; a dir failing to load goes offline through ``failures``. The
    future logs found (replicas moving between dirs) are left in ``futures``."""
    loaded = LoadedLogs()
    for log_dir in log_dirs:
        if failures.is_offline(log_dir):  # failed at start (LogDirLocks): not loaded
            continue
        opened: list[Log] = []
        try:
            logs, removed_here = load_log_dir(
                log_dir, _remembering(open_log, opened), deleting, topics, strays, futures
            )
        except (OSError, LogDirReadError) as error:
            if log_dir == log_dirs[0]:
                raise  # odradek's own metadata lives there: no start without it (docs/operations.md)
            # Kafka's loadLogs: an I/O error loading a dir (a segment or index unreadable while
            # recovering, a checkpoint or partition.metadata that does not parse: an IOException in
            # Kafka's readers) takes it offline; the broker starts with the others, halting if none
            # is left
            failures.mark_offline(log_dir, error)
            for log in opened:
                if futures.get(log.topic_partition) is log:
                    del futures[log.topic_partition]
                close_quietly(log.segments)
            continue
        for tp, log in logs.items():
            if (previous := loaded.logs.get(tp)) is not None:
                # As Kafka's LogManager.loadLog: which one holds the records to serve is not ours
                # to guess (a log dir not mounted while the partition was made again in another?).
                raise LogStorageError(
                    f"partition {tp.topic}-{tp.partition} has a directory in two log dirs, "
                    f"{previous.dir} and {log.dir}: move the one not to serve out of the log dirs"
                )
            loaded.logs[tp] = log
        loaded.removed = loaded.removed or removed_here
    _settle_futures(loaded, futures, failures)
    return loaded


def _settle_futures(
    loaded: LoadedLogs, futures: dict[TopicPartition, Log], failures: LogDirFailureChannel
) -> None:
    for tp, future in list(futures.items()):
        current = loaded.logs.get(tp)
        if current is not None and _other_topic_ids(current, future):
            # no copy of this log: a gone topic's move, its -delete rename lost (a power loss); kept
            del futures[tp]
            close_quietly(future.segments)
            set_aside(
                future.dir, tp, f"a move of topic id {future.topic_id}, not of the log's {current.topic_id}"
            )
            loaded.removed = True
        elif tp not in loaded.logs and failures.offline_log_dirs:
            # its current log may be in the failed dir, and the copy not caught up: neither made
            # the log nor copied; offline (as Kafka, whose start never promotes a future log), its
            # files kept for a start with every dir back
            del futures[tp]
            loaded.offline.add(tp)
            for segment in future.segments:
                segment.close()
            _log.warning("%s: offline, its move to %s stopped: a log dir is offline", tp, future.dir)
        elif tp not in loaded.logs:
            # a crash in the middle of a swap (the future log had caught up): it is the log now
            del futures[tp]
            future.rename_dir(future.dir.parent / tp.dir_name)
            loaded.logs[tp] = future
            _log.info(
                "%s: the move to %s is finished (a start after a crash during the swap)", tp, future.dir
            )


def _other_topic_ids(current: Log, future: Log) -> bool:
    """Whether the two logs name different topic ids (both known): the future one is no copy."""
    ids = (current.topic_id, future.topic_id)
    return None not in ids and ids[0] != ids[1]


def _remembering(open_log: OpenLog, opened: list[Log]) -> OpenLog:
    """``open_log``, remembering the logs opened (closed again if their dir fails to load)."""

    def opening(directory: Path, tp: TopicPartition, offsets: LogDirOffsets) -> Log:
        log = open_log(directory, tp, offsets)
        opened.append(log)
        return log

    return opening
