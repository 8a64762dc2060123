"""A log dir that fails (an I/O error in it) goes offline alone, as Kafka's LogDirFailureChannel and
LogManager.handleLogDirFailure: its partitions leave the manager, the other dirs keep serving."""

from __future__ import annotations

import errno
import os
import uuid
from pathlib import Path

import pytest

from odradek.storage.checkpoint_jobs import CheckpointWriteError
from odradek.storage.config import LogConfig
from odradek.storage.errors import LogStorageError
from odradek.storage.files import CLEAN_SHUTDOWN_MARKER, DELETED_SUFFIX, RECOVERY_POINT_CHECKPOINT
from odradek.storage.log import Log
from odradek.storage.log_manager import LogManager
from odradek.storage.partition import TopicPartition
from odradek.storage.segment import LogSegment
from odradek.storage.stray_logs import JudgedByLeaderAndIsr, JudgedByTopicStore, StrayLogRule

from .helpers import FakeClock, batch, led_alone


def _two_dirs(tmp_path: Path, failed: list[Path]) -> LogManager:
    manager = LogManager(
        [tmp_path / "d1", tmp_path / "d2"],
        LogConfig(),
        clock=FakeClock(),
        on_log_dir_failure=failed.append,
    )
    manager.startup()
    return manager


def _break(log_dir: Path) -> None:
    """The disk under ``log_dir`` is gone: a file stands where the directory was (open files still
    write to the old inodes, as a failing disk lets some writes through)."""
    log_dir.rename(log_dir.with_name(log_dir.name + ".gone"))
    log_dir.write_bytes(b"")


def test_a_roll_failing_in_one_log_dir_takes_that_dir_offline_and_the_other_keeps_serving(
    tmp_path: Path,
) -> None:
    failed: list[Path] = []
    manager = _two_dirs(tmp_path, failed)
    first = led_alone(manager.get_or_create_log("t", 0))
    second = led_alone(manager.get_or_create_log("t", 1))
    assert first.dir.parent != second.dir.parent
    first.append(batch())
    _break(first.dir.parent)

    with pytest.raises(LogStorageError):
        first.roll()
    with pytest.raises(LogStorageError):
        first.roll()  # told once

    assert failed == [first.dir.parent]
    assert manager.offline_log_dirs == [first.dir.parent]
    assert manager.handle_log_dir_failure(first.dir.parent) == [TopicPartition("t", 0)]
    assert manager.get_log("t", 0) is None
    assert manager.live_log_dirs == [second.dir.parent]
    second.append(batch())
    second.roll()
    assert second.log_end_offset == 1


def test_a_partition_of_a_failed_log_dir_is_not_made_again_in_another(tmp_path: Path) -> None:
    failed: list[Path] = []
    manager = _two_dirs(tmp_path, failed)
    first = led_alone(manager.get_or_create_log("t", 0))
    first.append(batch())
    _break(first.dir.parent)
    with pytest.raises(LogStorageError):
        first.roll()
    manager.handle_log_dir_failure(first.dir.parent)

    with pytest.raises(LogStorageError, match="offline"):
        manager.get_or_create_log("t", 0)
    made = manager.get_or_create_log("t", 5)  # a new partition goes to a live dir
    assert made.dir.parent == manager.live_log_dirs[0]


def test_a_failed_checkpoint_write_names_only_its_log_dir_and_the_others_are_written(
    tmp_path: Path,
) -> None:
    failed: list[Path] = []
    manager = _two_dirs(tmp_path, failed)
    first = led_alone(manager.get_or_create_log("t", 0))
    second = led_alone(manager.get_or_create_log("t", 1))
    second.append(batch())
    second.flush()
    _break(first.dir.parent)
    (second.dir.parent / RECOVERY_POINT_CHECKPOINT).unlink(missing_ok=True)

    with pytest.raises(CheckpointWriteError) as raised:
        manager.flushes.prepare_checkpoint().run()

    assert raised.value.log_dirs == [first.dir.parent]
    assert (second.dir.parent / RECOVERY_POINT_CHECKPOINT).exists()
    manager.log_dir_failed(first.dir.parent, raised.value)
    assert failed == [first.dir.parent]


