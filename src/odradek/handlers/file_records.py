"""Fetched records that stay in their segment files until the socket takes them (sendfile).

Each region's file descriptor is duplicated when the fetch is read, so the bytes stay readable even if
retention closes and deletes the segment before the response is written; the duplicate is closed once
sent (or when the response is dropped).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any, Protocol


class _Region(Protocol):
    @property
    def fd(self) -> int: ...
    @property
    def position(self) -> int: ...
    @property
    def length(self) -> int: ...


class OwnedRegion:
    __slots__ = ("fd", "length", "position")

    def __init__(self, fd: int, position: int, length: int) -> None:
        self.fd = os.dup(fd)
        self.position = position
        self.length = length

    def __len__(self) -> int:
        return self.length

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __del__(self) -> None:
        self.close()


class FileRecords:
    """A records value for the codec: its length is known, its bytes are placed by the server."""

    __slots__ = ("length", "regions")

    def __init__(self, regions: Iterable[_Region]) -> None:
        self.regions = [OwnedRegion(r.fd, r.position, r.length) for r in regions if r.length]
        self.length = sum(r.length for r in self.regions)

    def __len__(self) -> int:
        return self.length

    def close(self) -> None:
        """Release the regions of records that will not be sent (a throttled fetch's)."""
        for region in self.regions:
            region.close()

    def append_to(self, out: Any) -> None:
        for region in self.regions:
            out.add_region(region)
