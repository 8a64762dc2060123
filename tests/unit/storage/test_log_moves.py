"""A replica moving between log dirs (KIP-113): its future log copies the current one while the current
one takes appends, is swapped in once caught up (the current renamed -delete), follows a truncation of
the current log, and is found again at start (the copy resumes; one left by a crash in the middle of a
swap becomes the log)."""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

import pytest

from odradek.storage.config import LogConfig
from odradek.storage.errors import LogStorageError
from odradek.storage.fetch import FetchIsolation
from odradek.storage.log import Log
from odradek.storage.log_manager import LogManager
from odradek.storage.log_moves import copy_to_future
from odradek.storage.partition import TopicPartition
from odradek.storage.stray_logs import JudgedByLeaderAndIsr

from .helpers import FakeClock, batch, read_records, values


def _manager(tmp_path: Path) -> LogManager:
    manager = LogManager(
        [tmp_path / "d1", tmp_path / "d2"],
        LogConfig(segment_bytes=300),
        clock=FakeClock(),
        strays=JudgedByLeaderAndIsr(),
    )
    manager.startup()
    return manager


def _copy_until_caught_up(manager: LogManager, current: Log, future: Log) -> None:
    while copy_to_future(current, future, 200, manager.deletions.schedule_deletion):
        pass


def _all_values(log: Log) -> list[bytes | None]:
    return values(read_records(log, 0, isolation=FetchIsolation.LOG_END))


def test_a_future_log_copies_the_current_one_under_appends_and_replaces_it_with_every_record(
    tmp_path: Path,
) -> None:
    manager = _manager(tmp_path)
    current = manager.get_or_create_log("t", 0)
    for i in range(20):
        current.append(batch([f"v{i}".encode()]))
    source, target = current.dir.parent, next(d for d in manager.log_dirs if d != current.dir.parent)
    future = manager.moves.create_future_log("t", 0, target)
    assert re.fullmatch(r"t-0\.[0-9a-f]{32}-future", future.dir.name) and future.dir.parent == target
    assert manager.moves.install_future_log(future) is None
    assert manager.moves.target(TopicPartition("t", 0)) == target

    copy_to_future(current, future, 200, manager.deletions.schedule_deletion)
    for i in range(20, 30):  # produce goes on while it copies
        current.append(batch([f"v{i}".encode()]))
    _copy_until_caught_up(manager, current, future)
    assert future.log_end_offset == current.log_end_offset == 30

    new, old = manager.moves.swap(TopicPartition("t", 0))
    assert new is future and manager.get_log("t", 0) is future
    assert future.dir == target / "t-0"
    assert next(d.name for d in source.iterdir() if d.name.startswith("t-0")).endswith("-delete")
    assert _all_values(future) == [f"v{i}".encode() for i in range(30)]
    future.append(batch([b"after"]))
    assert future.log_end_offset == 31
    old.run()
    assert not [d for d in source.iterdir() if d.name.startswith("t-0")]
    manager.shutdown()

    again = _manager(tmp_path)
    moved = again.get_log("t", 0)
    assert moved is not None and moved.dir == target / "t-0" and moved.log_end_offset == 31


