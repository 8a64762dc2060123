"""Offset and time index files: lookups, truncation, reload and sanity checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from odradek.storage.errors import CorruptIndexError
from odradek.storage.index import OffsetIndex, TimeIndex


def test_offset_index_lookup_finds_largest_entry_at_or_below(tmp_path: Path) -> None:
    index = OffsetIndex(tmp_path / "x.index", 100, 1024)
    for offset, position in [(104, 0), (110, 500), (130, 1200)]:
        index.append(offset, position)
    assert index.lookup(99) == (100, 0)  # below the first entry: the segment start
    assert index.lookup(104) == (104, 0)
    assert index.lookup(109) == (104, 0)
    assert index.lookup(129) == (110, 500)
    assert index.lookup(10_000) == (130, 1200)
    assert index.upper_bound_offset(501) == 130
    assert index.upper_bound_offset(1201) is None


def test_offset_index_file_is_kafka_format_and_reloads(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000100.index"
    index = OffsetIndex(path, 100, 1024)
    index.append(105, 4096)
    index.close()
    assert path.read_bytes() == (5).to_bytes(4, "big") + (4096).to_bytes(4, "big")
    again = OffsetIndex.load(path, 100, 1024, log_size=5000)
    assert again.lookup(200) == (105, 4096)
    assert again.entries == 1


def test_offset_index_truncate_and_full(tmp_path: Path) -> None:
    index = OffsetIndex(tmp_path / "x.index", 0, 24)  # room for 3 entries
    for i in range(3):
        index.append(i * 10, i * 100)
    assert index.is_full
    index.truncate_to(10)
    assert index.entries == 1 and not index.is_full
    index.release()
    assert (tmp_path / "x.index").stat().st_size == 8
    with pytest.raises(ValueError):
        index.append(0, 500)


def test_offset_index_entries_reach_the_file_when_flushed_and_truncation_cuts_the_file(
    tmp_path: Path,
) -> None:
    path = tmp_path / "00000000000000000000.index"
    index = OffsetIndex(path, 0, 1024)
    for i in range(4):
        index.append(i * 10, i * 100)
    assert path.stat().st_size == 0  # kept in memory until a flush, release or close
    index.flush()
    assert path.stat().st_size == 32
    index.append(40, 400)
    index.truncate_to(20)  # below what the file holds: cut at once, the unwritten entry dropped
    assert path.stat().st_size == 16 and index.entries == 2
    index.append(25, 250)
    index.close()
    again = OffsetIndex.load(path, 0, 1024, log_size=1000)
    assert again.entries == 3 and again.lookup(29) == (25, 250)


def test_offset_index_sanity_check_rejects_garbage(tmp_path: Path) -> None:
    path = tmp_path / "x.index"
    path.write_bytes(b"\x00" * 7)
    with pytest.raises(CorruptIndexError):
        OffsetIndex.load(path, 0, 1024, log_size=100)
    path.write_bytes((0).to_bytes(4, "big") + (900).to_bytes(4, "big"))
    with pytest.raises(CorruptIndexError):  # points past the end of the segment
        OffsetIndex.load(path, 0, 1024, log_size=100)


def test_time_index_lookup_and_monotonic_appends(tmp_path: Path) -> None:
    index = TimeIndex(tmp_path / "x.timeindex", 50, 1200)
    index.maybe_append(1000, 55)
    index.maybe_append(900, 60)  # not larger: ignored
    index.maybe_append(2000, 70)
    assert index.entries == 2
    assert index.lookup(999) == (-1, 50)
    assert index.lookup(1500) == (1000, 55)
    assert index.lookup(5000) == (2000, 70)
    assert index.last_entry == (2000, 70)
    index.close()
    raw = (tmp_path / "x.timeindex").read_bytes()
    assert raw[:12] == (1000).to_bytes(8, "big") + (5).to_bytes(4, "big")
    again = TimeIndex.load(tmp_path / "x.timeindex", 50, 1200)
    again.truncate_to(60)
    assert again.last_entry == (1000, 55)


def test_time_index_keeps_a_slot_for_the_roll_entry(tmp_path: Path) -> None:
    index = TimeIndex(tmp_path / "x.timeindex", 0, 36)  # 3 entries
    index.maybe_append(1, 1)
    index.maybe_append(2, 2)
    assert index.is_full
    index.maybe_append(3, 3, skip_full_check=True)
    assert index.entries == 3


def test_entries_appended_while_another_thread_flushes_all_reach_the_file(tmp_path: Path) -> None:
    """Appends run on the event loop while a flush job writes the unwritten entries from a worker thread."""
    import threading

    path = tmp_path / "00000000000000000000.index"
    index = OffsetIndex(path, 0, 10 * 1024 * 1024)
    done = threading.Event()

    def flusher() -> None:
        while not done.is_set():
            index.write_unwritten()

    thread = threading.Thread(target=flusher)
    thread.start()
    try:
        for i in range(20_000):
            index.append(i, i * 10)
    finally:
        done.set()
        thread.join()
    index.close()
    again = OffsetIndex.load(path, 0, 10 * 1024 * 1024, log_size=200_000)
    assert again.entries == 20_000 and again.lookup(12_345) == (12_345, 123_450)
