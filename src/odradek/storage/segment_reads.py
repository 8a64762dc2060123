"""Reads of one segment: where an offset's batch starts, and the byte range a Fetch sends.

As Kafka's LogSegment.translateOffset and LogSegment.read: an offset index lookup, then a short scan of
batch headers from the entry found. Nothing here changes the segment; the functions take it as a
``SegmentFile`` (its ``.log`` fd and size, its offset index), so ``segment.py`` uses them too (its
truncation finds its cut with ``translate_offset``) without a cycle.
"""

from __future__ import annotations

from typing import NamedTuple, Protocol

from odradek.storage.batch_scan import scan_headers
from odradek.storage.index import OffsetIndex


class SegmentFile(Protocol):
    """What a read needs of a ``LogSegment``."""

    @property
    def fd(self) -> int: ...

    @property
    def size(self) -> int: ...

    @property
    def offset_index(self) -> OffsetIndex: ...


class BatchPosition(NamedTuple):
    position: int
    size: int


class SegmentRead(NamedTuple):
    """A byte range of the segment's ``.log`` to send, starting at a batch boundary."""

    position: int
    length: int
    first_entry_incomplete: bool = False


def read_segment(
    segment: SegmentFile,
    start_offset: int,
    max_size: int,
    max_position: int | None = None,
    min_one_message: bool = False,
) -> SegmentRead | None:
    """Whole batches from the one holding ``start_offset`` on, at most ``max_size`` bytes (but one
    whole batch with ``min_one_message``) and never past ``max_position``; None if the offset is past
    the end.

    Kafka cuts the region at ``max_size`` even inside a batch; clients drop that partial batch and
    fetch it again next time, so every size-limited fetch carried bytes sent twice (a quarter of a 1 MiB
    fetch of ~400 KB batches). Here the cut is at the last whole batch, found from the offset index
    (entries are batch starts) and a few header reads past its entry."""
    found = translate_offset(segment, start_offset)
    if found is None:
        return None
    adjusted = max(max_size, found.size) if min_one_message else max_size
    limit = segment.size if max_position is None else min(max_position, segment.size)
    length = max(0, min(limit - found.position, adjusted))
    incomplete = adjusted < found.size
    if not incomplete and length < limit - found.position:
        length = _whole_batches_end(segment, found.position, found.position + length) - found.position
    return SegmentRead(found.position, length, incomplete)


def translate_offset(segment: SegmentFile, offset: int, starting_position: int = 0) -> BatchPosition | None:
    """Position and size of the first batch whose last offset is >= ``offset``."""
    start = max(segment.offset_index.lookup(offset).position, starting_position)
    for position, header in scan_headers(segment.fd, start, segment.size):
        if header.last_offset >= offset:
            return BatchPosition(position, header.size)
    return None


def _whole_batches_end(segment: SegmentFile, start: int, end: int) -> int:
    """End of the last batch that lies whole in [start, end), ``start`` being a batch start."""
    whole_end = max(start, segment.offset_index.floor_position(end))
    for position, header in scan_headers(segment.fd, whole_end, end):
        whole_end = position + header.size
    return whole_end
