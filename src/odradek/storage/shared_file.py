"""A segment's open file, shared with the Fetch answers still sending from it.

Kafka sends fetched records from the segment's own FileChannel. Here a region names the segment's
`SharedFile`, and an answer holds it (`hold`) until the region is sent or dropped (`release`): one
counter per answer and partition, never a descriptor of its own, so a fetch of thousands of partitions
costs no descriptors. The segment lets go of its own hold when it closes (deleted by retention, its log
truncated whole, the broker stopping); the descriptor is closed when the last holder lets go, so an
answer under way keeps reading the bytes it was given, and the number is never reused under it by
another file the broker opens.
"""

from __future__ import annotations

import os
import threading


class ClosedFileError(OSError):
    """The file was closed before the region was held: the read that named it is stale."""


class SharedFile:
    """An open descriptor, closed when its last holder releases it (its opener holds it first)."""

    __slots__ = ("_holders", "_lock", "fd")

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._holders = 1
        # Segments may be closed in a worker thread while the event loop holds them for an answer.
        self._lock = threading.Lock()

    def hold(self) -> SharedFile:
        with self._lock:
            if self._holders == 0:
                raise ClosedFileError("the segment file was closed before its region was held")
            self._holders += 1
        return self

    def release(self) -> None:
        with self._lock:
            self._holders -= 1
            if self._holders:
                return
            fd, self.fd = self.fd, -1
        os.close(fd)

    @property
    def holders(self) -> int:
        return self._holders
