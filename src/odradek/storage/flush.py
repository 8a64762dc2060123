"""A log's recovery point and the flushes that move it, with their fsyncs separable from the event loop.

``Log.prepare_flush`` (on the loop) lists the segments and small files written since the recovery
point (``RecoveryPoint.prepare``); ``FlushJob.run`` (in a worker thread) fsyncs them;
``Log.complete_flush`` (on the loop) moves the recovery point, so a later start only recovers what was
not fsynced. A flush is due at every roll (Kafka's UnifiedLog.roll: the segments below the new one) and
when ``flush.messages``/``flush.ms`` ask.

The recovery point only ever moves to an offset a job fsynced. A job claims at most the log end at its
prepare: the loop appends while the fsyncs run, and what it appends may miss them (Kafka's markFlushed
takes the offset asked for, even past a truncation below it). A truncation lowers it and voids every
job prepared before (the offsets they covered may hold other records by their completion), and cuts the
pending roll flush to the new log end.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from odradek.storage.files import fsync_dir
from odradek.storage.segment import LogSegment


@dataclass(slots=True)
class FlushJob:
    """fsyncs for ``Log.flush``: built on the loop, ``run`` anywhere, then ``Log.complete_flush``."""

    flush_offset: int
    segments: list[LogSegment]
    files: list[Path] = field(default_factory=list)
    directory: Path | None = None
    #: The log's truncation count when the job was prepared (``Log.complete_flush`` compares it).
    truncations: int = 0
    #: Told of an I/O error (the log's dir then goes offline: it raises LogStorageError); None: the
    #: OSError is raised as it is.
    failed: Callable[[OSError], None] | None = None

    def run(self) -> None:
        try:
            self._run()
        except OSError as error:
            if self.failed is not None:
                self.failed(error)
            raise

    def _run(self) -> None:
        for segment in self.segments:
            if segment.closed:
                continue
            try:
                segment.flush()
            except (FileNotFoundError, OSError) as e:
                # Deleted (and closed after file.delete.delay.ms) while we waited: nothing to keep.
                if not segment.closed and e.errno not in (errno.EBADF, errno.ENOENT):
                    raise
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
            # A log deleted meanwhile has its directory renamed: nothing of it to keep (Kafka's
            # LocalLog.flush, flushDirIfExists).
            fsync_dir(self.directory, missing_ok=True)


class RecoveryPoint:
    """A log's recovery point (everything below it is fsynced) and what is due to move it."""

    def __init__(self, offset: int, now_ms: int) -> None:
        self.offset = offset
        self.last_flush_ms = now_ms
        #: Small files (producer snapshots) written since the last flush was prepared: the next fsyncs them.
        self._unflushed_files: list[Path] = []
        #: The base offset of the newest segment rolled since the last roll flush was prepared.
        self._roll_flush_offset: int | None = None
        #: Counts truncations: a flush prepared before one may not move the recovery point.
        self._truncations = 0

    def file_written(self, path: Path) -> None:
        self._unflushed_files.append(path)

    def rolled(self, new_base: int) -> None:
        """A segment starts at ``new_base``: everything below it is due a flush."""
        self._roll_flush_offset = new_base

    def truncated(self, recovery_point: int, log_end: int) -> None:
        """The log was cut at ``log_end``; ``recovery_point`` is at most that."""
        self.offset = recovery_point
        self._truncations += 1
        if self._roll_flush_offset is not None:  # the segments it was for are gone past the log end
            self._roll_flush_offset = min(self._roll_flush_offset, log_end)

    def flush_needed(self, log_end: int, flush_messages: int, flush_ms: int, now_ms: int) -> bool:
        """Whether ``flush.messages`` or ``flush.ms`` asks for an fsync now."""
        unflushed = log_end - self.offset
        return unflushed > 0 and (unflushed >= flush_messages or now_ms - self.last_flush_ms >= flush_ms)

    def prepare(
        self,
        segments: Sequence[LogSegment],
        log_end: int,
        up_to_offset: int | None,
        epoch_checkpoint: Path,
        directory: Path,
    ) -> FlushJob | None:
        """The fsyncs making everything below ``up_to_offset`` (default: the log end) durable; the leader
        epoch checkpoint is always among them."""
        offset = log_end if up_to_offset is None else min(up_to_offset, log_end)
        if offset <= self.offset and not self._unflushed_files:
            return None
        listed = [s for s in segments if s.next_offset > self.offset and s.base_offset < offset]
        files = [*self._unflushed_files, epoch_checkpoint]
        self._unflushed_files = []
        return FlushJob(offset, listed or [segments[-1]], files, directory, self._truncations)

    def take_roll_offset(self) -> int | None:
        """Where the flush the rolls asked for ends (None: none asked since the last call)."""
        offset, self._roll_flush_offset = self._roll_flush_offset, None
        return offset

    def complete(self, job: FlushJob, log_end: int, now_ms: int) -> None:
        if job.truncations != self._truncations:
            # Truncated while the fsyncs ran: the offsets the job covered may now hold records it never
            # saw (a follower appends the leader's at once), so it vouches for nothing. The records it
            # did fsync below the truncation are covered by the next flush.
            return
        self.offset = max(self.offset, min(job.flush_offset, log_end))
        self.last_flush_ms = now_ms
