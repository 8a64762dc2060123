"""Compaction: last value per key, tombstones after delete.retention.ms, lags, ratio, swaps."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from odradek.storage.cleaner import compact, install_cleaning, plan_cleaning, run_cleaning
from odradek.storage.config import LogConfig
from odradek.storage.errors import LogStorageError
from odradek.storage.log import Log
from odradek.storage.producer_state import AppendOrigin

from .helpers import START_MS, FakeClock, batch, marker, read_records

COMPACT = LogConfig(segment_bytes=400, cleanup_policy=("compact",), delete_retention_ms=1000)


def _kv(log: Log) -> list[tuple[int, bytes | None, bytes | None]]:
    return [(r.offset, r.key, r.value) for r in read_records(log, log.log_start_offset)]


def _produce(log: Log, pairs: list[tuple[bytes, bytes | None]], timestamp: int = START_MS) -> None:
    for key, value in pairs:
        log.append(batch([(key, value)], timestamp=timestamp))


def test_keeps_last_value_per_key_with_offsets_preserved(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "t-0", COMPACT, clock=FakeClock())
    _produce(log, [(b"k%d" % (i % 4), b"v%d" % i) for i in range(40)])
    log.roll()
    result = compact(log)
    assert result is not None and result.records_removed == 36
    assert _kv(log) == [(36, b"k0", b"v36"), (37, b"k1", b"v37"), (38, b"k2", b"v38"), (39, b"k3", b"v39")]
    assert log.log_end_offset == 40
    assert log.cleaner_checkpoint == 40
    assert not any(n.endswith((".cleaned", ".swap", ".deleted")) for n in os.listdir(tmp_path / "t-0"))
    log.append(batch([(b"k0", b"later")]))
    assert _kv(log)[-1] == (40, b"k0", b"later")


def test_active_segment_is_never_cleaned(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "t-0", COMPACT, clock=FakeClock())
    _produce(log, [(b"k", b"v%d" % i) for i in range(3)])  # all in the active segment
    assert compact(log, force=True) is None
    assert len(_kv(log)) == 3


def test_tombstones_go_after_delete_retention(tmp_path: Path) -> None:
    clock = FakeClock()
    log = Log.open(tmp_path / "t-0", COMPACT, clock=clock)
    _produce(log, [(b"a", b"1"), (b"b", b"2"), (b"a", None), (b"c", b"3")])
    log.roll()
    compact(log)
    assert _kv(log) == [(1, b"b", b"2"), (2, b"a", None), (3, b"c", b"3")]  # kept: consumers see the delete
    assert log.latest_delete_horizon == clock.now + 1000
    clock.advance(500)
    assert compact(log) is None  # nothing dirty, horizon not reached
    clock.advance(600)
    assert plan_cleaning(log) is not None  # the horizon alone makes the log cleanable
    compact(log)
    assert _kv(log) == [(1, b"b", b"2"), (3, b"c", b"3")]
    assert log.latest_delete_horizon is None


def test_min_compaction_lag_keeps_young_segments(tmp_path: Path) -> None:
    clock = FakeClock()
    config = LogConfig(segment_bytes=400, cleanup_policy=("compact",), min_compaction_lag_ms=10_000)
    log = Log.open(tmp_path / "t-0", config, clock=clock)
    _produce(log, [(b"k", b"v%d" % i) for i in range(10)], timestamp=clock.now)
    log.roll()
    assert compact(log, force=True) is None
    clock.advance(10_001)
    compact(log, force=True)
    assert [v for _, _, v in _kv(log)] == [b"v9"]


def test_dirty_ratio_gates_cleaning(tmp_path: Path) -> None:
    config = LogConfig(segment_bytes=400, cleanup_policy=("compact",), min_cleanable_dirty_ratio=0.9)
    log = Log.open(tmp_path / "t-0", config, clock=FakeClock())
    _produce(log, [(b"k%d" % i, b"v") for i in range(20)])
    log.roll()
    compact(log)  # everything dirty: ratio 1.0
    _produce(log, [(b"k0", b"w")])
    log.roll()
    assert plan_cleaning(log) is None  # a little dirty data next to lots of clean data
    assert compact(log, force=True) is not None


def test_max_compaction_lag_cleans_a_log_below_the_dirty_ratio(tmp_path: Path) -> None:
    clock = FakeClock()
    config = LogConfig(
        segment_bytes=400,
        cleanup_policy=("compact",),
        min_cleanable_dirty_ratio=0.9,
        max_compaction_lag_ms=60_000,
    )
    log = Log.open(tmp_path / "t-0", config, clock=clock)
    _produce(log, [(b"k%d" % i, b"v") for i in range(20)], timestamp=clock.now)
    log.roll()
    compact(log)
    _produce(log, [(b"k0", b"w")], timestamp=clock.now)
    log.roll()
    assert plan_cleaning(log) is None  # below the ratio, and not overdue yet
    clock.advance(60_001)
    assert plan_cleaning(log) is not None  # the oldest dirty record waited longer than the lag


def test_max_compaction_lag_rolls_the_active_segment_of_a_compacted_topic(tmp_path: Path) -> None:
    """Kafka's LogConfig.maxSegmentMs: a compacted topic rolls at min(max.compaction.lag.ms, segment.ms),
    since the cleaner never cleans the active segment; it rolled at segment.ms only (a week by default),
    keeping superseded records far past the lag the topic promises."""
    clock = FakeClock()
    config = LogConfig(cleanup_policy=("compact",), max_compaction_lag_ms=60_000)
    log = Log.open(tmp_path / "t-0", config, clock=clock)
    log.append(batch([(b"k", b"v1")], timestamp=clock.now))
    clock.advance(60_001)
    log.append(batch([(b"k", b"v2")], timestamp=clock.now))
    assert [s.base_offset for s in log.segments] == [0, 1]
    deleting = Log.open(tmp_path / "d-0", LogConfig(max_compaction_lag_ms=60_000), clock=clock)
    deleting.append(batch([b"a"], timestamp=clock.now))
    clock.advance(60_001)
    deleting.append(batch([b"b"], timestamp=clock.now))
    assert len(deleting.segments) == 1  # not compacted: the lag means nothing, segment.ms rules


def test_aborted_transactions_are_removed_and_markers_kept(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "t-0", COMPACT, clock=FakeClock())
    log.append(
        batch([(b"k", b"committed")], producer_id=1, producer_epoch=0, base_sequence=0, transactional=True)
    )
    log.append(marker(commit=True, producer_id=1), origin=AppendOrigin.COORDINATOR)
    log.append(
        batch([(b"k", b"aborted")], producer_id=2, producer_epoch=0, base_sequence=0, transactional=True)
    )
    log.append(marker(commit=False, producer_id=2), origin=AppendOrigin.COORDINATOR)
    log.roll()
    compact(log, force=True)
    assert [(k, v) for _, k, v in _kv(log)] == [(b"k", b"committed")]
    assert log.log_end_offset == 4


def test_cleaning_interrupted_before_install_is_discarded_or_completed(tmp_path: Path) -> None:
    clock = FakeClock()
    log = Log.open(tmp_path / "t-0", COMPACT, clock=clock)
    _produce(log, [(b"k%d" % (i % 2), b"v%d" % i) for i in range(20)])
    log.roll()
    plan = plan_cleaning(log)
    assert plan is not None
    result = run_cleaning(plan)
    swaps = [n for n in os.listdir(tmp_path / "t-0") if n.endswith(".swap")]
    assert swaps
    # crash now: the .swap files are complete, so the next open finishes the swap
    reopened = Log.open(tmp_path / "t-0", COMPACT, clock=clock)
    assert [v for _, _, v in _kv(reopened)] == [b"v18", b"v19"]
    assert not any(n.endswith(".swap") for n in os.listdir(tmp_path / "t-0"))
    assert reopened.log_end_offset == 20
    del result


def test_install_is_refused_when_retention_changed_the_log(tmp_path: Path) -> None:
    clock = FakeClock()
    log = Log.open(tmp_path / "t-0", COMPACT, clock=clock)
    _produce(log, [(b"k%d" % i, b"v") for i in range(20)])
    log.roll()
    plan = plan_cleaning(log)
    assert plan is not None
    result = run_cleaning(plan)
    log.delete_records(log.segments[1].base_offset)
    for segment in log.delete_old_segments():
        segment.delete_files()
    replaced = install_cleaning(log, result)
    assert len(result.groups) > 1
    assert len(replaced) == len(result.groups) - 1  # the first group's segment is gone: not installed
    assert log.cleaner_checkpoint is None  # so the checkpoint does not move either
    assert not any(n.endswith(".swap") for n in os.listdir(tmp_path / "t-0"))
    assert next(k for _, k, _ in _kv(log)) == b"k%d" % log.log_start_offset


def test_crash_in_the_middle_of_a_swap_is_completed(tmp_path: Path) -> None:
    clock = FakeClock()
    log = Log.open(tmp_path / "t-0", COMPACT, clock=clock)
    _produce(log, [(b"k%d" % (i % 2), b"v%d" % i) for i in range(20)])
    log.roll()
    plan = plan_cleaning(log)
    assert plan is not None
    result = run_cleaning(plan)
    # the install renamed the first group's originals to .deleted, then the process died
    for segment in result.groups[0].old:
        segment.change_suffix(".deleted")
    (tmp_path / "t-0" / "00000000000000000099.log.cleaned").write_bytes(b"half-written")
    reopened = Log.open(tmp_path / "t-0", COMPACT, clock=clock)
    assert [v for _, _, v in _kv(reopened)] == [b"v18", b"v19"]
    names = os.listdir(tmp_path / "t-0")
    assert not any(n.endswith((".swap", ".deleted", ".cleaned")) for n in names)


def test_cleaning_never_writes_into_a_recreated_partition_dir(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "t-0", COMPACT, clock=FakeClock())
    _produce(log, [(b"k", b"v%d" % i) for i in range(20)])
    log.roll()
    plan = plan_cleaning(log)
    assert plan is not None
    (tmp_path / "t-0").rename(tmp_path / "t-0.0123456789abcdef0123456789abcdef-delete")
    (tmp_path / "t-0").mkdir()  # the topic was deleted and created again meanwhile
    with pytest.raises(LogStorageError):
        run_cleaning(plan)
    assert os.listdir(tmp_path / "t-0") == []


@pytest.mark.parametrize("how", ["truncated", "started over"])
def test_records_written_again_after_a_truncation_below_the_cleaner_checkpoint_are_compacted(
    tmp_path: Path, how: str
) -> None:
    """A follower cut its compacted log below the cleaner checkpoint and took the new leader's records
    there: the checkpoint still said everything below 40 was clean, so they were never compacted (Kafka's
    truncations lower it to the active segment's base, LogManager.truncateTo)."""
    log = Log.open(tmp_path / "t-0", COMPACT, clock=FakeClock())
    _produce(log, [(b"k%d" % (i % 4), b"v%d" % i) for i in range(40)])
    log.roll()
    assert compact(log) is not None and log.cleaner_checkpoint == 40
    if how == "truncated":
        log.truncate_to(20)
    else:
        log.truncate_fully_and_start_at(20)
    assert log.log_end_offset == 20
    _produce(log, [(b"x", b"again-%d" % i) for i in range(20)])
    log.roll()
    assert compact(log) is not None
    assert [entry for entry in _kv(log) if entry[1] == b"x"] == [(39, b"x", b"again-19")]
