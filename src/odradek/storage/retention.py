"""Which segments retention may delete, by Kafka's rules.

Segments are taken oldest first while a predicate holds and stop at the first that fails. A segment is
only deletable if all of it is below the high watermark (so the log start offset never passes it), and
an empty last segment never is. Predicates: below the log start offset (always applied), over
``retention.bytes``, older than ``retention.ms`` by the segment's largest record timestamp (the file's
modification time if no record has one); the last two only for ``cleanup.policy`` including delete.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from odradek.storage.log_view import WritableLog
from odradek.storage.segment import LogSegment

Predicate = Callable[[LogSegment, "LogSegment | None"], bool]


def deletable_segments(
    segments: Sequence[LogSegment], predicate: Predicate, high_watermark: int, log_end_offset: int
) -> list[LogSegment]:
    deletable: list[LogSegment] = []
    for i, segment in enumerate(segments):
        next_segment = segments[i + 1] if i + 1 < len(segments) else None
        upper_bound = next_segment.base_offset if next_segment is not None else log_end_offset
        is_last_and_empty = next_segment is None and segment.size == 0
        if high_watermark >= upper_bound and not is_last_and_empty and predicate(segment, next_segment):
            deletable.append(segment)
        else:
            break
    return deletable


def log_start_breached(log_start_offset: int) -> Predicate:
    def predicate(segment: LogSegment, next_segment: LogSegment | None) -> bool:
        return next_segment is not None and next_segment.base_offset <= log_start_offset

    return predicate


def retention_size_breached(log_size: int, retention_bytes: int) -> Predicate | None:
    if retention_bytes < 0 or log_size < retention_bytes:
        return None
    excess = log_size - retention_bytes

    def predicate(segment: LogSegment, next_segment: LogSegment | None) -> bool:
        nonlocal excess
        if excess - segment.size >= 0:
            excess -= segment.size
            return True
        return False

    return predicate


def retention_time_breached(now_ms: int, retention_ms: int) -> Predicate | None:
    if retention_ms < 0:
        return None

    def predicate(segment: LogSegment, next_segment: LogSegment | None) -> bool:
        return now_ms - segment.largest_timestamp > retention_ms

    return predicate


def delete_old_segments(log: WritableLog) -> list[LogSegment]:
    """Apply the predicates to ``log`` in Kafka's order; see ``Log.delete_old_segments``."""
    removed = _delete(log, log_start_breached(log.log_start_offset))
    if log.config.delete:
        by_size = retention_size_breached(log.size_in_bytes, log.config.retention_bytes)
        if by_size is not None:
            removed += _delete(log, by_size)
        by_time = retention_time_breached(log.clock(), log.config.retention_ms)
        if by_time is not None:
            removed += _delete(log, by_time)
    return removed


def _delete(log: WritableLog, predicate: Predicate) -> list[LogSegment]:
    segments = log.segments
    deletable = deletable_segments(segments, predicate, log.high_watermark, log.log_end_offset)
    if not deletable:
        return []
    if len(deletable) == len(segments):
        log.roll()  # a log always keeps one segment: the new, empty active one
    log.increment_log_start_offset(log.segments[len(deletable)].base_offset)
    return log.remove_segments(deletable)
