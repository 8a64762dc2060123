"""Log: one partition's sequence of segments, its offsets, producer state and leader epochs.

The broker's event loop owns a Log: every method here is synchronous and changes state in place. File
work that can be slow is split so it can run in a thread (see the README): ``prepare_flush`` /
``FlushJob.run`` / ``complete_flush``; ``delete_old_segments`` hands back segments whose files a
worker deletes later; compaction reads immutable segments in a worker and ``replace_segments`` swaps
the result in. Appends and reads are fast enough for the loop: a ``pwrite`` of the batch, or an index
lookup and a few header reads.
"""

from __future__ import annotations

import logging
import os
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from odradek.protocol.records import (
    NO_TIMESTAMP,
    RecordBatchHeader,
    patch_base_offset,
    patch_log_append_time,
    patch_partition_leader_epoch,
)
from odradek.storage.append_validation import analyze_producer_state, validate_batches
from odradek.storage.config import LogConfig
from odradek.storage.errors import DuplicateSequenceError, InvalidRecordError, OffsetOutOfRangeError
from odradek.storage.fetch import FetchDataInfo, FetchIsolation, FileRegion
from odradek.storage.files import DELETED_SUFFIX, Clock, fsync_dir, system_clock
from odradek.storage.leader_epoch import LeaderEpochCache
from odradek.storage.log_loader import load_log
from odradek.storage.offsets_by_time import TimestampAndOffset, fetch_offset_by_timestamp
from odradek.storage.partition import TopicPartition
from odradek.storage.producer_recovery import apply_batch, delete_snapshots_below, write_snapshot
from odradek.storage.producer_state import AppendOrigin, ProducerStateManager
from odradek.storage.retention import (
    Predicate,
    deletable_segments,
    log_start_breached,
    retention_size_breached,
    retention_time_breached,
)
from odradek.storage.segment import LogSegment
from odradek.storage.txn_index import AbortedTxn

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class AppendResult:
    base_offset: int
    last_offset: int
    log_append_time: int
    """The broker time stamped on LogAppendTime batches, else -1 (NO_TIMESTAMP), as Produce returns it."""
    log_start_offset: int
    max_timestamp: int = NO_TIMESTAMP
    records_count: int = 0


@dataclass(slots=True)
class FlushJob:
    """fsyncs for ``Log.flush``: built on the loop, ``run`` anywhere, then ``Log.complete_flush``."""

    flush_offset: int
    segments: list[LogSegment]
    files: list[Path] = field(default_factory=list)
    directory: Path | None = None

    def run(self) -> None:
        for segment in self.segments:
            if not segment.closed:
                segment.flush()
        for path in self.files:
            try:
                fd = os.open(path, os.O_RDONLY)
            except FileNotFoundError:
                continue
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        if self.directory is not None:
            fsync_dir(self.directory)


