"""Partition and topic deletion: delayed removal, 249-character topics, every crash point finished."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from odradek.storage.checkpoints import read_offset_checkpoint
from odradek.storage.config import LogConfig
from odradek.storage.files import CLEAN_SHUTDOWN_MARKER, RECOVERY_POINT_CHECKPOINT
from odradek.storage.log_manager import LogManager
from odradek.storage.partition import TopicPartition, delete_dir_name, is_delete_dir_name

from .helpers import FakeClock, batch, led_alone

LONGEST_TOPIC = "t" * 249  # Kafka's longest legal topic name


def _manager(tmp_path: Path, clock: FakeClock, **config: object) -> LogManager:
    manager = LogManager([tmp_path / "data"], LogConfig(**config), clock=clock)  # type: ignore[arg-type]
    manager.startup()
    return manager


def _topic(manager: LogManager, name: str, partitions: int = 2, records: int = 40) -> None:
    """A stored topic whose partitions have index entries not yet written to their files."""
    manager.save_topic(name, uuid.uuid4(), partitions)
    for partition in range(partitions):
        log = led_alone(manager.get_or_create_log(name, partition))
        for i in range(records):
            log.append(batch([b"x" * 100, str(i).encode()]))
        assert log.active_segment.offset_index._unwritten  # what the delayed close used to reopen


def _children(manager: LogManager) -> list[str]:
    return sorted(p.name for p in manager.log_dirs[0].iterdir() if p.is_dir())


def test_deleted_partition_with_unwritten_index_entries_is_removed_after_the_delay(tmp_path: Path) -> None:
    clock = FakeClock()
    manager = _manager(tmp_path, clock, file_delete_delay_ms=1000, index_interval_bytes=50)
    _topic(manager, "gone")
    assert manager.deletions.delete_topic("gone")
    renamed = [name for name in _children(manager) if is_delete_dir_name(name)]
    assert len(renamed) == 2 and all(name.startswith("gone-") for name in renamed)

    clock.advance(1000)
    # raised FileNotFoundError: the index reopened at the old path
    manager.deletions.take_file_deletions().run()
    assert _children(manager) == []


def test_retention_still_works_for_other_topics_after_a_deletion(tmp_path: Path) -> None:
    clock = FakeClock()
    manager = _manager(
        tmp_path, clock, file_delete_delay_ms=0, index_interval_bytes=50, segment_bytes=1000, retention_ms=10
    )
    _topic(manager, "gone")
    _topic(manager, "kept", partitions=1)
    kept = manager.get_log("kept", 0)
    assert kept is not None and len(kept.segments) > 2
    manager.deletions.delete_topic("gone")

    clock.advance(60_000)
    assert manager.cleanup_logs() > 0
    manager.deletions.take_file_deletions().run()
    assert kept.log_start_offset == kept.log_end_offset
    assert not [p for p in kept.dir.iterdir() if p.name.endswith(".deleted")]
    assert _children(manager) == ["kept-0"]


def test_shutdown_right_after_a_deletion_is_clean(tmp_path: Path) -> None:
    clock = FakeClock()
    manager = _manager(tmp_path, clock, file_delete_delay_ms=60_000, index_interval_bytes=50)
    _topic(manager, "gone")
    manager.deletions.delete_topic("gone")
    manager.shutdown()  # raised FileNotFoundError before writing the marker
    assert (manager.log_dirs[0] / CLEAN_SHUTDOWN_MARKER).exists()
    assert _children(manager) == []


def test_249_character_topic_is_deleted_into_a_255_byte_directory_name(tmp_path: Path) -> None:
    clock = FakeClock()
    manager = _manager(tmp_path, clock, file_delete_delay_ms=0, index_interval_bytes=50)
    _topic(manager, LONGEST_TOPIC, partitions=11, records=3)
    assert manager.deletions.delete_topic(LONGEST_TOPIC)  # the rename failed: file name too long
    names = _children(manager)
    assert len(names) == 11 and all(is_delete_dir_name(name) and len(name) <= 255 for name in names)
    assert {name.rsplit(".", 1)[0].rsplit("-", 1)[1] for name in names} == {str(p) for p in range(11)}
    clock.advance(1)
    manager.deletions.take_file_deletions().run()
    assert _children(manager) == []
    assert LONGEST_TOPIC not in manager.topic_store.load_topics()


def test_delete_dir_name_keeps_the_topic_whole_when_it_fits() -> None:
    name = delete_dir_name(TopicPartition("orders", 12))
    assert name.startswith("orders-12.") and name.endswith("-delete") and len(name) == len("orders-12.") + 39
    long = delete_dir_name(TopicPartition(LONGEST_TOPIC, 12345))
    assert len(long) == 255 and long.startswith("t" * (255 - 46)) and "-12345." in long


def test_checkpoints_forget_a_deleted_topic(tmp_path: Path) -> None:
    manager = _manager(tmp_path, FakeClock(), index_interval_bytes=50)
    _topic(manager, "gone")
    _topic(manager, "kept", partitions=1)
    manager.flushes.prepare_checkpoint().run()
    manager.deletions.delete_topic("gone")
    # A topic created again under the name must not inherit these offsets after a crash.
    offsets = read_offset_checkpoint(manager.log_dirs[0] / RECOVERY_POINT_CHECKPOINT)
    assert set(offsets) == {TopicPartition("kept", 0)}


def test_a_checkpoint_captured_before_a_deletion_does_not_bring_the_topic_back(tmp_path: Path) -> None:
    manager = _manager(tmp_path, FakeClock(), index_interval_bytes=50)
    _topic(manager, "gone")
    periodic = manager.flushes.prepare_checkpoint()  # captured on the loop, still waiting for its thread
    manager.deletions.delete_topic("gone")
    periodic.run()
    assert read_offset_checkpoint(manager.log_dirs[0] / RECOVERY_POINT_CHECKPOINT) == {}


def test_crash_after_the_mark_is_finished_at_startup(tmp_path: Path) -> None:
    clock = FakeClock()
    manager = _manager(tmp_path, clock, index_interval_bytes=50)
    _topic(manager, "gone", partitions=3)
    _topic(manager, "kept", partitions=1)
    assert manager.deletions.mark_topic_deleted("gone")  # step 1, then the process dies

    again = _manager(tmp_path, clock)
    assert _children(again) == ["kept-0"]
    assert set(again.logs) == {TopicPartition("kept", 0)}
    assert set(again.topic_store.load_topics()) == {"kept"} and again.topic_store.deleting() == {}


def test_crash_after_some_renames_is_finished_at_startup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = FakeClock()
    manager = _manager(tmp_path, clock, index_interval_bytes=50)
    _topic(manager, "gone", partitions=3)
    manager.deletions.mark_topic_deleted("gone")
    job = manager.deletions.take_topic_deletion("gone")
    _fail_renames_of(monkeypatch, "gone-2")
    job.run()  # gone-0 and gone-1 renamed, gone-2 not (its dir taken offline): then the process dies
    assert sum(is_delete_dir_name(name) for name in _children(manager)) == 2
    assert "gone-2" in _children(manager)
    monkeypatch.undo()

    again = _manager(tmp_path, clock)
    assert _children(again) == [] and again.logs == {}
    assert again.topic_store.load_topics() == {} and again.topic_store.deleting() == {}


def test_a_failed_rename_takes_the_log_dir_offline_and_blocks_the_name_until_the_next_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As Kafka's renameDir (maybeHandleIOException): the dir goes offline and the deletion is not
    retried there; the mark stays, and the next start finishes it. It was retried at every retention
    check, the dir online."""
    clock = FakeClock()
    manager = _manager(tmp_path, clock, index_interval_bytes=50, file_delete_delay_ms=0)
    _topic(manager, "gone", partitions=2)
    manager.deletions.mark_topic_deleted("gone")
    job = manager.deletions.take_topic_deletion("gone")
    _fail_renames_of(monkeypatch, "gone-0")
    job.run()  # logs the failure, raises nothing
    manager.deletions.complete_topic_deletion(job)
    monkeypatch.undo()
    assert manager.offline_log_dirs == [tmp_path / "data"]
    assert manager.deletions.is_topic_being_deleted("gone")
    assert manager.deletions.unfinished_topic_deletions() == []

    again = _manager(tmp_path, clock)
    assert _children(again) == [] and not again.deletions.is_topic_being_deleted("gone")


