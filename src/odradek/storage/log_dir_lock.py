"""The ``.lock`` file of each log directory: one broker process per directory, as Kafka's FileLock.

A broker takes an exclusive ``flock`` on ``<log.dir>/.lock`` of every log dir before it reads or writes
anything else there, and holds it until it stops (the kernel releases it if the process dies, so a crash
leaves no stale lock). A second broker on the same directory fails to take it and must stop at once:
before recovery, before meta.properties, and without touching the clean-shutdown marker.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from odradek.storage.checkpoints import CheckpointFormatError, read_meta_properties
from odradek.storage.errors import LogStorageError

LOCK_FILE_NAME: Final = ".lock"


class LogDirLockedError(LogStorageError):
    """Another process holds the ``.lock`` of a log dir."""


class LogDirLocks:
    """The held locks of a broker's log dirs; ``release`` gives them up (at shutdown)."""

    def __init__(self, descriptors: list[int], offline: dict[Path, LogStorageError] | None = None) -> None:
        self._descriptors = descriptors
        #: The log dirs that could not be created, read or locked (a disk error), or whose
        #: meta.properties cannot be read, with why: the broker starts with them offline, as Kafka
        #: 3.9's createAndValidateLogDirs, lockLogDirs and MetaPropertiesEnsemble's error dirs.
        self.offline = dict(offline or {})

    @classmethod
    def acquire(cls, log_dirs: Sequence[Path]) -> LogDirLocks:
        """Create each log dir if missing and lock it; one that fails (not a directory, unreadable, a
        disk error, a meta.properties that cannot be read) is left ``offline`` when the others can be
        used. Refuses (releasing what it took)
        when another process holds one, when none can be used, or when the first cannot: odradek keeps
        its own metadata (topic store, node-local stores) in the first log dir, where Kafka keeps none."""
        canonical = [os.path.realpath(log_dir) for log_dir in log_dirs]
        if len(set(canonical)) != len(canonical):
            # Locking it twice would fail as if another broker held it: name the real mistake.
            raise LogStorageError(f"Duplicate log directory found: {', '.join(str(d) for d in log_dirs)}")
        descriptors: list[int] = []
        offline: dict[Path, LogStorageError] = {}
        try:
            for log_dir in log_dirs:
                try:
                    descriptors.append(_lock(log_dir))
                    _check_meta_properties(log_dir)
                except LogDirLockedError:
                    raise
                except LogStorageError as error:
                    offline[log_dir] = error
            if len(offline) == len(log_dirs):
                raise LogStorageError(
                    "None of the log dirs can be created or validated: "
                    + "; ".join(str(error) for error in offline.values())
                )
            if log_dirs and log_dirs[0] in offline:
                raise LogStorageError(
                    f"{offline[log_dirs[0]]}: the first log dir holds the broker's own metadata and must be "
                    "usable (another may start offline)"
                )
        except BaseException:
            cls(descriptors).release()
            raise
        return cls(descriptors, offline)

    def release(self) -> None:
        descriptors, self._descriptors = self._descriptors, []
        for fd in descriptors:
            os.close(fd)  # closing the descriptor drops its flock


def _lock(log_dir: Path) -> int:
    try:
        log_dir.mkdir(parents=True, exist_ok=True)
        if not os.access(log_dir, os.R_OK | os.W_OK | os.X_OK):
            raise PermissionError(13, "not readable and writable by this process")
        fd = os.open(log_dir / LOCK_FILE_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except FileExistsError:
        raise LogStorageError(f"Log directory {log_dir} is not a directory") from None
    except OSError as error:
        raise LogStorageError(
            f"Failed to create or validate data directory {log_dir}: {error.strerror or error}"
        ) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise LogDirLockedError(
            f"Failed to acquire lock on file {LOCK_FILE_NAME} in {log_dir}: another broker process is "
            "using this directory"
        ) from None
    except OSError as error:
        os.close(fd)
        raise LogStorageError(
            f"Failed to lock {log_dir / LOCK_FILE_NAME}: {error.strerror or error}"
        ) from None
    return fd


def _check_meta_properties(log_dir: Path) -> None:
    """Raise LogStorageError if the dir's meta.properties exists and cannot be read: Kafka's
    MetaPropertiesEnsemble.Loader counts such a dir among its error dirs (offline from the start)."""
    try:
        read_meta_properties(log_dir)
    except CheckpointFormatError as error:
        raise LogStorageError(str(error)) from None
    except OSError as error:
        raise LogStorageError(
            f"Error while reading {log_dir / 'meta.properties'}: {error.strerror or error}"
        ) from None