def test_the_checkpoints_skip_a_log_dir_once_it_is_offline(tmp_path: Path) -> None:
    failed: list[Path] = []
    manager = _two_dirs(tmp_path, failed)
    first = led_alone(manager.get_or_create_log("t", 0))
    manager.get_or_create_log("t", 1)
    first.append(batch())
    _break(first.dir.parent)
    with pytest.raises(LogStorageError):
        first.roll()
    manager.handle_log_dir_failure(first.dir.parent)

    manager.flushes.prepare_checkpoint().run()  # raises nothing: the failed dir is not written
    manager.shutdown()


def test_a_log_dir_offline_at_start_is_not_loaded_and_takes_no_new_partition(tmp_path: Path) -> None:
    failed: list[Path] = []
    broken = tmp_path / "d2"
    broken.write_bytes(b"")
    manager = LogManager(
        [tmp_path / "d1", broken], LogConfig(), clock=FakeClock(), on_log_dir_failure=failed.append
    )
    manager.log_dir_failed(broken, NotADirectoryError(20, "Not a directory"))
    manager.ensure_meta_properties(1)
    manager.startup()
    assert manager.handle_log_dir_failure(broken) == []
    assert {manager.get_or_create_log("t", p).dir.parent for p in range(3)} == {tmp_path / "d1"}
    manager.flushes.prepare_checkpoint().run()
    manager.shutdown()
    assert failed == [broken]


def test_a_failed_write_after_a_truncation_takes_the_log_dir_offline(tmp_path: Path) -> None:
    """Kafka's truncateTo: the checkpoint it writes failing is a failed dir, not one partition's fault."""
    failed: list[Path] = []
    manager = _two_dirs(tmp_path, failed)
    first = led_alone(manager.get_or_create_log("t", 0))
    first.append(batch([b"a", b"b"]))
    first.truncate_to(1)
    _break(first.dir.parent)
    with pytest.raises(LogStorageError):
        manager.flushes.prepare_truncation_checkpoint().run()
    assert failed == [first.dir.parent]


