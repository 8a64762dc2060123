"""LogSegment: one ``.log`` file of whole v2 batches plus its offset, time and transaction indexes.

A segment appends bytes it is handed (already validated and offset-assigned by the Log) and adds a sparse
index entry every ``index.interval.bytes``; "where does offset N start" is an index lookup and a short
scan of batch headers (segment_reads.py). Bytes go to the OS with ``pwrite`` before ``append`` returns,
so a process crash loses nothing acknowledged; fsync is the Log's flush policy.

Thread use: reads (``pread``) are safe from any thread; everything that mutates runs on the owner's
thread (the broker's event loop), except that a segment no longer in its Log may be closed and deleted
from a worker thread.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from odradek.protocol.records import HEADER_SIZE, RecordBatchHeader, RecordsError
from odradek.storage.batch_scan import scan_batches, scan_headers
from odradek.storage.config import LogConfig
from odradek.storage.errors import CorruptIndexError, LogStorageError
from odradek.storage.files import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    delete_if_exists,
    offset_file_name,
    read_exactly,
    write_all,
)
from odradek.storage.index import NO_TIMESTAMP, OffsetIndex, TimeIndex, TimestampOffset
from odradek.storage.segment_reads import translate_offset
from odradek.storage.shared_file import SharedFile
from odradek.storage.txn_index import TransactionIndex

BatchVisitor = Callable[[RecordBatchHeader, memoryview], None]


class LogSegment:
    """One segment: its ``.log`` fd, in-memory indexes, size, next offset and max timestamp.

    Build it with ``create`` (new, empty), ``open`` (existing, trusted files) or ``open_for_recovery``
    (existing, indexes rebuilt by ``recover``).
    """

    def __init__(
        self,
        directory: Path,
        base_offset: int,
        config: LogConfig,
        now_ms: int,
        *,
        suffix: str = "",
        create: bool = False,
        roll_jitter_ms: int = 0,
    ) -> None:
        self.base_offset = base_offset
        self.directory = directory
        self.suffix = suffix
        self.roll_jitter_ms = roll_jitter_ms
        self.index_interval_bytes = config.index_interval_bytes
        self.created_ms = now_ms
        self.log_path = self._path(LOG_SUFFIX)
        flags = os.O_RDWR | os.O_CREAT | (os.O_TRUNC if create else 0)
        #: Shared with the Fetch answers sending from it (closed when the last lets go).
        self.file = SharedFile(os.open(self.log_path, flags, 0o644))
        self.fd = self.file.fd
        self.size = 0 if create else os.fstat(self.fd).st_size
        self.preallocated = False
        if create and config.preallocate:
            with contextlib.suppress(OSError):
                os.posix_fallocate(self.fd, 0, config.segment_bytes)
                self.preallocated = True
        self.offset_index: OffsetIndex
        self.time_index: TimeIndex
        self.txn_index = TransactionIndex(self._path(TXN_INDEX_SUFFIX))
        #: Set by ``open_for_recovery`` when the ``.txnindex`` did not load: only a recovery that
        #: replays producer state can rebuild it (``recover(keep_txn_index=True)`` would keep it empty).
        self.txn_index_lost = False
        self.bytes_since_last_index_entry = 0
        self.max_timestamp_and_offset = TimestampOffset(NO_TIMESTAMP, base_offset)
        self.next_offset = base_offset
        self._rolling_based_timestamp: int | None = None
        if create:
            for suffix_ in (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
                delete_if_exists(self._path(suffix_))
            self.offset_index = OffsetIndex(self._path(INDEX_SUFFIX), base_offset, config.segment_index_bytes)
            self.time_index = TimeIndex(
                self._path(TIME_INDEX_SUFFIX), base_offset, config.segment_index_bytes
            )

    @classmethod
    def create(
        cls, directory: Path, base_offset: int, config: LogConfig, now_ms: int, *, suffix: str = ""
    ) -> LogSegment:
        return cls(
            directory,
            base_offset,
            config,
            now_ms,
            suffix=suffix,
            create=True,
            roll_jitter_ms=config.random_segment_jitter(),
        )

    @classmethod
    def open(
        cls, directory: Path, base_offset: int, config: LogConfig, now_ms: int, *, suffix: str = ""
    ) -> LogSegment:
        """Open an existing segment trusting its files; raises CorruptIndexError (or
        FileNotFoundError for a missing ``.index``) when recovery must rebuild the indexes instead."""
        segment = cls(
            directory,
            base_offset,
            config,
            now_ms,
            suffix=suffix,
            roll_jitter_ms=config.random_segment_jitter(),
        )
        try:
            index_path = segment._path(INDEX_SUFFIX)
            for required in (index_path, segment._path(TIME_INDEX_SUFFIX)):
                if not required.exists():
                    raise FileNotFoundError(required)
            size = config.segment_index_bytes
            segment.offset_index = OffsetIndex.load(index_path, base_offset, size, segment.size)
            segment.time_index = TimeIndex.load(segment._path(TIME_INDEX_SUFFIX), base_offset, size)
            segment.txn_index = TransactionIndex.load(segment._path(TXN_INDEX_SUFFIX))
            segment._load_tail_state()
        except (CorruptIndexError, FileNotFoundError, RecordsError):
            segment.close()
            raise
        return segment

    @classmethod
    def open_for_recovery(
        cls, directory: Path, base_offset: int, config: LogConfig, now_ms: int, *, suffix: str = ""
    ) -> LogSegment:
        """Open a segment whose indexes will be rebuilt by ``recover``: index files start empty."""
        segment = cls(
            directory,
            base_offset,
            config,
            now_ms,
            suffix=suffix,
            roll_jitter_ms=config.random_segment_jitter(),
        )
        size = config.segment_index_bytes
        segment.offset_index = OffsetIndex(segment._path(INDEX_SUFFIX), base_offset, size)
        segment.time_index = TimeIndex(segment._path(TIME_INDEX_SUFFIX), base_offset, size)
        try:
            segment.txn_index = TransactionIndex.load(segment._path(TXN_INDEX_SUFFIX))
        except CorruptIndexError:
            segment.txn_index_lost = True
        return segment

    # -- appending -------------------------------------------------------------------------------

    def append(
        self,
        largest_offset: int,
        largest_timestamp: int,
        offset_of_max_timestamp: int,
        data: bytes | bytearray | memoryview,
    ) -> None:
        """Write whole, offset-assigned batches at the end of the segment; index them if due."""
        if not data:
            return
        if not self.offset_index.can_append_offset(largest_offset):
            raise LogStorageError(f"offset {largest_offset} does not fit segment {self.base_offset}")
        position = self.size
        if position == 0:
            self._rolling_based_timestamp = largest_timestamp
        write_all(self.fd, data, position)
        self.size += len(data)
        self.next_offset = largest_offset + 1
        if largest_timestamp > self.max_timestamp_and_offset.timestamp:
            self.max_timestamp_and_offset = TimestampOffset(largest_timestamp, offset_of_max_timestamp)
        if self.bytes_since_last_index_entry > self.index_interval_bytes:
            # The Log rolls before an index fills; a compacted copy may simply get a sparser index.
            if not self.offset_index.is_full:
                self.offset_index.append(largest_offset, position)
            if not self.time_index.is_full:
                self.time_index.maybe_append(*self.max_timestamp_and_offset)
            self.bytes_since_last_index_entry = 0
        self.bytes_since_last_index_entry += len(data)

    def should_roll(
        self, config: LogConfig, messages_size: int, max_timestamp: int, max_offset: int, now_ms: int
    ) -> bool:
        """Kafka's roll rules: size, age (``segment.ms``, or ``max.compaction.lag.ms`` if a compacted
        topic's is shorter, minus this segment's jitter), full indexes, or an offset that would not fit
        the 4-byte relative offsets of the indexes."""
        reached_roll_ms = (
            self.time_waited_for_roll(now_ms, max_timestamp) > config.max_segment_ms - self.roll_jitter_ms
        )
        return (
            self.size > config.segment_bytes - messages_size
            or (self.size > 0 and reached_roll_ms)
            or self.offset_index.is_full
            or self.time_index.is_full
            or not self.offset_index.can_append_offset(max_offset)
        )

    def time_waited_for_roll(self, now_ms: int, message_timestamp: int) -> int:
        """Age by record time (first batch's timestamp) when there is one, else by wall clock."""
        first = self.first_batch_timestamp()
        if first is not None and first >= 0:
            return message_timestamp - first
        return now_ms - self.created_ms

    def first_batch_timestamp(self) -> int | None:
        if self._rolling_based_timestamp is None and self.size >= HEADER_SIZE:
            with contextlib.suppress(RecordsError):
                header = RecordBatchHeader.read(read_exactly(self.fd, HEADER_SIZE, 0))
                self._rolling_based_timestamp = header.max_timestamp
        return self._rolling_based_timestamp

    def on_become_inactive(self) -> None:
        """Called at roll: record the max timestamp (retention reads it back) and trim preallocation."""
        self.time_index.maybe_append(*self.max_timestamp_and_offset, skip_full_check=True)
        self.offset_index.release()
        self.time_index.release()
        if self.preallocated:
            os.ftruncate(self.fd, self.size)
            self.preallocated = False

    # -- reading ---------------------------------------------------------------------------------

    def batch_headers(
        self, start: int = 0, end: int | None = None
    ) -> Iterator[tuple[int, RecordBatchHeader]]:
        """(file position, header) of each whole batch in [start, end); reads headers only."""
        return scan_headers(self.fd, start, self.size if end is None else min(end, self.size))

    def batches(
        self, start: int = 0, end: int | None = None
    ) -> Iterator[tuple[int, RecordBatchHeader, memoryview]]:
        """(file position, header, whole batch bytes) of each whole batch in [start, end)."""
        return scan_batches(self.fd, start, self.size if end is None else min(end, self.size))

    def read_bytes(self, position: int, length: int) -> bytes:
        return read_exactly(self.fd, length, position)

    @property
    def max_timestamp(self) -> int:
        return self.max_timestamp_and_offset.timestamp

    @property
    def largest_timestamp(self) -> int:
        """The max record timestamp, or the file's modification time if no record has one."""
        if self.max_timestamp >= 0:
            return self.max_timestamp
        return self.last_modified_ms

    @property
    def last_modified_ms(self) -> int:
        return os.fstat(self.fd).st_mtime_ns // 1_000_000

    # -- recovery and truncation -----------------------------------------------------------------

    def recover(self, on_batch: BatchVisitor | None = None, *, keep_txn_index: bool = False) -> int:
        """Validate every batch (structure, CRC-32C, offsets), rebuild the indexes, and cut the file at
        the first invalid byte. ``on_batch`` sees each valid batch in order (and rebuilds the transaction
        index through producer state, unless ``keep_txn_index``). Returns the bytes truncated."""
        self.offset_index.reset()
        self.time_index.reset()
        if not keep_txn_index:
            self.txn_index.reset()
        self.max_timestamp_and_offset = TimestampOffset(NO_TIMESTAMP, self.base_offset)
        valid_bytes = last_index_entry = 0
        self.next_offset = self.base_offset
        try:
            for position, header, view in self.batches(0):
                if (
                    not header.crc_is_valid(view)
                    or header.base_offset < self.next_offset
                    or header.last_offset_delta < 0
                    or not self.offset_index.can_append_offset(header.last_offset)
                ):
                    break
                if header.max_timestamp > self.max_timestamp:
                    self.max_timestamp_and_offset = TimestampOffset(header.max_timestamp, header.last_offset)
                if position - last_index_entry > self.index_interval_bytes:
                    self.offset_index.append(header.last_offset, position)
                    self.time_index.maybe_append(*self.max_timestamp_and_offset, skip_full_check=True)
                    last_index_entry = position
                valid_bytes = position + header.size
                self.next_offset = header.next_offset
                if on_batch is not None:
                    on_batch(header, view)
        except RecordsError:
            pass  # a bad magic or impossible length: the valid part ends here
        truncated = self.size - valid_bytes
        os.ftruncate(self.fd, valid_bytes)
        self.size = valid_bytes
        self.preallocated = False
        self.bytes_since_last_index_entry = valid_bytes - last_index_entry
        self._rolling_based_timestamp = None
        self.time_index.maybe_append(*self.max_timestamp_and_offset, skip_full_check=True)
        if keep_txn_index:
            self.txn_index.truncate_to(self.next_offset)
        return truncated

    def truncate_to(self, offset: int) -> int:
        """Remove every batch holding an offset >= ``offset`` (the batch containing it too)."""
        mapping = translate_offset(self, offset)
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self.txn_index.truncate_to(offset)
        if mapping is None:
            return 0
        truncated = self.size - mapping.position
        os.ftruncate(self.fd, mapping.position)
        self.size = mapping.position
        self.bytes_since_last_index_entry = 0
        if self.size == 0:
            self._rolling_based_timestamp = None
        self._load_tail_state()
        return truncated

    def _load_tail_state(self) -> None:
        """Max timestamp and next offset: the last time index entry, then the batches after the last
        offset index entry (at most about ``index.interval.bytes`` of headers)."""
        self.max_timestamp_and_offset = self.time_index.last_entry
        last_entry = self.offset_index.lookup(2**63 - 1)
        self.next_offset = self.base_offset if self.offset_index.entries == 0 else last_entry.offset + 1
        for position, header in self.batch_headers(last_entry.position):
            if header.max_timestamp > self.max_timestamp:
                self.max_timestamp_and_offset = TimestampOffset(header.max_timestamp, header.last_offset)
            self.next_offset = max(self.next_offset, header.next_offset)
            self.bytes_since_last_index_entry = position + header.size - last_entry.position

    # -- files -----------------------------------------------------------------------------------

    def flush(self) -> None:
        os.fsync(self.fd)
        self.offset_index.flush()
        self.time_index.flush()
        self.txn_index.flush()

    def close(self) -> None:
        if self.fd < 0:
            return
        if self.preallocated:
            os.ftruncate(self.fd, self.size)
        for index in (getattr(self, "offset_index", None), getattr(self, "time_index", None)):
            if index is not None:
                index.close()
        self.fd = -1
        self.file.release()

    @property
    def closed(self) -> bool:
        return self.fd < 0

    def change_suffix(self, new_suffix: str) -> None:
        """Rename all of the segment's files from the current suffix to ``new_suffix`` (e.g. .deleted)."""
        self.suffix = new_suffix
        os.rename(self.log_path, self._path(LOG_SUFFIX))
        self.log_path = self._path(LOG_SUFFIX)
        self.offset_index.rename(self._path(INDEX_SUFFIX))
        self.time_index.rename(self._path(TIME_INDEX_SUFFIX))
        self.txn_index.rename(self._path(TXN_INDEX_SUFFIX))

    def moved_to(self, directory: Path) -> None:
        """Its directory was renamed (a partition being deleted): open fds stay valid, but every file
        the segment may still open or unlink (index entries written at close, ``delete_files``) is
        reached by its path in ``directory`` from now on."""
        self.directory = directory
        self.log_path = self._path(LOG_SUFFIX)
        self.offset_index.moved_to(self._path(INDEX_SUFFIX))
        self.time_index.moved_to(self._path(TIME_INDEX_SUFFIX))
        self.txn_index.path = self._path(TXN_INDEX_SUFFIX)

    def delete_files(self) -> None:
        """Close and unlink every file of the segment (after it left its Log)."""
        self.close()
        for path in (self.log_path, self.offset_index.path, self.time_index.path, self.txn_index.path):
            delete_if_exists(path)

    def files(self) -> list[Path]:
        return [self.log_path, self.offset_index.path, self.time_index.path, self.txn_index.path]

    def _path(self, kind: str) -> Path:
        return self.directory / (offset_file_name(self.base_offset, kind) + self.suffix)

    def __repr__(self) -> str:
        return f"LogSegment(base_offset={self.base_offset}, size={self.size}, next_offset={self.next_offset})"