def test_a_failing_file_deletion_does_not_stop_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = FakeClock()
    manager = _manager(tmp_path, clock, file_delete_delay_ms=0, index_interval_bytes=50)
    _topic(manager, "a", partitions=1)
    _topic(manager, "b", partitions=1)
    a, b = manager.get_log("a", 0), manager.get_log("b", 0)
    assert a is not None and b is not None
    manager.deletions.delete_topic("a")
    manager.deletions.delete_topic("b")
    real_close = os.close
    broken = a.segments[0].fd

    def close(fd: int) -> None:
        if fd == broken:
            raise OSError(5, "Input/output error")
        real_close(fd)

    monkeypatch.setattr(os, "close", close)
    clock.advance(1)
    manager.deletions.take_file_deletions().run()  # a's close fails: logged, b still goes
    monkeypatch.undo()
    assert _children(manager) == []
    assert b.segments[0].closed


def test_a_segment_that_cannot_be_renamed_is_still_removed_and_retention_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = FakeClock()
    manager = _manager(
        tmp_path, clock, file_delete_delay_ms=0, index_interval_bytes=50, segment_bytes=1000, retention_ms=10
    )
    _topic(manager, "a", partitions=1)
    _topic(manager, "b", partitions=1)
    a, b = manager.get_log("a", 0), manager.get_log("b", 0)
    assert a is not None and b is not None
    stuck = a.segments[0]
    _fail_renames_of(monkeypatch, stuck.log_path.name)
    clock.advance(60_000)
    manager.cleanup_logs()  # raised PermissionError: b's retention never ran, a's segments leaked
    monkeypatch.undo()
    assert a.log_start_offset == a.log_end_offset and b.log_start_offset == b.log_end_offset
    manager.deletions.take_file_deletions().run()
    assert stuck.closed and not stuck.log_path.exists()
    assert sorted(p.name for p in a.dir.iterdir() if p.name.endswith((".log", ".deleted"))) == [
        a.active_segment.log_path.name
    ]


def _fail_renames_of(monkeypatch: pytest.MonkeyPatch, dir_name: str) -> None:
    real_rename = os.rename

    def rename(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
        if Path(source).name == dir_name:
            raise PermissionError(13, "Permission denied", str(source))
        real_rename(source, target)

    monkeypatch.setattr(os, "rename", rename)