def test_an_io_error_loading_a_log_dir_at_start_takes_it_offline_and_the_others_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kafka's LogManager.loadLogs: an IOException loading a dir's logs (a segment or an index that
    cannot be read while recovering) takes that dir offline and the broker starts with the others; it
    stopped the whole start."""
    failed: list[Path] = []
    manager = _two_dirs(tmp_path, failed)
    manager.save_topic("t", uuid.uuid4(), 2)
    first = led_alone(manager.get_or_create_log("t", 0))
    second = led_alone(manager.get_or_create_log("t", 1))
    first.append(batch())
    second.append(batch())
    manager.shutdown()
    broken = second.dir.parent
    opened: list[Log] = []
    open_log = Log.open

    def failing_open(cls: type[Log], directory: Path, *args: object, **kwargs: object) -> Log:
        if directory.parent == broken:
            raise OSError(errno.EIO, "Input/output error")
        log = open_log(directory, *args, **kwargs)  # type: ignore[arg-type]
        opened.append(log)
        return log

    monkeypatch.setattr(Log, "open", classmethod(failing_open))
    again = LogManager(
        [tmp_path / "d1", tmp_path / "d2"], LogConfig(), clock=FakeClock(), on_log_dir_failure=failed.append
    )
    again.startup()

    assert failed == [broken]
    assert again.handle_log_dir_failure(broken) == []
    loaded = again.get_log("t", 0)
    assert loaded is not None and loaded.log_end_offset == 1
    assert again.mark_missing_offline("t", [0, 1]) == [1]  # never made again empty in the live dir
    assert again.live_log_dirs == [first.dir.parent]


def _two_epochs(manager: LogManager) -> Log:
    """A log with epoch 0 at offset 0 and epoch 1 at offset 1 (a leader-epoch checkpoint to rewrite)."""
    log = led_alone(manager.get_or_create_log("t", 0))
    log.append(batch(), leader_epoch=0)
    log.append(batch(), leader_epoch=1)
    return log


def test_a_follower_truncation_that_cannot_write_its_epochs_takes_the_log_dir_offline(tmp_path: Path) -> None:
    """Kafka's UnifiedLog.truncateTo is under maybeHandleIOException: a bare OSError out of it reached
    the replica fetcher's loop, which took it for the leader's connection failing and tried again
    forever, the dir online."""
    failed: list[Path] = []
    manager = _two_dirs(tmp_path, failed)
    log = _two_epochs(manager)
    _break(log.dir.parent)
    with pytest.raises(LogStorageError):
        log.truncate_to(1)
    assert failed == [log.dir.parent]


def test_delete_records_that_cannot_write_the_epochs_takes_the_log_dir_offline(tmp_path: Path) -> None:
    """Kafka's maybeIncrementLogStartOffset, under maybeHandleIOException: the epochs before the new
    log start are dropped from the checkpoint, which could not be written."""
    failed: list[Path] = []
    manager = _two_dirs(tmp_path, failed)
    log = _two_epochs(manager)
    _break(log.dir.parent)
    with pytest.raises(LogStorageError):
        log.delete_records(1)
    assert failed == [log.dir.parent]


def test_starting_over_at_the_leaders_log_start_takes_the_log_dir_offline_when_it_cannot_write(
    tmp_path: Path,
) -> None:
    failed: list[Path] = []
    manager = _two_dirs(tmp_path, failed)
    log = _two_epochs(manager)
    _break(log.dir.parent)
    with pytest.raises(LogStorageError):
        log.truncate_fully_and_start_at(5)
    assert failed == [log.dir.parent]


def test_a_segment_retention_cannot_rename_takes_the_log_dir_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kafka's deleteSegmentFiles renames under maybeHandleIOException. The failed rename was logged,
    the dir online, the segment under its own name until file.delete.delay.ms: a start meanwhile
    loaded it again, its records back below the log start."""
    failed: list[Path] = []
    manager = LogManager(
        [tmp_path / "d1", tmp_path / "d2"],
        LogConfig(segment_bytes=100, retention_ms=1000),
        clock=(clock := FakeClock()),
        on_log_dir_failure=failed.append,
    )
    manager.startup()
    log = led_alone(manager.get_or_create_log("t", 0))
    for _ in range(3):
        log.append(batch())
    log.roll()
    change_suffix = LogSegment.change_suffix

    def failing(segment: LogSegment, new_suffix: str) -> None:
        if new_suffix == DELETED_SUFFIX:
            raise OSError(errno.EIO, "Input/output error")
        change_suffix(segment, new_suffix)

    monkeypatch.setattr(LogSegment, "change_suffix", failing)
    clock.advance(2000)
    manager.cleanup_logs()
    assert failed == [log.dir.parent]


