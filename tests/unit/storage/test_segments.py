"""Segment rolling and index-driven reads through the Log."""

from __future__ import annotations

import os
from pathlib import Path

from odradek.protocol.records import iter_record_batches
from odradek.storage.config import LogConfig
from odradek.storage.log import Log

from .helpers import START_MS, FakeClock, batch, open_log, read_records, values


def test_segment_files_use_kafka_names(tmp_path: Path) -> None:
    log = open_log(tmp_path / "orders-0", FakeClock())
    log.append(batch([b"x"]))
    names = sorted(os.listdir(tmp_path / "orders-0"))
    assert "00000000000000000000.log" in names
    assert "00000000000000000000.index" in names
    assert "00000000000000000000.timeindex" in names
    assert log.topic_partition == ("orders", 0)


def test_roll_by_size(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", FakeClock(), segment_bytes=300)
    size = len(batch([b"a" * 50]))
    for _ in range(10):
        log.append(batch([b"a" * 50]))
    per_segment = 300 // size
    assert len(log.segments) == -(-10 // per_segment)
    assert all(s.size <= 300 for s in log.segments)
    assert [s.base_offset for s in log.segments] == list(range(0, 10, per_segment))
    assert values(read_records(log)) == [b"a" * 50] * 10


def test_roll_by_time_uses_record_timestamps_and_jitter(tmp_path: Path) -> None:
    clock = FakeClock()
    log = open_log(tmp_path / "t-0", clock, segment_ms=1000)
    log.append(batch(timestamp=START_MS))
    log.append(batch(timestamp=START_MS + 1000))  # exactly segment.ms later: not yet
    assert len(log.segments) == 1
    log.append(batch(timestamp=START_MS + 1001))
    assert [s.base_offset for s in log.segments] == [0, 2]
    # jitter shortens a segment's life by at most segment.jitter.ms
    jittered = open_log(tmp_path / "j-0", clock, segment_ms=1000, segment_jitter_ms=500)
    assert 0 <= jittered.active_segment.roll_jitter_ms < 500


def test_roll_by_wall_clock_without_timestamps(tmp_path: Path) -> None:
    clock = FakeClock()
    log = open_log(tmp_path / "t-0", clock, segment_ms=1000)
    log.append(batch(timestamp=-1))
    clock.advance(1001)
    log.append(batch(timestamp=-1))
    assert len(log.segments) == 2


def test_roll_when_index_is_full(tmp_path: Path) -> None:
    # index.interval.bytes 0 puts an entry for every append after the first; 3 entries fit in 24 bytes.
    log = open_log(tmp_path / "t-0", FakeClock(), segment_index_bytes=24, index_interval_bytes=0)
    for _ in range(10):
        log.append(batch())
    assert len(log.segments) > 1
    assert all(s.offset_index.entries <= 3 for s in log.segments)
    assert values(read_records(log)) == [b"v"] * 10


def test_index_entries_follow_index_interval(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", FakeClock(), index_interval_bytes=200)
    size = len(batch([b"p" * 40]))
    for _ in range(20):
        log.append(batch([b"p" * 40]))
    index = log.active_segment.offset_index
    assert 0 < index.entries < 20
    # each entry names a batch's last offset and where that batch starts
    for offset in range(20):
        entry = index.lookup(offset)
        assert entry.offset <= max(offset, 0) and entry.position % size == 0
        assert entry.position // size == entry.offset or entry.position == 0


def test_read_from_middle_of_batch_returns_whole_batch(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", FakeClock(), index_interval_bytes=1)
    for i in range(5):
        log.append(batch([b"%d-%d" % (i, j) for j in range(4)]))
    info = log.read(9, 1 << 20)
    batches = list(iter_record_batches(info.read_bytes()))
    assert batches[0].base_offset == 8  # the batch holding offset 9
    assert [b.base_offset for b in batches] == [8, 12, 16]
    assert values(read_records(log, 9))[0] == b"2-1"


def test_max_bytes_and_min_one_message(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", FakeClock())
    big = batch([b"x" * 1000])
    log.append(big)
    log.append(batch([b"y"]))
    info = log.read(0, 10)
    assert info.size == len(big)  # one whole batch even though larger than max_bytes
    incomplete = log.read(0, 10, min_one_message=False)
    assert incomplete.size == 0 and incomplete.first_entry_incomplete
    cut = log.read(0, len(big) + 5)
    assert cut.size == len(big)  # the second batch does not fit: left out whole, not cut short
    assert [b.base_offset for b in iter_record_batches(cut.read_bytes())] == [0]


def test_size_limited_reads_end_on_a_batch_boundary(tmp_path: Path) -> None:
    """Every limit, from inside the first batch to past the end, gives whole batches only, as many as
    fit, across index entries (one per ~200 bytes here) and from any starting offset."""
    log = open_log(tmp_path / "t-0", FakeClock(), index_interval_bytes=200)
    sizes = []
    for i in range(40):
        data = batch([b"v" * (i % 7 * 13)] * (1 + i % 3))
        sizes.append(len(data))
        log.append(data)
    assert log.segments[0].offset_index.entries > 5
    starts = [sum(sizes[:i]) for i in range(len(sizes) + 1)]
    for first in (0, 7, 23):
        base = starts[first]
        offset = sum(1 + i % 3 for i in range(first))  # the first record of batch `first`
        for limit in range(1, starts[-1] - base + 50, 17):
            info = log.read(offset, limit, min_one_message=False)
            fitting = [s - base for s in starts[first:] if s - base <= limit]
            assert info.size == fitting[-1], (first, limit)
            got = list(iter_record_batches(info.read_bytes()))
            assert len(got) == len(fitting) - 1
            assert info.first_entry_incomplete == (len(fitting) == 1)


def test_reads_never_pass_the_high_watermark(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "t-0", LogConfig(), clock=FakeClock(), auto_high_watermark=False)
    for _ in range(3):
        log.append(batch())
    assert log.high_watermark == 0
    assert log.read(0, 1 << 20).size == 0
    log.update_high_watermark(2)
    assert [r.offset for r in read_records(log)] == [0, 1]
    from odradek.storage.fetch import FetchIsolation

    assert [r.offset for r in read_records(log, isolation=FetchIsolation.LOG_END)] == [0, 1, 2]
    assert log.update_high_watermark(99) == 3  # clamped to the log end


def test_region_is_sendfile_ready(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", FakeClock())
    data = batch([b"hello"])
    log.append(data)
    (region,) = log.read(0, 100).regions
    assert region.path.name == "00000000000000000000.log"
    assert os.pread(region.fd, region.length, region.position) == bytes(data)


def test_inactive_segments_keep_one_open_file(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", FakeClock(), segment_bytes=200)
    for _ in range(12):
        log.append(batch([b"z" * 40]))
    assert len(log.segments) >= 4

    def open_files() -> list[str]:
        targets = []
        for fd in os.listdir("/proc/self/fd"):
            try:
                targets.append(os.readlink(f"/proc/self/fd/{fd}"))
            except OSError:  # the fd that listed the directory is already closed
                continue
        return [t for t in targets if t.startswith(str(tmp_path))]

    files = open_files()
    assert len([f for f in files if f.endswith(".log")]) == len(log.segments)
    assert len([f for f in files if f.endswith((".index", ".timeindex"))]) <= 2


def test_a_preallocated_segment_takes_segment_bytes_on_disk_until_it_rolls(tmp_path: Path) -> None:
    clock = FakeClock()
    log = open_log(tmp_path / "t-0", clock, segment_bytes=1 << 20, preallocate=True)
    log.append(batch([b"a"]))
    first = tmp_path / "t-0" / "00000000000000000000.log"
    assert first.stat().st_size == 1 << 20  # Kafka's initFileSize
    log.roll()
    assert first.stat().st_size == log.segments[0].size  # trimmed to what it holds
    log.append(batch([b"b"]))
    assert values(read_records(log)) == [b"a", b"b"]


def test_a_preallocated_segment_is_recovered_after_a_crash(tmp_path: Path) -> None:
    clock = FakeClock()
    config = LogConfig(segment_bytes=1 << 20, preallocate=True)
    log = Log.open(tmp_path / "t-0", config, clock=clock)
    log.append(batch([b"a"]))
    log.append(batch([b"b"]))
    # no close: the file still has its preallocated zeros past the records, as after a crash
    again = Log.open(tmp_path / "t-0", config, clock=clock)
    assert again.log_end_offset == 2
    assert values(read_records(again)) == [b"a", b"b"]
    again.append(batch([b"c"]))
    assert values(read_records(again)) == [b"a", b"b", b"c"]
