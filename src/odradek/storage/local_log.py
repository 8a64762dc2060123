"""LocalLog: a log's segments in its directory, their recovery point and the I/O errors they raise.

As Kafka's LocalLog under its UnifiedLog: the ordered segments and the base offsets they are found by,
segments leaving the log (renamed ``*.deleted``) or swapped for a compacted one, the recovery point that
flushes move, the directory's rename and the log dir failure an I/O error in it becomes. ``Log``
(log.py) extends it with the log start offset, the high watermark, producer state and leader epochs;
nothing here knows of those, so the segment list changes in one place whatever asks for them.
"""

from __future__ import annotations

import logging
import os
from bisect import bisect_right
from collections.abc import Callable, Sequence
from pathlib import Path

from odradek.storage.config import LogConfig
from odradek.storage.files import DELETED_SUFFIX, Clock
from odradek.storage.flush import FlushJob, RecoveryPoint
from odradek.storage.log_dir_failure import LogDirFailures
from odradek.storage.producer_recovery import delete_snapshots_below
from odradek.storage.segment import LogSegment

_log = logging.getLogger(__name__)


class LocalLog:
    """The segments of one partition directory, oldest first (the last one active)."""

    def __init__(
        self,
        directory: Path,
        config: LogConfig,
        segments: list[LogSegment],
        recovery_point: int,
        clock: Clock,
        failures: LogDirFailures | None,
    ) -> None:
        self.dir = directory
        self.config = config
        self.clock = clock
        self._segments = segments
        self._bases = [s.base_offset for s in segments]
        self._recovery_point = RecoveryPoint(recovery_point, clock())
        self._failures = failures

    @property
    def log_end_offset(self) -> int:
        return self._segments[-1].next_offset

    @property
    def recovery_point(self) -> int:
        return self._recovery_point.offset

    @property
    def failures(self) -> LogDirFailures | None:
        """Where an I/O error in the log's dir is reported (None in tools and tests)."""
        return self._failures

    @property
    def segments(self) -> Sequence[LogSegment]:
        """The segments, oldest first: a live view (no copy), so do not hold it across log changes."""
        return self._segments

    @property
    def active_segment(self) -> LogSegment:
        return self._segments[-1]

    @property
    def size_in_bytes(self) -> int:
        return sum(s.size for s in self._segments)

    def segment_index_for(self, offset: int) -> int:
        """Index in ``segments`` of the segment that would hold ``offset`` (the first one if below)."""
        return max(bisect_right(self._bases, offset) - 1, 0)

    # -- segments leaving and entering the log ---------------------------------------------------

    def remove_segments(self, segments: Sequence[LogSegment]) -> list[LogSegment]:
        """Take ``segments`` out of the log and rename their files ``*.deleted`` (for retention)."""
        gone = {id(s) for s in segments}
        self._set_segments([s for s in self._segments if id(s) not in gone])
        failure: OSError | None = None
        for segment in segments:
            try:
                segment.change_suffix(DELETED_SUFFIX)
            except OSError as error:  # out of the log all the same: unlinked later by the names it has
                failure = failure or error
        try:
            delete_snapshots_below(self.dir, self._segments[0].base_offset)
        except OSError as error:  # an old snapshot left behind goes at the next call
            _log.warning("could not delete producer snapshots in %s: %s", self.dir, error)
        if failure is not None and self._failures is not None:
            # As Kafka's deleteSegmentFiles, the dir failed: a start before the segment is unlinked
            # would load it again, its records back below the log start. The segments are returned
            # all the same (out of the log: closed, and unlinked by the names they have).
            self._failures.mark_offline(self.dir.parent, failure)
        elif failure is not None:
            _log.warning("could not rename segments in %s to .deleted: %s", self.dir, failure)
        return list(segments)

    def replace_all_segments(self, make_segment: Callable[[], LogSegment]) -> list[LogSegment]:
        """Rename every segment ``*.deleted`` (returned), then make ``make_segment()`` the only one
        (created after the renames, so it may reuse a base offset)."""
        old = list(self._segments)
        for gone in old:
            gone.change_suffix(DELETED_SUFFIX)
        self._set_segments([make_segment()])
        return old

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

    def _add_segment(self, segment: LogSegment) -> None:
        """A new active segment at the log end (a roll)."""
        self._segments.append(segment)
        self._bases.append(segment.base_offset)

    def _set_segments(self, segments: list[LogSegment]) -> None:
        self._segments = segments
        self._bases = [s.base_offset for s in segments]

    # -- flushes, the directory, I/O errors ------------------------------------------------------

    @property
    def unflushed_messages(self) -> int:
        return self.log_end_offset - self._recovery_point.offset

    def flush_needed(self) -> bool:
        """Whether ``flush.messages`` or ``flush.ms`` asks for an fsync now."""
        config = self.config
        return self._recovery_point.flush_needed(
            self.log_end_offset, config.flush_messages, config.flush_ms, self.clock()
        )

    def complete_flush(self, job: FlushJob) -> None:
        """Move the recovery point over what ``job`` fsynced (nothing if truncated meanwhile)."""
        self._recovery_point.complete(job, self.log_end_offset, self.clock())

    def rename_dir(self, new_dir: Path) -> None:
        """Move the partition directory (deletion renames it ``-delete``; call once the log is out of
        service). Open files keep serving in-flight reads; later closes and unlinks use the new paths."""
        os.rename(self.dir, new_dir)
        self.dir = new_dir
        for segment in self._segments:
            segment.moved_to(new_dir)

    def _dir_failed(self, error: OSError) -> None:
        """An I/O error in the log's dir: as Kafka, the whole dir goes offline, and this raises the
        LogStorageError (KAFKA_STORAGE_ERROR to clients); without a channel (tests, tools) it returns
        and the OSError goes on as it is."""
        if self._failures is not None:
            raise self._failures.mark_offline(self.dir.parent, error) from error