class Log:
    def __init__(
        self,
        directory: Path,
        config: LogConfig,
        segments: list[LogSegment],
        *,
        log_start_offset: int,
        recovery_point: int,
        leader_epoch_cache: LeaderEpochCache,
        producer_state: ProducerStateManager,
        high_watermark: int | None = None,
        clock: Clock = system_clock,
        auto_high_watermark: bool = True,
    ) -> None:
        self.dir = directory
        tp = TopicPartition.from_dir_name(directory.name)
        self.topic_partition = tp if tp is not None else TopicPartition(directory.name, 0)
        self.config = config
        self.clock = clock
        self.leader_epoch_cache = leader_epoch_cache
        self.producer_state = producer_state
        self.auto_high_watermark = auto_high_watermark
        """Single-node mode: the high watermark follows the log end after every append. Replication
        turns this off and moves it with ``update_high_watermark``."""
        self._segments = segments
        self._bases = [s.base_offset for s in segments]
        self._log_start_offset = log_start_offset
        self._recovery_point = recovery_point
        self._high_watermark = log_start_offset
        self._last_flush_ms = clock()
        self._unflushed_files: list[Path] = []
        self.cleaner_checkpoint: int | None = None
        """First dirty offset for compaction (``cleaner-offset-checkpoint``), kept by the LogManager."""
        self.latest_delete_horizon: int | None = None
        """Earliest delete horizon of the tombstones the last cleaning kept, if any."""
        self.update_high_watermark(
            self.log_end_offset if high_watermark is None or auto_high_watermark else high_watermark
        )

    @classmethod
    def open(
        cls,
        directory: Path,
        config: LogConfig,
        *,
        clock: Clock = system_clock,
        recovery_point: int = 0,
        log_start_offset: int | None = None,
        high_watermark: int | None = None,
        had_clean_shutdown: bool = False,
        producer_id_expiration_ms: int = 86_400_000,
        auto_high_watermark: bool = True,
    ) -> Log:
        """Open (creating if needed) the log in ``directory``, recovering it as ``log_loader`` describes.
        Slow after an unclean shutdown: call it from a worker thread."""
        loaded = load_log(
            directory,
            config,
            clock(),
            recovery_point=recovery_point,
            log_start_offset=log_start_offset,
            had_clean_shutdown=had_clean_shutdown,
            producer_id_expiration_ms=producer_id_expiration_ms,
        )
        return cls(
            directory,
            config,
            loaded.segments,
            log_start_offset=loaded.log_start_offset,
            recovery_point=loaded.recovery_point,
            leader_epoch_cache=loaded.leader_epoch_cache,
            producer_state=loaded.producer_state,
            high_watermark=high_watermark,
            clock=clock,
            auto_high_watermark=auto_high_watermark,
        )

    # -- offsets ---------------------------------------------------------------------------------

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._segments[-1].next_offset

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    @property
    def last_stable_offset(self) -> int:
        """The first offset of the earliest open (or not yet replicated) transaction, else the HW."""
        first_unstable = self.producer_state.first_unstable_offset
        if first_unstable is not None and first_unstable < self._high_watermark:
            return first_unstable
        return self._high_watermark

    @property
    def recovery_point(self) -> int:
        return self._recovery_point

    @property
    def segments(self) -> tuple[LogSegment, ...]:
        return tuple(self._segments)

    @property
    def active_segment(self) -> LogSegment:
        return self._segments[-1]

    @property
    def size_in_bytes(self) -> int:
        return sum(s.size for s in self._segments)

    @property
    def latest_epoch(self) -> int | None:
        return self.leader_epoch_cache.latest_epoch

    def update_high_watermark(self, high_watermark: int) -> int:
        """Set the HW, clamped to [log start, log end]; returns the value set."""
        self._high_watermark = min(max(high_watermark, self._log_start_offset), self.log_end_offset)
        self.producer_state.on_high_watermark_updated(self._high_watermark)
        return self._high_watermark

    def fetch_offset_by_timestamp(
        self, target_timestamp: int, isolation: FetchIsolation = FetchIsolation.LOG_END
    ) -> TimestampAndOffset | None:
        """ListOffsets: a timestamp (first record at or after it), or -2 earliest, -1 latest, -3 the
        record with the max timestamp; see ``offsets_by_time``."""
        return fetch_offset_by_timestamp(self, target_timestamp, isolation)

    def end_offset_for_epoch(self, leader_epoch: int) -> tuple[int, int]:
        """(epoch, end offset) for OffsetForLeaderEpoch; (-1, -1) when the epoch is unknown."""
        return self.leader_epoch_cache.end_offset_for(leader_epoch, self.log_end_offset)

    # -- appending -------------------------------------------------------------------------------

    def append(
        self,
        records: bytearray | memoryview,
        *,
        leader_epoch: int = 0,
        origin: AppendOrigin = AppendOrigin.CLIENT,
    ) -> AppendResult:
        """Append one or more v2 batches as the leader: offsets (and the partition leader epoch, and for
        LogAppendTime topics the timestamp) are patched into ``records`` in place, then written.

        Raises CorruptRecordError, RecordTooLargeError, InvalidRecordError, and the producer-state errors;
        DuplicateSequenceError carries the offsets a retried batch got the first time.
        """
        now = self.clock()
        headers = validate_batches(records, self.config, origin)
        offset = self.log_end_offset
        log_append_time = now if self.config.log_append_time else NO_TIMESTAMP
        for header in headers:
            patch_base_offset(records, header.pos, offset)
            patch_partition_leader_epoch(records, header.pos, leader_epoch)
            if self.config.log_append_time:
                patch_log_append_time(records, header.pos, now)
            offset += header.last_offset_delta + 1
        headers = [RecordBatchHeader.read(records, h.pos) for h in headers]
        return self._append(records, headers, origin, log_append_time, leader_epoch, now)

    def append_as_follower(self, records: bytearray | memoryview | bytes) -> AppendResult:
        """Append batches fetched from the leader, offsets and epochs as they are."""
        headers = validate_batches(records, self.config, AppendOrigin.REPLICATION)
        if headers[0].base_offset < self.log_end_offset:
            raise InvalidRecordError(
                f"replicated batch at offset {headers[0].base_offset} is below the log end "
                f"{self.log_end_offset}"
            )
        return self._append(records, headers, AppendOrigin.REPLICATION, NO_TIMESTAMP, None, self.clock())

    def _append(
        self,
        records: bytearray | memoryview | bytes,
        headers: list[RecordBatchHeader],
        origin: AppendOrigin,
        log_append_time: int,
        leader_epoch: int | None,
        now: int,
    ) -> AppendResult:
        analysis = analyze_producer_state(self.producer_state, records, headers, origin)
        if analysis.duplicate is not None:
            dup = analysis.duplicate
            raise DuplicateSequenceError(
                analysis.duplicate_producer_id, dup.first_offset, dup.last_offset, self._log_start_offset
            )
        first, last = headers[0], headers[-1]
        max_header = max(headers, key=lambda h: h.max_timestamp)
        segment = self._maybe_roll(len(records), max_header.max_timestamp, last.last_offset, now)
        segment.append(last.last_offset, max_header.max_timestamp, max_header.last_offset, records)

        for header in headers:
            epoch = header.partition_leader_epoch if leader_epoch is None else leader_epoch
            latest = self.leader_epoch_cache.latest_epoch
            if epoch >= 0 and (latest is None or epoch > latest):
                self.leader_epoch_cache.assign(epoch, header.base_offset)
        for info in analysis.updated.values():
            self.producer_state.update(info)
        for txn in analysis.completed_txns:
            last_stable_offset = self.producer_state.last_stable_offset(txn)
            if txn.is_aborted:
                aborted = AbortedTxn(txn.producer_id, txn.first_offset, txn.last_offset, last_stable_offset)
                segment.txn_index.append(aborted)
            self.producer_state.complete_txn(txn)
        self.producer_state.map_end_offset = last.next_offset
        if self.auto_high_watermark:
            self.update_high_watermark(self.log_end_offset)
        return AppendResult(
            first.base_offset,
            last.last_offset,
            log_append_time,
            self._log_start_offset,
            max_header.max_timestamp,
            sum(h.records_count for h in headers),
        )

    def _maybe_roll(self, size: int, max_timestamp: int, max_offset: int, now: int) -> LogSegment:
        segment = self._segments[-1]
        if segment.should_roll(self.config, size, max_timestamp, max_offset, now):
            return self.roll()
        return segment

    def roll(self) -> LogSegment:
        """Start a new active segment at the log end offset (no-op if the active one is empty)."""
        active = self._segments[-1]
        new_base = self.log_end_offset
        if active.size == 0 and active.base_offset == new_base:
            return active
        active.on_become_inactive()
        segment = LogSegment.create(self.dir, new_base, self.config, self.clock())
        self._segments.append(segment)
        self._bases.append(new_base)
        # A snapshot at the segment boundary lets recovery start from it (fsynced by the next flush).
        self.producer_state.map_end_offset = new_base
        self._unflushed_files.append(write_snapshot(self.dir, self.producer_state))
        return segment

    # -- reading ---------------------------------------------------------------------------------

    def read(
        self,
        fetch_offset: int,
        max_bytes: int,
        *,
        isolation: FetchIsolation = FetchIsolation.HIGH_WATERMARK,
        min_one_message: bool = True,
        max_offset: int | None = None,
    ) -> FetchDataInfo:
        """Regions for a Fetch from ``fetch_offset`` (a whole batch if it is mid-batch), at most
        ``max_bytes`` (but one whole batch with ``min_one_message``), never at or past the isolation's
        bound (or ``max_offset`` if lower). Raises OffsetOutOfRangeError outside [log start, log end]."""
        log_end = self.log_end_offset
        if fetch_offset < self._log_start_offset or fetch_offset > log_end:
            raise OffsetOutOfRangeError(fetch_offset, self._log_start_offset, log_end)
        bound = {
            FetchIsolation.LOG_END: log_end,
            FetchIsolation.HIGH_WATERMARK: self._high_watermark,
            FetchIsolation.TXN_COMMITTED: self.last_stable_offset,
        }[isolation]
        if max_offset is not None:
            bound = min(bound, max_offset)
        regions: tuple[FileRegion, ...] = ()
        incomplete = False
        aborted: tuple[AbortedTxn, ...] | None = () if isolation is FetchIsolation.TXN_COMMITTED else None
        index = self._segment_index(fetch_offset)
        while fetch_offset < bound and index < len(self._segments):
            segment = self._segments[index]
            max_position = self._position_of(segment, bound)
            result = segment.read(fetch_offset, max_bytes, max_position, min_one_message)
            if result is None:  # past this segment's last batch (e.g. a compaction gap): try the next
                index += 1
                continue
            incomplete = result.first_entry_incomplete
            if result.length > 0 and not incomplete:
                regions = (FileRegion(segment.fd, segment.log_path, result.position, result.length),)
                if aborted is not None:
                    upper = segment.offset_index.upper_bound_offset(result.position + result.length)
                    if upper is None:
                        upper = self._next_base(index)
                    aborted = self._collect_aborted(index, fetch_offset, upper)
            break
        return FetchDataInfo(
            fetch_offset,
            regions,
            self._high_watermark,
            self.last_stable_offset,
            self._log_start_offset,
            log_end,
            aborted,
            incomplete,
        )

    def _position_of(self, segment: LogSegment, offset: int) -> int:
        """File position in ``segment`` where reads must stop for ``offset`` to be excluded."""
        if offset >= segment.next_offset:
            return segment.size
        found = segment.translate_offset(offset)
        return segment.size if found is None else found.position

    def _collect_aborted(self, index: int, fetch_offset: int, upper_bound: int) -> tuple[AbortedTxn, ...]:
        collected: list[AbortedTxn] = []
        for segment in self._segments[index:]:
            found, complete = segment.txn_index.collect(fetch_offset, upper_bound)
            collected.extend(found)
            if complete:
                break
        return tuple(collected)

    def _segment_index(self, offset: int) -> int:
        return max(bisect_right(self._bases, offset) - 1, 0)

    def _next_base(self, index: int) -> int:
        return self._bases[index + 1] if index + 1 < len(self._bases) else self.log_end_offset

    # -- log start, retention, truncation --------------------------------------------------------

    def delete_records(self, offset: int) -> int:
        """DeleteRecords: move the log start offset up to ``offset`` (at most the high watermark).
        Whole segments below it are removed by the next ``delete_old_segments``. Returns the log start."""
        if offset > self._high_watermark:
            raise OffsetOutOfRangeError(offset, self._log_start_offset, self._high_watermark)
        self._increment_log_start_offset(offset)
        return self._log_start_offset

    def _increment_log_start_offset(self, offset: int) -> None:
        if offset <= self._log_start_offset:
            return
        self._log_start_offset = offset
        self.leader_epoch_cache.truncate_from_start(offset)
        self.producer_state.on_log_start_offset_incremented(offset)
        if self._high_watermark < offset:
            self.update_high_watermark(offset)

    def delete_old_segments(self) -> list[LogSegment]:
        """Retention: remove segments below the log start offset, and (``cleanup.policy`` delete) over
        ``retention.bytes`` or older than ``retention.ms``. Removed segments are renamed ``*.deleted``
        and returned; close and unlink them after ``file.delete.delay.ms`` (``LogSegment.delete_files``,
        safe in a worker thread)."""
        removed = self._delete_segments(log_start_breached(self._log_start_offset))
        if self.config.delete:
            by_size = retention_size_breached(self.size_in_bytes, self.config.retention_bytes)
            if by_size is not None:
                removed += self._delete_segments(by_size)
            by_time = retention_time_breached(self.clock(), self.config.retention_ms)
            if by_time is not None:
                removed += self._delete_segments(by_time)
        return removed

    def _delete_segments(self, predicate: Predicate) -> list[LogSegment]:
        deletable = deletable_segments(self._segments, predicate, self._high_watermark, self.log_end_offset)
        if not deletable:
            return []
        if len(deletable) == len(self._segments):
            self.roll()  # a log always keeps one segment: the new, empty active one
        self._increment_log_start_offset(self._segments[len(deletable)].base_offset)
        return self._remove_segments(deletable)

    def _remove_segments(self, segments: Sequence[LogSegment]) -> list[LogSegment]:
        gone = {id(s) for s in segments}
        self._segments = [s for s in self._segments if id(s) not in gone]
        self._bases = [s.base_offset for s in self._segments]
        for segment in segments:
            segment.change_suffix(DELETED_SUFFIX)
        delete_snapshots_below(self.dir, self._segments[0].base_offset)
        return list(segments)

    def truncate_to(self, offset: int) -> list[LogSegment]:
        """Replication: drop everything at or after ``offset``. Returns segments to delete (as above)."""
        if offset >= self.log_end_offset:
            self.leader_epoch_cache.truncate_from_end(self.log_end_offset)
            return []
        if offset <= self._segments[0].base_offset:
            return self.truncate_fully_and_start_at(offset)
        index = self._segment_index(offset)
        removed = self._remove_segments(self._segments[index + 1 :])
        segment = self._segments[-1]
        segment.truncate_to(offset)
        segment.next_offset = max(offset, segment.base_offset)
        self.leader_epoch_cache.truncate_from_end(offset)
        self._log_start_offset = min(self._log_start_offset, offset)
        self._recovery_point = min(self._recovery_point, offset)
        self._rebuild_producer_state()
        self.update_high_watermark(min(self._high_watermark, offset))
        return removed

    def truncate_fully_and_start_at(self, offset: int) -> list[LogSegment]:
        """Replace the whole log by an empty one starting at ``offset``."""
        removed = self._remove_segments(list(self._segments[:-1])) if len(self._segments) > 1 else []
        old = self._segments[-1]
        old.change_suffix(DELETED_SUFFIX)
        removed.append(old)
        segment = LogSegment.create(self.dir, offset, self.config, self.clock())
        self._segments, self._bases = [segment], [offset]
        self.leader_epoch_cache.clear()
        self.producer_state.truncate_fully_and_start_at(offset)
        delete_snapshots_below(self.dir, offset + 1)
        self._log_start_offset = self._recovery_point = offset
        self.update_high_watermark(offset)
        return removed

    def _rebuild_producer_state(self) -> None:
        state = self.producer_state
        state.truncate_fully_and_start_at(self._log_start_offset)
        delete_snapshots_below(self.dir, 2**63 - 1)
        for segment in self._segments:
            for position, header in segment.batch_headers():
                view = segment.read_bytes(position, header.size) if header.is_control else b""
                apply_batch(state, header, view)
        state.map_end_offset = self.log_end_offset

    # -- producers, config, flush, close ---------------------------------------------------------

    def remove_expired_producers(self) -> list[int]:
        """``producer.id.expiration.ms``: forget idle producers (call every few minutes)."""
        return self.producer_state.remove_expired_producers(self.clock())

    def take_producer_snapshot(self) -> Path:
        self.producer_state.map_end_offset = self.log_end_offset
        path = write_snapshot(self.dir, self.producer_state)
        self._unflushed_files.append(path)
        return path

    def update_config(self, config: LogConfig) -> None:
        """New topic configs (AlterConfigs); they apply from the next append, roll or retention check."""
        self.config = config

    @property
    def unflushed_messages(self) -> int:
        return self.log_end_offset - self._recovery_point

    def flush_needed(self) -> bool:
        """Whether ``flush.messages`` or ``flush.ms`` asks for an fsync now."""
        if self.unflushed_messages <= 0:
            return False
        return (
            self.unflushed_messages >= self.config.flush_messages
            or self.clock() - self._last_flush_ms >= self.config.flush_ms
        )

    def prepare_flush(self, up_to_offset: int | None = None) -> FlushJob | None:
        """The fsyncs making everything below ``up_to_offset`` (default: the log end) durable."""
        offset = self.log_end_offset if up_to_offset is None else up_to_offset
        if offset <= self._recovery_point and not self._unflushed_files:
            return None
        segments = [
            s for s in self._segments if s.next_offset > self._recovery_point and s.base_offset < offset
        ]
        files = [*self._unflushed_files, self.leader_epoch_cache.path]
        self._unflushed_files = []
        return FlushJob(offset, segments or [self._segments[-1]], files, self.dir)

    def complete_flush(self, job: FlushJob) -> None:
        self._recovery_point = max(self._recovery_point, min(job.flush_offset, self.log_end_offset))
        self._last_flush_ms = self.clock()

    def flush(self, up_to_offset: int | None = None) -> None:
        """Synchronous flush (tests, shutdown); the loop should run ``prepare_flush().run`` in a thread."""
        job = self.prepare_flush(up_to_offset)
        if job is not None:
            job.run()
            self.complete_flush(job)

    def close(self) -> None:
        """Snapshot producer state at the log end (fsynced) and close every file; call flush first."""
        self.producer_state.map_end_offset = self.log_end_offset
        write_snapshot(self.dir, self.producer_state, fsync=True)
        for segment in self._segments:
            segment.close()

    def replace_segments(self, old: Sequence[LogSegment], new: LogSegment) -> bool:
        """Swap one compacted segment (files suffixed ``.swap``) in for the consecutive segments ``old``.

        The old segments are renamed ``*.deleted`` (their open files keep serving in-flight reads) and
        then the new one takes its final name; a crash in between is finished by the loader. Returns
        False, changing nothing, if ``old`` is no longer part of the log (retention or truncation
        removed some meanwhile); the caller then deletes ``new``.
        """
        ids = [id(s) for s in self._segments]
        try:
            start = ids.index(id(old[0]))
        except ValueError:
            return False
        if ids[start : start + len(old)] != [id(s) for s in old] or start + len(old) >= len(ids):
            return False
        for segment in old:
            segment.change_suffix(DELETED_SUFFIX)
        new.change_suffix("")
        self._segments[start : start + len(old)] = [new]
        self._bases = [s.base_offset for s in self._segments]
        return True