def test_a_partition_that_cannot_be_made_in_a_log_dir_takes_that_dir_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kafka's getOrCreateLog: an IOException creating a log takes its dir offline. The failed
    creation was undone and answered, the dir online: every later partition placed there failed too."""
    failed: list[Path] = []
    manager = _two_dirs(tmp_path, failed)
    manager.get_or_create_log("t", 0)  # d1 holds one: the next goes to d2
    second_dir = tmp_path / "d2"
    open_log = Log.open

    def failing_open(cls: type[Log], directory: Path, *args: object, **kwargs: object) -> Log:
        if directory.parent == second_dir:
            raise OSError(errno.EIO, "Input/output error")
        return open_log(directory, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Log, "open", classmethod(failing_open))
    job = manager.prepare_partitions("t", [1])
    assert job.directories[1].parent == second_dir
    with pytest.raises(LogStorageError):
        job.run()
    assert failed == [second_dir]
    assert not job.directories[1].exists()


def test_a_log_dir_failing_at_shutdown_leaves_the_others_closed_cleanly(tmp_path: Path) -> None:
    """Kafka's LogManager.shutdown closes each dir's logs apart and writes the clean shutdown marker
    of each dir whose logs all closed. One log failing to close stopped the whole shutdown: no other
    log flushed or closed, no marker anywhere, every dir recovered at the next start."""
    failed: list[Path] = []
    manager = _two_dirs(tmp_path, failed)
    first = led_alone(manager.get_or_create_log("t", 0))
    second = led_alone(manager.get_or_create_log("t", 1))
    first.append(batch())
    second.append(batch())
    _break(first.dir.parent)

    manager.shutdown()

    assert failed == [first.dir.parent]
    assert (second.dir.parent / CLEAN_SHUTDOWN_MARKER).exists()
    assert second.active_segment.closed


def _strays(single_node: bool) -> StrayLogRule:
    return JudgedByTopicStore() if single_node else JudgedByLeaderAndIsr()


def _two_dirs_with_a_partition_each(tmp_path: Path, single_node: bool) -> tuple[Path, Path]:
    """Two log dirs, ``t-0`` in the first and ``t-1`` in the second, one record each, shut down."""
    manager = LogManager(
        [tmp_path / "d1", tmp_path / "d2"], LogConfig(), clock=FakeClock(), strays=_strays(single_node)
    )
    manager.startup()
    manager.save_topic("t", uuid.uuid4(), 2)
    first = led_alone(manager.get_or_create_log("t", 0))
    second = led_alone(manager.get_or_create_log("t", 1))
    assert first.dir.parent != second.dir.parent
    first.append(batch())
    second.append(batch())
    manager.shutdown()
    return first.dir.parent, second.dir.parent


def _start_again(tmp_path: Path, failed: list[Path], single_node: bool) -> LogManager:
    manager = LogManager(
        [tmp_path / "d1", tmp_path / "d2"],
        LogConfig(),
        clock=FakeClock(),
        strays=_strays(single_node),
        on_log_dir_failure=failed.append,
    )
    manager.startup()
    return manager


@pytest.mark.parametrize(
    "checkpoint",
    [
        "recovery-point-offset-checkpoint",
        "log-start-offset-checkpoint",
        "replication-offset-checkpoint",
        "cleaner-offset-checkpoint",
    ],
)
def test_an_unreadable_offset_checkpoint_in_one_of_two_log_dirs_takes_that_dir_offline_and_the_other_loads(
    tmp_path: Path, checkpoint: str
) -> None:
    """Kafka reads a log dir's checkpoints through CheckpointFileWithFailureHandler: a malformed one is
    an IOException there, which takes that dir offline; the broker starts with the others. It stopped
    the whole start."""
    first_dir, second_dir = _two_dirs_with_a_partition_each(tmp_path, single_node=True)
    (second_dir / checkpoint).write_bytes(b"0\n1\nt x 5\n")
    failed: list[Path] = []
    again = _start_again(tmp_path, failed, single_node=True)

    assert failed == [second_dir]
    assert again.handle_log_dir_failure(second_dir) == []
    loaded = again.get_log("t", 0)
    assert loaded is not None and loaded.log_end_offset == 1
    assert again.mark_missing_offline("t", [0, 1]) == [1]
    assert again.live_log_dirs == [first_dir]
    again.shutdown()


@pytest.mark.parametrize("single_node", [True, False])
def test_an_unreadable_partition_metadata_at_start_takes_its_log_dir_offline_and_the_other_loads(
    tmp_path: Path, single_node: bool
) -> None:
    """Kafka's PartitionMetadataFile.read fails with an IOException for a malformed file: its log dir
    goes offline (read while the log loads). It stopped the whole start."""
    first_dir, second_dir = _two_dirs_with_a_partition_each(tmp_path, single_node=single_node)
    (second_dir / "t-1" / "partition.metadata").write_bytes(b"version: 0\ntopic_id: not-an-id\n")
    failed: list[Path] = []
    again = _start_again(tmp_path, failed, single_node=single_node)

    assert failed == [second_dir]
    again.handle_log_dir_failure(second_dir)
    loaded = again.get_log("t", 0)
    assert loaded is not None and loaded.log_end_offset == 1
    assert again.get_log("t", 1) is None
    assert again.live_log_dirs == [first_dir]
    again.shutdown()


def test_an_unreadable_offset_checkpoint_in_the_first_log_dir_still_stops_the_start(tmp_path: Path) -> None:
    """odradek keeps its own metadata (the topic store) in the first log dir: no start without it."""
    first_dir, _ = _two_dirs_with_a_partition_each(tmp_path, single_node=True)
    (first_dir / RECOVERY_POINT_CHECKPOINT).write_bytes(b"0\n1\nt x 5\n")
    with pytest.raises(LogStorageError, match="Error while reading checkpoint file"):
        _start_again(tmp_path, [], single_node=True)


def _failing_renames_in(monkeypatch: pytest.MonkeyPatch, log_dir: Path) -> None:
    real_rename = os.rename

    def rename(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
        if Path(source).parent == log_dir:
            raise OSError(errno.EIO, "Input/output error", str(source))
        real_rename(source, target)

    monkeypatch.setattr(os, "rename", rename)


def test_a_topic_deletion_whose_rename_fails_takes_the_log_dir_offline_instead_of_retrying_forever(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kafka's renameDir and delete run under maybeHandleIOException: an IOException takes the log
    dir offline; the deletion is not tried again there (the controller finishes it after a restart).
    odradek kept the job and retried it at every retention check, the dir online."""
    failed: list[Path] = []
    manager = _two_dirs(tmp_path, failed)
    manager.save_topic("gone", uuid.uuid4(), 2)
    first = manager.get_or_create_log("gone", 0)
    second = manager.get_or_create_log("gone", 1)
    manager.deletions.mark_topic_deleted("gone")
    job = manager.deletions.take_topic_deletion("gone")
    _failing_renames_in(monkeypatch, second.dir.parent)
    job.run()  # raises nothing
    manager.deletions.complete_topic_deletion(job)
    monkeypatch.undo()

    assert failed == [second.dir.parent]
    assert manager.deletions.unfinished_topic_deletions() == []  # not retried in the failed dir
    assert not first.dir.exists() or first.dir.name.endswith("-delete")
    assert second.segments[0].closed  # its files are let go with the dir
    # the mark stays: the next start finishes the deletion in the dir, if it is back
    assert manager.deletions.is_topic_being_deleted("gone")
    manager.handle_log_dir_failure(second.dir.parent)
    manager.shutdown()
    again = LogManager([tmp_path / "d1", tmp_path / "d2"], LogConfig(), clock=FakeClock())
    again.startup()
    assert not (second.dir.parent / "gone-1").exists()
    assert not again.deletions.is_topic_being_deleted("gone")


