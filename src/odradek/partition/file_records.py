"""Fetched records that stay in their segment files until the socket takes them (sendfile).

Each region is held (`FileRegion.hold`, storage's counted hold on the segment's file, no descriptor of
its own) when the fetch is read, so the bytes stay readable even if retention closes and deletes the
segment before the response is written; the hold is let go once sent (or when the response is dropped).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, runtime_checkable

from odradek.storage.fetch import FileRegion, HeldRegion


@runtime_checkable
class RegionSink(Protocol):
    """Where the codec places a records value's regions (the server's ResponseOutput)."""

    def add_region(self, region: HeldRegion) -> None: ...


class FileRecords:
    """A records value for the codec (protocol/placed_records.py's `PlacedRecords`): its length is
    known, its bytes are placed by the server."""

    __slots__ = ("length", "regions")

    def __init__(self, regions: Iterable[FileRegion]) -> None:
        self.regions = [region.hold() for region in regions if region.length]
        self.length = sum(r.length for r in self.regions)

    def __len__(self) -> int:
        return self.length

    def close(self) -> None:
        """Release the regions of records that will not be sent (a throttled fetch's)."""
        for region in self.regions:
            region.close()

    def append_to(self, out: bytearray) -> None:
        if not isinstance(out, RegionSink):
            raise TypeError("file records are placed only in an output that takes file regions (sendfile)")
        for region in self.regions:
            out.add_region(region)
