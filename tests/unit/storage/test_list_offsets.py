"""ListOffsets: timestamps inside batches, earliest, latest, max timestamp, isolation bounds."""

from __future__ import annotations

from pathlib import Path

from odradek.storage.config import LogConfig
from odradek.storage.fetch import FetchIsolation
from odradek.storage.log import Log
from odradek.storage.offsets_by_time import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP

from .helpers import START_MS, FakeClock, batch, open_log


def _log_with_timestamps(tmp_path: Path) -> Log:
    log = open_log(tmp_path / "t-0", FakeClock(), segment_bytes=400, index_interval_bytes=1)
    # records inside a batch are not in timestamp order: the search must look at each of them
    log.append(batch([b"a", b"b", b"c"], timestamps=[START_MS + 10, START_MS + 30, START_MS + 20]))
    log.append(batch([b"d", b"e"], timestamps=[START_MS + 40, START_MS + 50]))
    for i in range(6):
        timestamps = [START_MS + 100 + i * 10, START_MS + 105 + i * 10]
        log.append(batch([b"f%d" % i, b"g%d" % i], timestamps=timestamps))
    return log


def test_offset_for_timestamp_finds_first_record_at_or_after(tmp_path: Path) -> None:
    log = _log_with_timestamps(tmp_path)
    assert len(log.segments) > 1
    found = log.fetch_offset_by_timestamp(START_MS + 25)
    assert found is not None and (found.offset, found.timestamp) == (1, START_MS + 30)
    found = log.fetch_offset_by_timestamp(START_MS + 20)
    assert found is not None and found.offset == 1  # offset 1 (ts +30) comes before offset 2 (ts +20)
    found = log.fetch_offset_by_timestamp(START_MS + 45)
    assert found is not None and (found.offset, found.timestamp) == (4, START_MS + 50)
    found = log.fetch_offset_by_timestamp(START_MS + 131)
    assert found is not None and (found.offset, found.timestamp) == (12, START_MS + 135)
    assert found.leader_epoch == 0
    assert log.fetch_offset_by_timestamp(START_MS + 10_000) is None
    first = log.fetch_offset_by_timestamp(0)
    assert first is not None and first.offset == 0


def test_earliest_latest_and_max_timestamp(tmp_path: Path) -> None:
    log = _log_with_timestamps(tmp_path)
    earliest = log.fetch_offset_by_timestamp(EARLIEST_TIMESTAMP)
    latest = log.fetch_offset_by_timestamp(LATEST_TIMESTAMP)
    assert earliest is not None and (earliest.offset, earliest.timestamp) == (0, -1)
    assert latest is not None and latest.offset == log.log_end_offset == 17
    biggest = log.fetch_offset_by_timestamp(MAX_TIMESTAMP)
    assert biggest is not None and (biggest.timestamp, biggest.offset) == (START_MS + 155, 16)


def test_max_timestamp_is_the_record_not_the_batch(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", FakeClock())
    log.append(batch([b"a", b"b", b"c"], timestamps=[START_MS + 5, START_MS + 9, START_MS + 1]))
    log.append(batch([b"d"], timestamps=[START_MS + 2]))
    biggest = log.fetch_offset_by_timestamp(MAX_TIMESTAMP)
    assert biggest is not None and (biggest.timestamp, biggest.offset) == (START_MS + 9, 1)


def test_isolation_bounds_latest_and_searches(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "t-0", LogConfig(), clock=FakeClock(), auto_high_watermark=False)
    log.append(batch([b"a", b"b"], timestamps=[START_MS, START_MS + 10]))
    log.update_high_watermark(1)
    latest = log.fetch_offset_by_timestamp(LATEST_TIMESTAMP, FetchIsolation.HIGH_WATERMARK)
    assert latest is not None and latest.offset == 1
    assert log.fetch_offset_by_timestamp(START_MS + 5, FetchIsolation.HIGH_WATERMARK) is None
    assert log.fetch_offset_by_timestamp(START_MS + 5) is not None


def test_log_append_time_topics_stamp_the_broker_time(tmp_path: Path) -> None:
    clock = FakeClock()
    log = open_log(tmp_path / "t-0", clock, message_timestamp_type="LogAppendTime")
    clock.advance(5000)
    result = log.append(batch([b"a", b"b"], timestamp=START_MS))
    assert result.log_append_time == START_MS + 5000
    found = log.fetch_offset_by_timestamp(START_MS + 4000)
    assert found is not None and (found.offset, found.timestamp) == (0, START_MS + 5000)
    create_time = open_log(tmp_path / "c-0", clock)
    assert create_time.append(batch()).log_append_time == -1
