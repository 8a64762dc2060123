"""Truncation for replication: a follower cuts its log back to where it agrees with the leader.

As in Kafka, truncating to an offset inside a batch removes that whole batch, and the log end offset
becomes the requested offset. Producer state is rebuilt by replaying the remaining batch headers
(snapshots past the new end are gone), which reads the whole log: truncation is rare.
"""

from __future__ import annotations

from odradek.storage.log_loader import replay_producer_state
from odradek.storage.log_view import WritableLog
from odradek.storage.producer_recovery import delete_snapshots_below
from odradek.storage.segment import LogSegment


def truncate_to(log: WritableLog, offset: int) -> list[LogSegment]:
    if offset >= log.log_end_offset:
        # A leader may have assigned an epoch it never wrote in: drop it all the same.
        log.leader_epoch_cache.truncate_from_end(log.log_end_offset)
        return []
    if offset <= log.segments[0].base_offset:
        return truncate_fully_and_start_at(log, offset)
    removed = log.remove_segments(log.segments[log.segment_index_for(offset) + 1 :])
    segment = log.active_segment
    segment.truncate_to(offset)
    segment.next_offset = max(offset, segment.base_offset)
    log.leader_epoch_cache.truncate_from_end(offset)
    _lower_cleaner_checkpoint(log)  # before reset_offsets: the checkpoint job it makes due writes it
    log.reset_offsets(
        log_start_offset=min(log.log_start_offset, offset), recovery_point=min(log.recovery_point, offset)
    )
    state = log.producer_state
    state.truncate_fully_and_start_at(log.log_start_offset)
    delete_snapshots_below(log.dir, 2**63 - 1)
    replay_producer_state(log.segments, state, None, log.log_start_offset, log.log_end_offset)
    state.map_end_offset = log.log_end_offset
    log.update_high_watermark(min(log.high_watermark, offset))
    return removed


def truncate_fully_and_start_at(log: WritableLog, offset: int) -> list[LogSegment]:
    removed = log.replace_all_segments(lambda: LogSegment.create(log.dir, offset, log.config, log.clock()))
    log.leader_epoch_cache.clear()
    log.producer_state.truncate_fully_and_start_at(offset)
    delete_snapshots_below(log.dir, 2**63 - 1)
    _lower_cleaner_checkpoint(log)
    log.reset_offsets(log_start_offset=offset, recovery_point=offset)
    log.update_high_watermark(offset)
    return removed


def _lower_cleaner_checkpoint(log: WritableLog) -> None:
    # What is written again past the cut was never compacted: a checkpoint above it would call it
    # clean for good (Kafka lowers it to the active segment's base in LogManager.truncateTo too).
    base = log.active_segment.base_offset
    if log.cleaner_checkpoint is not None and log.cleaner_checkpoint > base:
        log.cleaner_checkpoint = base
