"""Log: one partition's offsets, producer state and leader epochs over its segments (local_log.py).

The broker's event loop owns a Log: every method here is synchronous and changes state in place. File
work that can be slow is split so it can run in a thread (see the README): ``prepare_flush`` /
``FlushJob.run`` / ``complete_flush``; ``delete_old_segments`` hands back segments whose files a
worker deletes later; compaction reads immutable segments in a worker and ``replace_segments`` swaps
the result in. Appends and reads are fast enough for the loop: a ``pwrite`` of the batch, or an index
lookup and a few header reads.
"""

from __future__ import annotations

import dataclasses
import uuid
from pathlib import Path
from typing import Protocol

from odradek.storage.config import LogConfig
from odradek.storage.errors import OffsetOutOfRangeError
from odradek.storage.fetch import FetchDataInfo, FetchIsolation, read_log
from odradek.storage.files import Clock, system_clock
from odradek.storage.flush import FlushJob
from odradek.storage.local_log import LocalLog
from odradek.storage.log_append import AppendResult, append_as_leader, append_replicated
from odradek.storage.log_dir_failure import LogDirFailures
from odradek.storage.log_loader import LoadedLog, load_log
from odradek.storage.offsets_by_time import TimestampAndOffset, fetch_offset_by_timestamp
from odradek.storage.partition import TopicPartition, future_dir_partition
from odradek.storage.prepared_appends import PreparedAppend
from odradek.storage.producer_recovery import write_snapshot
from odradek.storage.producer_state import AppendOrigin
from odradek.storage.retention import delete_old_segments
from odradek.storage.segment import LogSegment
from odradek.storage.truncation import truncate_fully_and_start_at, truncate_to


class LogEvents(Protocol):
    """What a log tells its owner, on the loop, so that the file work they make due follows soon."""

    def log_rolled(self, log: Log) -> None:
        """A new segment: the ones below it are due a flush (``Log.prepare_roll_flush``)."""

    def log_truncated(self, log: Log) -> None:
        """The recovery point went down: the checkpoint on disk claims too much until rewritten."""


