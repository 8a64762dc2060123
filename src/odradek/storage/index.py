"""Kafka's sparse per-segment indexes: ``.index`` (offset -> file position) and ``.timeindex``.

``.index``: 8-byte big-endian entries, relative offset int32 + file position int32. An entry names the
last offset of a batch and the position where that batch starts, so a lookup for any offset gives a
position at or before the batch holding it; a short scan of batch headers finishes the job.
``.timeindex``: 12-byte entries, timestamp int64 + relative offset int32: the largest timestamp seen so
far in the segment and the (last) offset of the batch that carried it; timestamps strictly increase.

Unlike Kafka we do not preallocate and memory-map the files: lookups use compact in-memory arrays, and
new entries reach the file in one ``pwrite`` when the index is flushed, released or closed (not one per
append). Index files are rebuilt by recovery for every segment past the recovery point, so what an
unclean stop loses of them is never needed; a flush writes them before it fsyncs.
"""

from __future__ import annotations

import os
import struct
import sys
import threading
from array import array
from bisect import bisect_left, bisect_right
from pathlib import Path
from typing import NamedTuple

from odradek.storage.errors import CorruptIndexError
from odradek.storage.files import write_all

NO_TIMESTAMP = -1
_INT32_MAX = 2**31 - 1
_TIME_ENTRY = struct.Struct(">qi")


class OffsetPosition(NamedTuple):
    offset: int
    position: int


class TimestampOffset(NamedTuple):
    timestamp: int
    offset: int