def test_a_partition_deletion_whose_rename_fails_takes_the_log_dir_offline_and_the_partition_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cluster member's StopReplica with delete: the replica whose rename failed answers a storage
    error and is offline with its dir, not put back to be served from a dir that failed."""
    failed: list[Path] = []
    manager = _two_dirs(tmp_path, failed)
    manager.get_or_create_log("t", 0)
    second = manager.get_or_create_log("t", 1)
    job = manager.deletions.take_partition_deletion("t", [0, 1])
    _failing_renames_in(monkeypatch, second.dir.parent)
    job.run()
    monkeypatch.undo()
    manager.handle_log_dir_failure(second.dir.parent)  # the failure handled before the completion
    manager.deletions.complete_partition_deletion(job)

    assert failed == [second.dir.parent]
    assert manager.get_log("t", 1) is None and manager.get_log("t", 0) is None
    with pytest.raises(LogStorageError, match="offline"):
        manager.get_or_create_log("t", 1)


def test_a_file_deletion_that_cannot_remove_a_segment_takes_its_log_dir_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kafka's deleteSegmentFiles runs under maybeHandleIOException: the dir goes offline. It was only
    logged, the dir online."""
    failed: list[Path] = []
    manager = _two_dirs(tmp_path, failed)
    log = led_alone(manager.get_or_create_log("t", 0))
    log.append(batch())
    log.roll()
    log.append(batch())
    log.delete_records(1)
    manager.cleanup_logs()
    real_unlink = os.unlink

    def unlink(path: str | os.PathLike[str], *args: object, **kwargs: object) -> None:
        if str(path).endswith(".deleted"):
            raise OSError(errno.EIO, "Input/output error", str(path))
        real_unlink(path, *args, **kwargs)  # type: ignore[arg-type]

    manager.clock.advance(60_001)  # type: ignore[attr-defined]
    job = manager.deletions.take_file_deletions()
    assert job.segments
    monkeypatch.setattr(os, "unlink", unlink)
    job.run()
    monkeypatch.undo()
    assert failed == [log.dir.parent]
