"""Recovery after an unclean stop: torn tails, bad CRCs, missing indexes, recovery points, crashes."""

from __future__ import annotations

import os
from pathlib import Path

from odradek.storage.config import LogConfig
from odradek.storage.log import Log

from .helpers import FakeClock, batch, read_records, values

CONFIG = LogConfig(segment_bytes=400, index_interval_bytes=100)


def _reopen(directory: Path, clock: FakeClock, recovery_point: int = 0, clean: bool = False) -> Log:
    return Log.open(directory, CONFIG, clock=clock, recovery_point=recovery_point, had_clean_shutdown=clean)


def _filled(directory: Path, clock: FakeClock, count: int = 20) -> Log:
    log = Log.open(directory, CONFIG, clock=clock)
    for i in range(count):
        log.append(batch([b"value-%02d" % i]))
    return log


def test_crash_without_close_loses_nothing_acknowledged(tmp_path: Path) -> None:
    clock = FakeClock()
    log = Log.open(tmp_path / "t-0", CONFIG, clock=clock)
    acked = [log.append(batch([b"m%d" % i, b"n%d" % i])) for i in range(25)]
    # no flush, no close: the process "dies" and a new one opens the same files
    again = _reopen(tmp_path / "t-0", clock)
    assert again.log_end_offset == acked[-1].last_offset + 1
    records = read_records(again)
    assert [r.offset for r in records] == list(range(50))
    assert values(records)[-1] == b"n24"
    assert again.append(batch([b"after"])).base_offset == 50


def test_torn_tail_is_truncated(tmp_path: Path) -> None:
    clock = FakeClock()
    log = _filled(tmp_path / "t-0", clock)
    active = log.active_segment.log_path
    half = bytes(batch([b"never acknowledged" * 3]))[:30]
    with open(active, "ab") as f:
        f.write(half)
    again = _reopen(tmp_path / "t-0", clock)
    assert again.log_end_offset == 20
    assert again.active_segment.size == log.active_segment.size
    assert values(read_records(again))[-1] == b"value-19"
    assert again.append(batch([b"next"])).base_offset == 20
    with open(again.active_segment.log_path, "ab") as f:  # garbage is not a batch either
        f.write(os.urandom(200))
    assert _reopen(tmp_path / "t-0", clock).log_end_offset == 21


def test_bad_crc_mid_log_truncates_from_there(tmp_path: Path) -> None:
    clock = FakeClock()
    log = _filled(tmp_path / "t-0", clock, count=30)
    assert len(log.segments) >= 3
    victim = log.segments[1]
    batch_size = victim.size // (victim.next_offset - victim.base_offset)
    with open(victim.log_path, "r+b") as f:  # flip a byte in the value of the segment's third batch
        f.seek(2 * batch_size + batch_size - 3)
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 0xFF]))
    later = [s.log_path for s in log.segments[2:]]
    again = _reopen(tmp_path / "t-0", clock)
    assert again.log_end_offset == victim.base_offset + 2
    assert len(again.segments) == 2
    assert not any(p.exists() for p in later)
    assert [r.offset for r in read_records(again)] == list(range(victim.base_offset + 2))


def test_missing_index_files_are_rebuilt(tmp_path: Path) -> None:
    clock = FakeClock()
    log = _filled(tmp_path / "t-0", clock, count=30)
    log.flush()
    log.close()
    first = log.segments[0]
    entries = first.offset_index.entries
    for path in (first.offset_index.path, first.time_index.path):
        path.unlink()
    # even after a clean shutdown (no recovery scan), a segment without its index is recovered
    again = _reopen(tmp_path / "t-0", clock, recovery_point=30, clean=True)
    assert first.offset_index.path.exists() and first.time_index.path.exists()
    assert again.segments[0].offset_index.entries == entries
    assert again.segments[0].max_timestamp == first.max_timestamp
    assert [r.offset for r in read_records(again, 3)] == list(range(3, 30))


def test_missing_time_index_alone_is_rebuilt(tmp_path: Path) -> None:
    clock = FakeClock()
    log = _filled(tmp_path / "t-0", clock, count=30)
    log.close()
    first = log.segments[0]
    first.time_index.path.unlink()
    again = _reopen(tmp_path / "t-0", clock, recovery_point=30, clean=True)
    assert again.segments[0].max_timestamp == first.max_timestamp  # retention depends on it


def test_corrupt_index_file_is_rebuilt(tmp_path: Path) -> None:
    clock = FakeClock()
    log = _filled(tmp_path / "t-0", clock, count=30)
    log.close()
    log.segments[0].offset_index.path.write_bytes(b"\xff" * 13)
    again = _reopen(tmp_path / "t-0", clock, recovery_point=30, clean=True)
    assert [r.offset for r in read_records(again)] == list(range(30))


def test_recovery_starts_at_the_recovery_point(tmp_path: Path) -> None:
    clock = FakeClock()
    log = _filled(tmp_path / "t-0", clock, count=30)
    log.flush()
    recovery_point = log.recovery_point
    assert recovery_point == 30
    for i in range(30, 45):
        log.append(batch([b"value-%02d" % i]))
    tail = log.active_segment
    with open(tail.log_path, "ab") as f:
        f.write(b"\x00" * 50)
    # damage below the recovery point goes unnoticed: those segments are trusted
    first = log.segments[0]
    with open(first.log_path, "r+b") as f:
        f.seek(first.size - 2)
        f.write(b"!!")
    again = _reopen(tmp_path / "t-0", clock, recovery_point=recovery_point)
    assert again.log_end_offset == 45
    assert again.recovery_point == 45
    assert values(read_records(again, 30)) == [b"value-%02d" % i for i in range(30, 45)]
    # from an older recovery point the damage is found and everything after it goes
    older = _reopen(tmp_path / "t-0", clock, recovery_point=0)
    assert older.log_end_offset == first.next_offset - 1


def test_a_segment_past_the_recovery_point_torn_whole_drops_the_segments_after_it(tmp_path: Path) -> None:
    """A power loss left a segment past the recovery point zero-filled (its records never reached the
    disk) and a later one whole. Opening the segment already found it unreadable and cut it, so the
    recovery that followed found nothing more to cut in it and kept the later segments: the log came
    back with a hole where that segment's offsets were, which a follower never fetches again."""
    clock = FakeClock()
    log = _filled(tmp_path / "t-0", clock, count=30)
    assert len(log.segments) >= 3
    log.flush(log.segments[1].base_offset)
    recovery_point = log.recovery_point
    torn = log.segments[1]
    assert recovery_point == torn.base_offset
    with open(torn.log_path, "r+b") as f:
        f.write(bytes(torn.size))
    later = [s.log_path for s in log.segments[2:]]
    again = _reopen(tmp_path / "t-0", clock, recovery_point=recovery_point)
    assert again.log_end_offset == torn.base_offset
    assert not any(p.exists() for p in later)
    assert [r.offset for r in read_records(again)] == list(range(torn.base_offset))


def test_preallocated_segments_recover(tmp_path: Path) -> None:
    clock = FakeClock()
    config = LogConfig(segment_bytes=4096, preallocate=True)
    log = Log.open(tmp_path / "t-0", config, clock=clock)
    for i in range(5):
        log.append(batch([b"p%d" % i]))
    assert os.path.getsize(log.active_segment.log_path) >= 4096
    again = Log.open(tmp_path / "t-0", config, clock=clock)  # crash: trailing zeros are cut
    assert again.log_end_offset == 5
    assert again.active_segment.size == log.active_segment.size