def test_a_truncation_of_the_current_log_truncates_its_copy(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    current = manager.get_or_create_log("t", 0)
    for i in range(10):
        current.append(batch([f"v{i}".encode()]), leader_epoch=1)
    future = manager.moves.create_future_log(
        "t", 0, next(d for d in manager.log_dirs if d != current.dir.parent)
    )
    manager.moves.install_future_log(future)
    _copy_until_caught_up(manager, current, future)
    current.truncate_to(6)  # a follower's log after a leader change
    current.append(batch([b"new"]), leader_epoch=2)
    _copy_until_caught_up(manager, current, future)
    assert _all_values(future) == [*(f"v{i}".encode() for i in range(6)), b"new"]


def test_a_move_under_way_at_start_resumes_and_one_cut_in_its_swap_is_finished(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    moving = manager.get_or_create_log("t", 0)
    swapped = manager.get_or_create_log("t", 1)
    for log in (moving, swapped):
        for i in range(5):
            log.append(batch([f"v{i}".encode()]))
    futures = {}
    for log in (moving, swapped):
        target = next(d for d in manager.log_dirs if d != log.dir.parent)
        futures[log.topic_partition] = future = manager.moves.create_future_log(
            "t", log.topic_partition.partition, target
        )
        manager.moves.install_future_log(future)
        copy_to_future(log, future, 200, manager.deletions.schedule_deletion)
    _copy_until_caught_up(manager, swapped, futures[TopicPartition("t", 1)])
    manager.shutdown()
    # a crash in the middle of t-1's swap: its current dir already renamed away
    swapped.dir.rename(swapped.dir.with_name("t-1.00000000000000000000000000000000-delete"))

    again = _manager(tmp_path)
    assert set(again.future_logs) == {TopicPartition("t", 0)}
    finished = again.get_log("t", 1)
    assert (
        finished is not None
        and finished.dir.name == "t-1"
        and _all_values(finished) == [f"v{i}".encode() for i in range(5)]
    )
    current = again.get_log("t", 0)
    future = again.future_logs[TopicPartition("t", 0)]
    assert current is not None
    _copy_until_caught_up(again, current, future)
    again.moves.swap(TopicPartition("t", 0))
    assert _all_values(future) == [f"v{i}".encode() for i in range(5)]


def test_a_copy_of_a_log_without_leader_epochs_catches_up(tmp_path: Path) -> None:
    """A current log whose leader-epoch-checkpoint lost its entries (rebuilt later, or an old log) has
    no epoch to compare: the copy must not start over at every step."""
    manager = _manager(tmp_path)
    current = manager.get_or_create_log("t", 0)
    for i in range(5):
        current.append(batch([f"v{i}".encode()]))
    current.leader_epoch_cache.truncate_from_end(0)
    assert current.latest_epoch is None
    future = manager.moves.create_future_log(
        "t", 0, next(d for d in manager.log_dirs if d != current.dir.parent)
    )
    manager.moves.install_future_log(future)
    for _ in range(20):
        copy_to_future(current, future, 200, manager.deletions.schedule_deletion)
    assert future.log_end_offset == current.log_end_offset == 5


def test_a_partial_copy_is_not_made_the_log_when_the_current_ones_dir_is_offline_at_start(
    tmp_path: Path,
) -> None:
    """A future log without a current one was always taken for a swap cut by a crash and made the
    partition's log; when the current log's dir had failed (and is offline at the next start) that
    promoted a copy that had not caught up: the partition was served from it, its later records gone.
    As Kafka, whose start never promotes a future log, it stays a future log and the partition offline."""
    manager = _manager(tmp_path)
    log = manager.get_or_create_log("t", 0)
    for i in range(20):
        log.append(batch([f"v{i}".encode()]))
    source = log.dir.parent
    target = next(d for d in manager.log_dirs if d != source)
    future = manager.moves.create_future_log("t", 0, target)
    manager.moves.install_future_log(future)
    copy_to_future(log, future, 200, manager.deletions.schedule_deletion)
    assert 0 < future.log_end_offset < log.log_end_offset  # copied in part
    manager.shutdown()

    again = LogManager(
        [tmp_path / "d1", tmp_path / "d2"],
        LogConfig(segment_bytes=300),
        clock=FakeClock(),
        strays=JudgedByLeaderAndIsr(),
    )
    again.failures.mark_offline(source, OSError("the disk is gone"))
    again.startup()
    assert again.get_log("t", 0) is None
    assert again.is_offline("t", 0) and not again.future_logs
    assert future.dir.is_dir()  # kept: with the dir back, the copy resumes
    again.shutdown()


def test_a_deleted_partition_whose_future_log_cannot_be_renamed_takes_the_future_dir_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kafka's asyncDelete of a future log renames it under maybeHandleIOException: an IOException takes
    its dir offline. The OSError went out of the deletion on the event loop: the topic, marked
    deleted, kept its logs in the manager and was never deleted until a restart."""
    failed: list[Path] = []
    manager = LogManager(
        [tmp_path / "d1", tmp_path / "d2"],
        LogConfig(segment_bytes=300),
        clock=FakeClock(),
        strays=JudgedByLeaderAndIsr(),
        on_log_dir_failure=failed.append,
    )
    manager.startup()
    current = manager.get_or_create_log("t", 0)
    target = next(d for d in manager.log_dirs if d != current.dir.parent)
    future = manager.moves.create_future_log("t", 0, target)
    manager.moves.install_future_log(future)
    real_rename = os.rename

    def rename(source: str | os.PathLike[str], destination: str | os.PathLike[str]) -> None:
        if Path(source).parent == target:
            raise OSError(errno.EIO, "Input/output error", str(source))
        real_rename(source, destination)

    monkeypatch.setattr(os, "rename", rename)
    job = manager.deletions.take_partition_deletion("t", [0])  # raised OSError
    job.run()
    monkeypatch.undo()
    manager.deletions.complete_partition_deletion(job)
    assert failed == [target]
    assert manager.future_logs == {} and manager.get_log("t", 0) is None
    assert future.segments[0].closed


def _failing_renames_from(monkeypatch: pytest.MonkeyPatch, log_dir: Path) -> None:
    real_rename = os.rename

    def rename(source: str | os.PathLike[str], destination: str | os.PathLike[str]) -> None:
        if Path(source).parent == log_dir:
            raise OSError(errno.EIO, "Input/output error", str(source))
        real_rename(source, destination)

    monkeypatch.setattr(os, "rename", rename)


def _caught_up_move(tmp_path: Path, failed: list[Path]) -> tuple[LogManager, Log, Log]:
    manager = LogManager(
        [tmp_path / "d1", tmp_path / "d2"],
        LogConfig(segment_bytes=300),
        clock=FakeClock(),
        strays=JudgedByLeaderAndIsr(),
        on_log_dir_failure=failed.append,
    )
    manager.startup()
    current = manager.get_or_create_log("t", 0)
    for i in range(5):
        current.append(batch([f"v{i}".encode()]))
    target = next(d for d in manager.log_dirs if d != current.dir.parent)
    future = manager.moves.create_future_log("t", 0, target)
    manager.moves.install_future_log(future)
    _copy_until_caught_up(manager, current, future)
    return manager, current, future


def test_a_swap_whose_future_log_cannot_take_the_name_keeps_the_current_log_whole_and_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kafka's replaceCurrentWithFutureLog renames under maybeHandleIOException: the failing dir goes
    offline. The current log was left renamed -delete while it served (the next start removed it, its
    records only in the failed dir's copy) and that dir stayed online."""
    failed: list[Path] = []
    manager, current, future = _caught_up_move(tmp_path, failed)
    source, target = current.dir.parent, future.dir.parent
    _failing_renames_from(monkeypatch, target)
    with pytest.raises(LogStorageError):
        manager.moves.swap(TopicPartition("t", 0))
    monkeypatch.undo()
    assert failed == [target]
    assert manager.get_log("t", 0) is current and current.dir == source / "t-0"
    manager.handle_log_dir_failure(target)
    assert manager.future_logs == {} and future.segments[0].closed
    manager.shutdown()
    again = _manager(tmp_path)
    kept = again.get_log("t", 0)
    assert kept is not None and kept.dir == source / "t-0" and kept.log_end_offset == 5


def test_a_swap_whose_current_log_cannot_be_renamed_takes_its_dir_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    failed: list[Path] = []
    manager, current, future = _caught_up_move(tmp_path, failed)
    _failing_renames_from(monkeypatch, current.dir.parent)
    with pytest.raises(LogStorageError):
        manager.moves.swap(TopicPartition("t", 0))
    monkeypatch.undo()
    assert failed == [current.dir.parent]
    assert manager.handle_log_dir_failure(current.dir.parent) == [TopicPartition("t", 0)]
    assert manager.future_logs == {} and future.segments[0].closed
