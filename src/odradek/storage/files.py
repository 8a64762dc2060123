"""File names of Kafka's on-disk layout, atomic small-file writes, and the injectable clock.

Segment files are named by their base offset, zero-padded to 20 digits, as Kafka names them; the
suffixes below mark a file's role and, for ``.deleted``/``.cleaned``/``.swap``, its place in a
deletion or a compaction swap.
"""

from __future__ import annotations

import contextlib
import errno
import os
import time
from collections.abc import Callable
from pathlib import Path

Clock = Callable[[], int]
"""Milliseconds since the epoch; tests inject their own."""


def system_clock() -> int:
    return time.time_ns() // 1_000_000


LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"
SNAPSHOT_SUFFIX = ".snapshot"
DELETED_SUFFIX = ".deleted"
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
TEMP_SUFFIX = ".tmp"

SEGMENT_SUFFIXES = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)

RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
PARTITION_METADATA = "partition.metadata"
META_PROPERTIES = "meta.properties"
CLEAN_SHUTDOWN_MARKER = ".kafka_cleanshutdown"
TOPICS_FILE = "__odradek_topics.json"
DELETE_DIR_SUFFIX = "-delete"
STRAY_DIR_SUFFIX = "-stray"
FUTURE_DIR_SUFFIX = "-future"


def offset_file_name(offset: int, suffix: str) -> str:
    """``00000000000000000042.log`` for offset 42 and suffix ``.log``."""
    return f"{offset:020d}{suffix}"


def offset_from_file_name(name: str) -> int | None:
    """The base offset a segment or snapshot file is named by, or None for other files."""
    head = name[:20]
    if len(head) == 20 and head.isdigit() and name[20:21] == ".":
        return int(head)
    return None


def with_suffix(path: Path, suffix: str) -> Path:
    """``path`` with ``suffix`` appended to its whole name (``x.log`` -> ``x.log.swap``)."""
    return path.with_name(path.name + suffix)


def without_suffix(path: Path, suffix: str) -> Path:
    assert path.name.endswith(suffix), (path, suffix)
    return path.with_name(path.name[: -len(suffix)])


def atomic_write(
    path: Path, data: bytes, *, fsync: bool = True, sync_directory: bool = True, mode: int = 0o644
) -> None:
    """Replace ``path`` with ``data`` so that a crash leaves either the old or the new file whole.

    Written to ``<path>.tmp``, fsynced, renamed over ``path``, then the directory is fsynced so the rename
    itself survives power loss (as Kafka's checkpoint files are written). ``sync_directory=False`` leaves
    that last fsync to the caller, who writes several files of one directory and fsyncs it once after
    the last rename: a directory fsync persists every entry created or renamed in it before the call.
    ``mode``: the new file's permissions (0o600 for what holds secrets or access rules).
    """
    tmp = with_suffix(path, TEMP_SUFFIX)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        write_all(fd, data, 0)
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    if fsync and sync_directory:
        fsync_dir(path.parent)


def write_all(fd: int, data: bytes | bytearray | memoryview, position: int) -> None:
    """``os.pwrite`` until every byte is written (a short write is legal, if rare, on regular files)."""
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, position)
        view = view[written:]
        position += written


def read_exactly(fd: int, length: int, position: int) -> bytes:
    """``os.pread`` that loops over short reads; returns fewer bytes only at end of file."""
    chunks: list[bytes] = []
    while length > 0:
        chunk = os.pread(fd, length, position)
        if not chunk:
            break
        chunks.append(chunk)
        length -= len(chunk)
        position += len(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


#: What fsync answers on a file system that cannot fsync a directory (fsync(2): "does not support
#: synchronization"; some network and FUSE file systems): nothing there to make durable.
_CANNOT_FSYNC_DIRECTORIES = frozenset({errno.EINVAL, errno.EROFS, errno.ENOTSUP, errno.EOPNOTSUPP})


def fsync_dir(path: Path, *, missing_ok: bool = False) -> None:
    """Persist a directory's entries (renames, creations). Raises what the fsync raises (EIO, ENOSPC:
    the entries may never reach the disk), as Kafka's Utils.flushDir, except where the file system
    cannot fsync a directory at all. A missing directory raises FileNotFoundError unless ``missing_ok``
    (a log's directory renamed for its deletion meanwhile, as Kafka's flushDirIfExists)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except FileNotFoundError:
        if missing_ok:
            return
        raise
    try:
        os.fsync(fd)
    except OSError as error:
        if error.errno not in _CANNOT_FSYNC_DIRECTORIES:
            raise
    finally:
        os.close(fd)


def delete_if_exists(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
