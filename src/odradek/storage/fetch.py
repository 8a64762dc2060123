"""What a Fetch gets from a Log: file regions to send with ``os.sendfile``, and the offsets around them.

A read never copies record bytes: it names a byte range of a segment's ``.log`` file. The server sends
it with ``os.sendfile(socket_fd, region.fd, region.position, region.length)`` or, where the transport
can't (TLS), with ``region.read()``. A region stays valid for ``file.delete.delay.ms`` after its segment
is deleted by retention or compaction (the file is renamed, not closed, until then), so send promptly.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from pathlib import Path

from odradek.storage.files import read_exactly
from odradek.storage.txn_index import AbortedTxn


class FetchIsolation(enum.Enum):
    """How far a read may go: replicas to the log end, consumers to the high watermark (read_uncommitted)
    or to the last stable offset (read_committed)."""

    LOG_END = "log_end"
    HIGH_WATERMARK = "high_watermark"
    TXN_COMMITTED = "txn_committed"


@dataclass(frozen=True, slots=True)
class FileRegion:
    """``length`` bytes at ``position`` of the segment file open as ``fd`` (whole batches, except that
    the last may be cut short by ``max_bytes`` as Kafka does)."""

    fd: int
    path: Path
    position: int
    length: int

    def read(self) -> bytes:
        return read_exactly(self.fd, self.length, self.position)


@dataclass(frozen=True, slots=True)
class FetchDataInfo:
    """The result of ``Log.read``: zero or one region, and the log's offsets when it was read."""

    fetch_offset: int
    regions: tuple[FileRegion, ...]
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    log_end_offset: int
    aborted_transactions: tuple[AbortedTxn, ...] | None = None
    """For TXN_COMMITTED reads: the aborted transactions overlapping the data (None otherwise)."""
    first_entry_incomplete: bool = False
    """The first batch is larger than ``max_bytes`` and ``min_one_message`` was off: no region is
    returned (Kafka answers such a fetch with empty records; Fetch v0-2 clients would see
    RecordTooLarge)."""

    @property
    def size(self) -> int:
        return sum(region.length for region in self.regions)

    def read_bytes(self) -> bytes:
        return read_regions(self.regions)


def read_regions(regions: tuple[FileRegion, ...] | list[FileRegion]) -> bytes:
    """The bytes of ``regions``, concatenated (for transports that cannot sendfile, and for tests)."""
    return b"".join(region.read() for region in regions)