class _IndexFile:
    """The file half of an index: entries appended at ``entries * entry_size``.

    The fd is opened only to write (and kept while the segment is active); ``release`` closes it, so
    inactive segments hold one open file (their ``.log``) instead of three.
    """

    entry_size = 0

    def __init__(self, path: Path, base_offset: int, max_index_size: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self.max_entries = max(max_index_size // self.entry_size, 1)
        self._fd: int | None = None
        self._entries = 0
        self._written = 0  # entries in the file; the rest wait in _unwritten
        self._unwritten = bytearray()
        # Appends happen on the event loop, while a flush job may write the unwritten entries from a
        # worker thread: both hold this lock (the loop waits at most one small pwrite).
        self._lock = threading.Lock()
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o644))  # the file exists from the start

    @property
    def entries(self) -> int:
        return self._entries

    @property
    def size_in_bytes(self) -> int:
        return self._entries * self.entry_size

    def can_append_offset(self, offset: int) -> bool:
        return 0 <= offset - self.base_offset <= _INT32_MAX

    def _read_words(self, code: str) -> array[int]:
        raw = self.path.read_bytes()
        if len(raw) % self.entry_size != 0:
            raise CorruptIndexError(
                f"index file {self.path} has size {len(raw)}, not a multiple of {self.entry_size}"
            )
        words = array(code)
        words.frombytes(raw)
        if sys.byteorder == "little":
            words.byteswap()
        return words

    def _open_fd(self) -> int:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        return self._fd

    def _loaded(self, entries: int) -> None:
        """The file already holds `entries` entries (read at load)."""
        self._entries = self._written = entries
        self._unwritten.clear()

    def _write_entry(self, data: bytes) -> None:
        with self._lock:
            self._unwritten += data
            self._entries += 1

    def write_unwritten(self) -> None:
        with self._lock:
            if self._unwritten:
                write_all(self._open_fd(), self._unwritten, self._written * self.entry_size)
                self._written = self._entries
                self._unwritten.clear()

    def _truncate_entries(self, entries: int) -> None:
        with self._lock:
            if entries >= self._written:
                del self._unwritten[(entries - self._written) * self.entry_size :]
            else:
                os.ftruncate(self._open_fd(), entries * self.entry_size)
                self._written = entries
                self._unwritten.clear()
            self._entries = entries

    def flush(self) -> None:
        self.write_unwritten()
        if self._fd is not None:
            os.fsync(self._fd)
            return
        fd = os.open(self.path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def release(self) -> None:
        """Write what is unwritten and close the fd (it is reopened if the index is written again)."""
        self.write_unwritten()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def close(self) -> None:
        self.release()

    def rename(self, new_path: Path) -> None:
        os.rename(self.path, new_path)
        self.path = new_path

    def moved_to(self, new_path: Path) -> None:
        """The file was moved with its directory: write (and reopen) it at ``new_path`` from now on.
        Under the lock, so a flush job writing entries meanwhile uses one path or the other whole."""
        with self._lock:
            self.path = new_path


class OffsetIndex(_IndexFile):
    entry_size = 8

    def __init__(self, path: Path, base_offset: int, max_index_size: int) -> None:
        super().__init__(path, base_offset, max_index_size)
        self._relative_offsets: array[int] = array("i")
        self._positions: array[int] = array("i")

    @classmethod
    def load(cls, path: Path, base_offset: int, max_index_size: int, log_size: int) -> OffsetIndex:
        """Open an existing index and check it against its segment; CorruptIndexError if it doesn't fit."""
        index = cls(path, base_offset, max_index_size)
        try:
            words = index._read_words("i")
            relative, positions = words[0::2], words[1::2]
            n = len(relative)
            if n and (relative[0] < 0 or positions[-1] >= max(log_size, 1)):
                raise CorruptIndexError(f"index file {path} points outside its segment")
            if any(relative[i] >= relative[i + 1] or positions[i] > positions[i + 1] for i in range(n - 1)):
                raise CorruptIndexError(f"index file {path} entries are not increasing")
        except CorruptIndexError:
            index.close()
            raise
        index._relative_offsets, index._positions = relative, positions
        index._loaded(n)
        return index

    @property
    def is_full(self) -> bool:
        return self._entries >= self.max_entries

    @property
    def last_offset(self) -> int:
        return self.base_offset + self._relative_offsets[-1] if self._entries else self.base_offset

    def append(self, offset: int, position: int) -> None:
        relative = offset - self.base_offset
        if self._entries and relative <= self._relative_offsets[-1]:
            raise ValueError(f"index append of offset {offset} is not above the last ({self.last_offset})")
        self._write_entry(relative.to_bytes(4, "big", signed=True) + position.to_bytes(4, "big"))
        self._relative_offsets.append(relative)
        self._positions.append(position)

    def lookup(self, target_offset: int) -> OffsetPosition:
        """The entry with the largest offset <= target, or (base_offset, 0) when there is none."""
        slot = bisect_right(self._relative_offsets, target_offset - self.base_offset) - 1
        if slot < 0:
            return OffsetPosition(self.base_offset, 0)
        return OffsetPosition(self.base_offset + self._relative_offsets[slot], self._positions[slot])

    def floor_position(self, position: int) -> int:
        """The largest indexed position <= ``position`` (a batch start), or 0 when there is none."""
        slot = bisect_right(self._positions, position) - 1
        return self._positions[slot] if slot >= 0 else 0

    def upper_bound_offset(self, position: int) -> int | None:
        """Offset of the first entry at or after ``position``: every offset before it is below it."""
        slot = bisect_left(self._positions, position)
        if slot >= self._entries:
            return None
        return self.base_offset + self._relative_offsets[slot]

    def truncate_to(self, offset: int) -> None:
        """Drop every entry for offsets >= ``offset``."""
        keep = bisect_left(self._relative_offsets, offset - self.base_offset)
        del self._relative_offsets[keep:]
        del self._positions[keep:]
        self._truncate_entries(keep)

    def reset(self) -> None:
        self.truncate_to(self.base_offset)


class TimeIndex(_IndexFile):
    entry_size = 12

    def __init__(self, path: Path, base_offset: int, max_index_size: int) -> None:
        super().__init__(path, base_offset, max_index_size)
        self._timestamps: array[int] = array("q")
        self._relative_offsets: array[int] = array("i")

    @classmethod
    def load(cls, path: Path, base_offset: int, max_index_size: int) -> TimeIndex:
        index = cls(path, base_offset, max_index_size)
        try:
            entries = list(_TIME_ENTRY.iter_unpack(index._read_words("B").tobytes()))
            n = len(entries)
            timestamps: array[int] = array("q", (e[0] for e in entries))
            relative: array[int] = array("i", (e[1] for e in entries))
            if n and (relative[0] < 0 or timestamps[-1] < timestamps[0]):
                raise CorruptIndexError(f"time index file {path} is not ordered")
            if any(relative[i] > relative[i + 1] for i in range(n - 1)):
                raise CorruptIndexError(f"time index file {path} offsets are not increasing")
        except CorruptIndexError:
            index.close()
            raise
        index._timestamps, index._relative_offsets = timestamps, relative
        index._loaded(n)
        return index

    @property
    def is_full(self) -> bool:
        # One slot stays free for the max-timestamp entry written when the segment is rolled.
        return self._entries >= self.max_entries - 1

    @property
    def last_entry(self) -> TimestampOffset:
        if not self._entries:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)
        return TimestampOffset(self._timestamps[-1], self.base_offset + self._relative_offsets[-1])

    def maybe_append(self, timestamp: int, offset: int, skip_full_check: bool = False) -> None:
        """Add (timestamp, offset) if the timestamp is larger than the last entry's."""
        if not skip_full_check and self.is_full:
            raise ValueError(f"time index {self.path} is full")
        last = self.last_entry
        if self._entries and offset < last.offset:
            raise ValueError(f"time index append of offset {offset} is below the last ({last.offset})")
        if timestamp > last.timestamp:
            relative = offset - self.base_offset
            self._write_entry(timestamp.to_bytes(8, "big", signed=True) + relative.to_bytes(4, "big"))
            self._timestamps.append(timestamp)
            self._relative_offsets.append(relative)

    def lookup(self, target_timestamp: int) -> TimestampOffset:
        """The entry with the largest timestamp <= target, or (NO_TIMESTAMP, base_offset)."""
        slot = bisect_right(self._timestamps, target_timestamp) - 1
        if slot < 0:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)
        return TimestampOffset(self._timestamps[slot], self.base_offset + self._relative_offsets[slot])

    def truncate_to(self, offset: int) -> None:
        keep = bisect_left(self._relative_offsets, offset - self.base_offset)
        del self._timestamps[keep:]
        del self._relative_offsets[keep:]
        self._truncate_entries(keep)

    def reset(self) -> None:
        self.truncate_to(self.base_offset)
