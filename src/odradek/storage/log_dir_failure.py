"""Which log dirs have failed (Kafka's LogDirFailureChannel): an I/O error in a log dir takes the whole
dir offline, once, and its owner is told so that it takes the dir's partitions offline.

Kafka treats any IOException on a log dir's files (an append, a roll, a flush, a checkpoint, a read) as
the disk failing: retrying may report success for data the first attempt never wrote (a failed fsync
drops the dirty pages). The dir stays offline until the broker restarts; the broker halts once none is
left. ``mark_offline`` may be called from a worker thread (a flush or a checkpoint job): it only records
the dir and calls ``on_offline``, which must be safe there (the broker wakes its loop with it).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Protocol

from odradek.storage.errors import LogStorageError

_log = logging.getLogger(__name__)


class LogDirFailures(Protocol):
    """Where logs and jobs report an I/O error in a log dir."""

    def mark_offline(self, log_dir: Path, error: BaseException) -> LogStorageError:
        """The dir failed: offline from now on; returns the exception to raise."""
        ...


class LogDirFailureChannel:
    def __init__(self, log_dirs: Sequence[Path], on_offline: Callable[[Path], None] | None = None) -> None:
        self._log_dirs = list(log_dirs)
        self._on_offline = on_offline
        self._lock = threading.Lock()
        #: Every offline dir, in the order they failed.
        self._offline: list[Path] = []

    @property
    def offline_log_dirs(self) -> list[Path]:
        with self._lock:
            return list(self._offline)

    @property
    def any_offline(self) -> bool:
        """Whether any dir has failed: read without the lock (a dir never comes back, and a failure
        marked meanwhile races the same with it), so that an append asks `is_offline` only then."""
        return bool(self._offline)

    def is_offline(self, log_dir: Path) -> bool:
        with self._lock:
            return log_dir in self._offline

    def mark_offline(self, log_dir: Path, error: BaseException) -> LogStorageError:
        """Record that ``log_dir`` failed with ``error`` (told once); returns the exception to raise
        to whoever was using it (KAFKA_STORAGE_ERROR at the protocol edge)."""
        with self._lock:
            first = log_dir not in self._offline
            if first:
                self._offline.append(log_dir)
        if first:
            _log.error("log dir %s failed and is offline until the broker restarts: %s", log_dir, error)
            if self._on_offline is not None:
                self._on_offline(log_dir)
        failure = LogStorageError(f"log dir {log_dir} is offline: {error}")
        failure.__cause__ = error
        return failure


def is_disk_error(error: OSError) -> bool:
    """Whether a read of a segment file failing with ``error`` is its disk failing: not a descriptor
    already closed under the reader (a segment retention removed: a race, not a dir to take offline)."""
    return error.errno != errno.EBADF


class _Closeable(Protocol):
    def close(self) -> None: ...


def close_quietly(segments: Iterable[_Closeable]) -> None:
    """Close the files of a log whose dir failed (or may have): an error there is the disk's, and the
    descriptors go all the same."""
    for segment in segments:
        with contextlib.suppress(OSError):
            segment.close()