class Log(LocalLog):
    """One partition's log (Kafka's UnifiedLog over its LocalLog, local_log.py: the segments, the
    recovery point, the directory). Build it with ``Log.open`` (or through ``LogManager``)."""

    def __init__(
        self,
        directory: Path,
        config: LogConfig,
        loaded: LoadedLog,
        *,
        high_watermark: int | None = None,
        clock: Clock = system_clock,
        auto_high_watermark: bool = True,
        events: LogEvents | None = None,
        failures: LogDirFailures | None = None,
    ) -> None:
        super().__init__(directory, config, loaded.segments, loaded.recovery_point, clock, failures)
        #: The topic id in ``partition.metadata`` (KIP-516); None for a log made without one.
        self.topic_id = loaded.topic_id
        tp = TopicPartition.from_dir_name(directory.name) or future_dir_partition(directory.name)
        self.topic_partition = tp if tp is not None else TopicPartition(directory.name, 0)
        self.leader_epoch_cache = loaded.leader_epoch_cache
        self.producer_state = loaded.producer_state
        self.auto_high_watermark = auto_high_watermark
        """A leader alone in its ISR: the high watermark follows the log end after every append. The
        partition's leadership sets it (partition/leader_replication.py); otherwise it is moved with
        ``update_high_watermark``. LogManager opens every log without it (a follower's rule)."""
        self._log_start_offset = loaded.log_start_offset
        self._high_watermark = loaded.log_start_offset
        self._events = events
        self.cleaner_checkpoint: int | None = None
        """First dirty offset for compaction (``cleaner-offset-checkpoint``), kept by the LogManager."""
        self.latest_delete_horizon: int | None = None
        """Earliest delete horizon of the tombstones the last cleaning kept, if any."""
        # Single-node: the leader's HW is its log end. Otherwise start from the checkpoint (or the log
        # start), as Kafka does, and let replication move it.
        if auto_high_watermark or high_watermark is None:
            high_watermark = self.log_end_offset if auto_high_watermark else loaded.log_start_offset
        self.update_high_watermark(high_watermark)

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
        events: LogEvents | None = None,
        failures: LogDirFailures | None = None,
    ) -> Log:
        """Open (creating if needed) the log in ``directory``, recovering it as ``log_loader`` describes.
        Slow after an unclean shutdown: call it from a worker thread. ``events`` hears of the rolls and
        truncations that make file work due (see ``LogEvents``)."""
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
            loaded,
            high_watermark=high_watermark,
            clock=clock,
            auto_high_watermark=auto_high_watermark,
            events=events,
            failures=failures,
        )

    # -- offsets ---------------------------------------------------------------------------------

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

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
    def latest_epoch(self) -> int | None:
        return self.leader_epoch_cache.latest_epoch

    def matches_topic_id(self, topic_id: uuid.UUID | None) -> bool:
        """Whether the log may serve as the partition of the topic with ``topic_id`` as it is: the ids
        are equal, or ``topic_id`` is unknown. A log without an id must take it first."""
        return topic_id is None or self.topic_id == topic_id

    def update_high_watermark(self, high_watermark: int) -> int:
        """Set the HW, clamped to [log start, log end]; returns the value set. It may go down (Kafka's
        updateHighWatermark): a follower takes its leader's, which lags after a leader change; a
        leader only ever raises its own (partition/leader_replication.py)."""
        self._high_watermark = min(max(high_watermark, self._log_start_offset), self.log_end_offset)
        self.producer_state.on_high_watermark_updated(self._high_watermark)
        return self._high_watermark

    def assign_leader_epoch(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` starts at ``start_offset`` (a leader's new epoch), its checkpoint
        written in the dir; returns whether the epochs changed."""
        try:
            return self.leader_epoch_cache.assign(epoch, start_offset)
        except OSError as error:
            self._dir_failed(error)
            raise

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
        prepared: PreparedAppend | None = None,
    ) -> AppendResult:
        """Append one or more v2 batches as the leader: offsets (and the partition leader epoch, and for
        LogAppendTime topics the timestamp) are patched into ``records`` in place, then written; a batch
        whose codec differs from the topic's compression.type is rewritten in it first (into a new
        buffer). What needs the batches' records (that rewrite, the topic's rules on keys and
        timestamps) is ``prepared`` if it was made from these bytes for the config the log has, and is
        done here otherwise (see prepared_appends).

        Raises CorruptRecordError, RecordTooLargeError, InvalidRecordError, InvalidTimestampError, and
        the producer-state errors; DuplicateSequenceError carries the offsets a retried batch got the
        first time.
        """
        try:
            return append_as_leader(self, records, leader_epoch, origin, prepared)
        except OSError as error:
            self._dir_failed(error)
            raise

    def append_as_follower(self, records: bytearray | memoryview | bytes) -> AppendResult:
        """Append batches fetched from the leader, offsets and epochs as they are. A partial batch at
        the end (normal in a Fetch response) is left out."""
        try:
            return append_replicated(self, records)
        except OSError as error:
            self._dir_failed(error)
            raise

    def roll(self) -> LogSegment:
        """Start a new active segment at the log end offset (no-op if the active one is empty)."""
        try:
            return self._roll()
        except OSError as error:
            self._dir_failed(error)
            raise

    def _roll(self) -> LogSegment:
        active = self._segments[-1]
        new_base = self.log_end_offset
        if active.size == 0 and active.base_offset == new_base:
            return active
        active.on_become_inactive()
        segment = LogSegment.create(self.dir, new_base, self.config, self.clock())
        self._add_segment(segment)
        # A snapshot at the segment boundary lets recovery start from it (fsynced by the roll flush).
        self.producer_state.map_end_offset = new_base
        self._recovery_point.file_written(write_snapshot(self.dir, self.producer_state))
        # As Kafka's UnifiedLog.roll: the segments below the new one are flushed off the loop soon, and
        # the recovery point moves to the new segment, so a start after a crash recovers only that.
        self._recovery_point.rolled(new_base)
        if self._events is not None:
            self._events.log_rolled(self)
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
        try:
            return read_log(self, fetch_offset, max_bytes, isolation, min_one_message, max_offset)
        except OSError as error:
            self._dir_failed(error)
            raise

    # -- log start, retention, truncation --------------------------------------------------------

    def delete_records(self, offset: int) -> int:
        """DeleteRecords: move the log start offset up to ``offset`` (at most the high watermark).
        Whole segments below it are removed by the next ``delete_old_segments``. Returns the log start."""
        if offset > self._high_watermark:
            raise OffsetOutOfRangeError(offset, self._log_start_offset, self._high_watermark)
        self.increment_log_start_offset(offset)
        return self._log_start_offset

    def increment_log_start_offset(self, offset: int) -> None:
        """Move the log start offset up (never down), trimming epochs and producer state with it."""
        if offset <= self._log_start_offset:
            return
        self._log_start_offset = offset
        try:
            self.leader_epoch_cache.truncate_from_start(offset)
        except OSError as error:  # its checkpoint rewritten in the dir
            self._dir_failed(error)
            raise
        self.producer_state.on_log_start_offset_incremented(offset)
        if self._high_watermark < offset:
            self.update_high_watermark(offset)

    def delete_old_segments(self) -> list[LogSegment]:
        """Retention: remove segments below the log start offset, and (``cleanup.policy`` delete) over
        ``retention.bytes`` or older than ``retention.ms``. Removed segments are renamed ``*.deleted``
        and returned; close and unlink them after ``file.delete.delay.ms`` (``LogSegment.delete_files``,
        safe in a worker thread)."""
        return delete_old_segments(self)

    def truncate_to(self, offset: int) -> list[LogSegment]:
        """Replication: drop everything at or after ``offset``. Returns segments to delete later."""
        try:
            return truncate_to(self, offset)
        except OSError as error:
            self._dir_failed(error)
            raise

    def truncate_fully_and_start_at(self, offset: int) -> list[LogSegment]:
        """Replace the whole log by an empty one starting at ``offset``; returns segments to delete."""
        try:
            return truncate_fully_and_start_at(self, offset)
        except OSError as error:
            self._dir_failed(error)
            raise

    def reset_offsets(self, *, log_start_offset: int, recovery_point: int) -> None:
        """Set the log start offset and recovery point outright (truncation moves them down)."""
        self._log_start_offset = log_start_offset
        self._recovery_point.truncated(recovery_point, self.log_end_offset)
        if self._events is not None:
            self._events.log_truncated(self)

    # -- producers, config, flush, close ---------------------------------------------------------

    def remove_expired_producers(self) -> list[int]:
        """``producer.id.expiration.ms``: forget idle producers (call every few minutes)."""
        return self.producer_state.remove_expired_producers(self.clock())

    def take_producer_snapshot(self) -> Path:
        self.producer_state.map_end_offset = self.log_end_offset
        path = write_snapshot(self.dir, self.producer_state)
        self._recovery_point.file_written(path)
        return path

    def update_config(self, config: LogConfig) -> None:
        """New topic configs (AlterConfigs); they apply from the next append, roll or retention check."""
        self.config = config

    def prepare_flush(self, up_to_offset: int | None = None) -> FlushJob | None:
        """The fsyncs making everything below ``up_to_offset`` (default: the log end) durable: run the
        job in a worker thread, then ``complete_flush`` (see flush.py)."""
        job = self._recovery_point.prepare(
            self._segments, self.log_end_offset, up_to_offset, self.leader_epoch_cache.path, self.dir
        )
        # a failed fsync takes the log dir offline, wherever the job runs (never retried: see flush.py)
        return None if job is None else dataclasses.replace(job, failed=self._dir_failed)

    def prepare_roll_flush(self) -> FlushJob | None:
        """The flush a roll asked for: everything below the newest rolled segment (None: done)."""
        offset = self._recovery_point.take_roll_offset()
        return None if offset is None else self.prepare_flush(offset)

    def flush(self, up_to_offset: int | None = None) -> None:
        """Synchronous flush (tests, shutdown); the loop should run ``prepare_flush().run`` in a thread."""
        job = self.prepare_flush(up_to_offset)
        if job is not None:
            job.run()
            self.complete_flush(job)

    def rename_dir(self, new_dir: Path) -> None:
        """``LocalLog.rename_dir``, the leader-epoch checkpoint's path moved with it."""
        super().rename_dir(new_dir)
        self.leader_epoch_cache.path = new_dir / self.leader_epoch_cache.path.name

    def close(self) -> None:
        """Snapshot producer state at the log end (fsynced) and close every file; call flush first."""
        self.producer_state.map_end_offset = self.log_end_offset
        write_snapshot(self.dir, self.producer_state, fsync=True)
        for segment in self._segments:
            segment.close()
