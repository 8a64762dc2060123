"""Retention by time and size, DeleteRecords, and deferred file deletion."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from odradek.storage.errors import OffsetOutOfRangeError
from odradek.storage.log import Log

from .helpers import START_MS, FakeClock, batch, open_log, read_records


def _fill(log: Log, count: int, timestamp: int = START_MS) -> None:
    for i in range(count):
        log.append(batch([(b"k%d" % i, b"x" * 40)], timestamp=timestamp))


def test_retention_by_time_uses_largest_timestamp(tmp_path: Path) -> None:
    clock = FakeClock()
    log = open_log(tmp_path / "t-0", clock, segment_bytes=250, retention_ms=10_000)
    _fill(log, 6, timestamp=START_MS)
    _fill(log, 3, timestamp=START_MS + 8_000)
    old_segments = [s for s in log.segments if s.max_timestamp == START_MS]
    assert len(old_segments) >= 2
    clock.advance(9_000)
    assert log.delete_old_segments() == []
    clock.advance(2_000)  # now 11 s after the first records, 3 s after the last
    removed = log.delete_old_segments()
    assert removed == old_segments
    assert log.log_start_offset == log.segments[0].base_offset
    assert all(p.name.endswith(".deleted") for s in removed for p in s.files() if p.exists())
    for segment in removed:
        segment.delete_files()
    assert not any(name.endswith(".deleted") for name in os.listdir(tmp_path / "t-0"))
    with pytest.raises(OffsetOutOfRangeError):
        log.read(0, 100)
    assert read_records(log, log.log_start_offset)[0].offset == log.log_start_offset


def test_retention_by_time_deletes_the_active_segment_by_rolling(tmp_path: Path) -> None:
    clock = FakeClock()
    log = open_log(tmp_path / "t-0", clock, retention_ms=1000)
    _fill(log, 3)
    clock.advance(5000)
    removed = log.delete_old_segments()
    assert len(removed) == 1
    assert log.log_start_offset == log.log_end_offset == 3
    assert len(log.segments) == 1 and log.active_segment.size == 0
    assert log.append(batch()).base_offset == 3


def test_retention_by_size(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", FakeClock(), segment_bytes=250, retention_bytes=500)
    _fill(log, 12)
    before = log.size_in_bytes
    removed = log.delete_old_segments()
    assert removed
    assert log.size_in_bytes <= before - sum(s.size for s in removed)
    # deleting one more segment would go below retention.bytes
    assert log.size_in_bytes - log.segments[0].size < 500 <= before


def test_compact_only_topics_ignore_time_and_size(tmp_path: Path) -> None:
    clock = FakeClock()
    log = open_log(tmp_path / "t-0", clock, segment_bytes=250, retention_ms=1, cleanup_policy=("compact",))
    _fill(log, 12)
    clock.advance(10_000)
    assert log.delete_old_segments() == []


def test_retention_stops_at_the_high_watermark(tmp_path: Path) -> None:
    clock = FakeClock()
    log = Log.open(tmp_path / "t-0", open_log(tmp_path / "x-0", clock, retention_ms=1).config, clock=clock)
    log.auto_high_watermark = False
    log.update_high_watermark(0)
    _fill(log, 3)
    clock.advance(10)
    assert log.delete_old_segments() == []


def test_delete_records_moves_log_start_then_segments_go(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", FakeClock(), segment_bytes=250)
    _fill(log, 12)
    second = log.segments[1]
    assert log.delete_records(second.base_offset + 1) == second.base_offset + 1
    assert log.log_start_offset == second.base_offset + 1
    with pytest.raises(OffsetOutOfRangeError):
        log.read(second.base_offset, 100)
    assert read_records(log, log.log_start_offset)[0].offset == second.base_offset + 1
    removed = log.delete_old_segments()  # below the log start offset, even without cleanup.policy delete
    assert removed and removed[-1].next_offset <= second.base_offset + 1
    assert log.segments[0] is second
    with pytest.raises(OffsetOutOfRangeError):
        log.delete_records(log.high_watermark + 1)
    assert log.delete_records(3) == second.base_offset + 1  # never moves backwards
