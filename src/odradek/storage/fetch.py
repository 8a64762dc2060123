"""What a Fetch gets from a Log: file regions to send with ``os.sendfile``, and the offsets around them.

A read never copies record bytes: it names a byte range of a segment's ``.log`` file. A region is
valid while its segment is open; one to be sent later (a Fetch answer) is held (``FileRegion.hold``):
the segment's file then stays open, even if the segment is closed and deleted meanwhile, until the
``HeldRegion`` is closed (see ``shared_file``). The server sends it with
``os.sendfile(socket_fd, region.fd, region.position, region.length)`` or, where the transport can't
(TLS), by reading it.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from odradek.storage.errors import OffsetOutOfRangeError
from odradek.storage.files import read_exactly
from odradek.storage.log_dir_failure import LogDirFailures, is_disk_error
from odradek.storage.log_view import ReadableLog
from odradek.storage.segment import LogSegment
from odradek.storage.segment_reads import read_segment, translate_offset
from odradek.storage.shared_file import SharedFile
from odradek.storage.txn_index import AbortedTxn


class FetchIsolation(enum.Enum):
    """How far a read may go: replicas to the log end, consumers to the high watermark (read_uncommitted)
    or to the last stable offset (read_committed)."""

    LOG_END = "log_end"
    HIGH_WATERMARK = "high_watermark"
    TXN_COMMITTED = "txn_committed"


@dataclass(frozen=True, slots=True)
class FileRegion:
    """``length`` bytes at ``position`` of the segment file ``file``: whole batches (a size limit ends
    the region at the last batch that fits, not inside one as Kafka does)."""

    file: SharedFile
    path: Path
    position: int
    length: int
    #: Where a failed read of the file is reported (its log's dir goes offline); None in tools, tests.
    failures: LogDirFailures | None = None

    @property
    def fd(self) -> int:
        return self.file.fd

    def read(self) -> bytes:
        """The region's bytes (a fetch copied into its answer, a move's copy); an I/O error takes the
        log dir offline (LogStorageError) as any other read of the log does."""
        try:
            return read_exactly(self.fd, self.length, self.position)
        except OSError as error:
            if self.failures is None or not is_disk_error(error):
                raise
            raise self.failures.mark_offline(self.path.parent.parent, error) from error

    def hold(self) -> HeldRegion:
        """This region, to send later: its file stays open until the HeldRegion is closed. Raises
        ClosedFileError if the segment was closed since the read."""
        log_dir = self.path.parent.parent  # the segment's partition dir's parent
        return HeldRegion(self.file.hold(), self.position, self.length, self.failures, log_dir)


class HeldRegion:
    """A region an answer holds until it is sent or dropped (``close``): a counted hold on the
    segment's file, not a descriptor of its own."""

    __slots__ = ("_failures", "_file", "_log_dir", "fd", "length", "position")

    def __init__(
        self,
        file: SharedFile,
        position: int,
        length: int,
        failures: LogDirFailures | None = None,
        log_dir: Path | None = None,
    ) -> None:
        self._file: SharedFile | None = file
        self.fd = file.fd
        self.position = position
        self.length = length
        self._failures = failures
        self._log_dir = log_dir

    def read_failed(self, error: OSError) -> None:
        """Sending it met an I/O error reading the file: the log dir failed, as for any read of it."""
        if self._failures is not None and self._log_dir is not None and is_disk_error(error):
            self._failures.mark_offline(self._log_dir, error)

    def __len__(self) -> int:
        return self.length

    def close(self) -> None:
        file, self._file = self._file, None
        if file is not None:
            self.fd = -1
            file.release()

    def __del__(self) -> None:
        self.close()  # an answer dropped without closing its regions must not keep the file open


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


def read_log(
    log: ReadableLog,
    fetch_offset: int,
    max_bytes: int,
    isolation: FetchIsolation,
    min_one_message: bool,
    max_offset: int | None,
) -> FetchDataInfo:
    """``Log.read``: like Kafka, data comes from one segment per read (the one holding the offset, or
    the next one with data when a compaction gap ends a segment early)."""
    log_start, log_end = log.log_start_offset, log.log_end_offset
    if fetch_offset < log_start or fetch_offset > log_end:
        raise OffsetOutOfRangeError(fetch_offset, log_start, log_end)
    bound = {
        FetchIsolation.LOG_END: log_end,
        FetchIsolation.HIGH_WATERMARK: log.high_watermark,
        FetchIsolation.TXN_COMMITTED: log.last_stable_offset,
    }[isolation]
    if max_offset is not None:
        bound = min(bound, max_offset)
    segments = log.segments
    regions: tuple[FileRegion, ...] = ()
    incomplete = False
    aborted: tuple[AbortedTxn, ...] | None = () if isolation is FetchIsolation.TXN_COMMITTED else None
    index = log.segment_index_for(fetch_offset)
    while fetch_offset < bound and index < len(segments):
        segment = segments[index]
        result = read_segment(segment, fetch_offset, max_bytes, _position_of(segment, bound), min_one_message)
        if result is None:  # past this segment's last batch: try the next one
            index += 1
            continue
        incomplete = result.first_entry_incomplete
        if result.length > 0 and not incomplete:
            regions = (
                FileRegion(segment.file, segment.log_path, result.position, result.length, log.failures),
            )
            if aborted is not None:
                upper = segment.offset_index.upper_bound_offset(result.position + result.length)
                if upper is None:
                    upper = segments[index + 1].base_offset if index + 1 < len(segments) else log_end
                aborted = _collect_aborted(segments[index:], fetch_offset, upper)
        break
    return FetchDataInfo(
        fetch_offset,
        regions,
        log.high_watermark,
        log.last_stable_offset,
        log_start,
        log_end,
        aborted,
        incomplete,
    )


def _position_of(segment: LogSegment, offset: int) -> int:
    """File position in ``segment`` where reads must stop so that ``offset`` is excluded."""
    if offset >= segment.next_offset:
        return segment.size
    found = translate_offset(segment, offset)
    return segment.size if found is None else found.position


def _collect_aborted(
    segments: Sequence[LogSegment], fetch_offset: int, upper_bound: int
) -> tuple[AbortedTxn, ...]:
    collected: list[AbortedTxn] = []
    for segment in segments:
        found, complete = segment.txn_index.collect(fetch_offset, upper_bound)
        collected.extend(found)
        if complete:
            break
    return tuple(collected)
