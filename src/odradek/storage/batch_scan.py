"""Walking the batches of a segment file with ``pread``: headers only, or whole batches.

Files are read in chunks (16 KiB when only headers are wanted, 1 MiB or one batch for whole batches),
never the whole segment. A batch that runs past ``end`` (a torn tail) ends the walk; a malformed
header raises the records module's RecordsError for the caller (recovery) to judge.
"""

from __future__ import annotations

from collections.abc import Iterator

from odradek.protocol.records import HEADER_SIZE, RecordBatchHeader
from odradek.storage.files import read_exactly

_SCAN_CHUNK = 16 * 1024
_READ_CHUNK = 1024 * 1024


def scan_headers(fd: int, start: int, end: int) -> Iterator[tuple[int, RecordBatchHeader]]:
    """(file position, header) of each whole batch in [start, end).

    The header's own ``pos`` is relative to an internal buffer: use the position yielded with it.
    """
    position, buf, buf_start = start, b"", start
    while end - position >= HEADER_SIZE:
        rel = position - buf_start
        if rel + HEADER_SIZE > len(buf):
            buf, buf_start, rel = read_exactly(fd, min(_SCAN_CHUNK, end - position), position), position, 0
            if len(buf) < HEADER_SIZE:
                return
        header = RecordBatchHeader.read(buf, rel)
        if position + header.size > end:
            return
        yield position, header
        position += header.size


def scan_batches(fd: int, start: int, end: int) -> Iterator[tuple[int, RecordBatchHeader, memoryview]]:
    """(file position, header, whole batch bytes) of each whole batch in [start, end).

    The header is read from the yielded view (``pos`` 0), so ``header.crc_is_valid(view)`` works.
    """
    position, buf, buf_start = start, b"", start
    while end - position >= HEADER_SIZE:
        rel = position - buf_start
        if rel + HEADER_SIZE > len(buf):
            buf, buf_start, rel = read_exactly(fd, min(_READ_CHUNK, end - position), position), position, 0
            if len(buf) < HEADER_SIZE:
                return
        size = RecordBatchHeader.read(buf, rel).size
        if position + size > end:
            return
        if rel + size > len(buf):
            buf, buf_start, rel = read_exactly(fd, size, position), position, 0
            if len(buf) < size:
                return
        view = memoryview(buf)[rel : rel + size]
        yield position, RecordBatchHeader.read(view), view
        position += size
