"""A directory's fsync (the renames and creations in it made durable): a disk error is an error.

files.fsync_dir swallowed every OSError, EIO and ENOSPC included, so a checkpoint whose rename never
reached the disk counted as written. Kafka's Utils.flushDir throws what the fsync throws; only its
flushDirIfExists lets a directory that is gone pass (a log's, renamed for its deletion meanwhile).
What a file system that cannot fsync a directory at all answers is no error: there is nothing to
make durable there."""

from __future__ import annotations

import errno
import os
import stat
import uuid
from pathlib import Path

import pytest

from odradek.storage import cleaner
from odradek.storage.cleaner import plan_cleaning, run_cleaning
from odradek.storage.config import LogConfig
from odradek.storage.files import atomic_write, fsync_dir
from odradek.storage.flush import FlushJob
from odradek.storage.log import Log
from odradek.storage.log_manager import LogManager

from .helpers import FakeClock, batch


def _failing_directory_fsyncs(monkeypatch: pytest.MonkeyPatch, code: int) -> list[str]:
    """os.fsync fails with `code` on directories; returns the paths it failed on."""
    real = os.fsync
    failed: list[str] = []

    def fsync(fd: int) -> None:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            failed.append(os.readlink(f"/proc/self/fd/{fd}"))
            raise OSError(code, os.strerror(code))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return failed


@pytest.mark.parametrize("code", [errno.EIO, errno.ENOSPC, errno.EDQUOT])
def test_a_disk_error_fsyncing_a_directory_is_raised_not_taken_for_a_sync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    _failing_directory_fsyncs(monkeypatch, code)
    with pytest.raises(OSError) as raised:
        fsync_dir(tmp_path)
    assert raised.value.errno == code
    with pytest.raises(OSError):
        atomic_write(tmp_path / "checkpoint", b"0\n0\n")  # renamed into place, not durably


@pytest.mark.parametrize("code", [errno.EINVAL, errno.ENOTSUP, errno.EROFS])
def test_a_file_system_that_cannot_fsync_a_directory_is_not_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    failed = _failing_directory_fsyncs(monkeypatch, code)
    fsync_dir(tmp_path)
    assert failed == [str(tmp_path)]


def test_a_missing_directory_is_an_error_unless_the_caller_expects_it_gone(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        fsync_dir(tmp_path / "gone")
    fsync_dir(tmp_path / "gone", missing_ok=True)


def test_a_flush_lets_the_directory_of_a_log_renamed_for_deletion_meanwhile_go(tmp_path: Path) -> None:
    """As Kafka's LocalLog.flush (flushDirIfExists): the log is being deleted, nothing to keep."""
    FlushJob(0, [], [], tmp_path / "t-0").run()


def test_a_flush_fails_on_a_disk_error_fsyncing_the_log_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _failing_directory_fsyncs(monkeypatch, errno.EIO)
    with pytest.raises(OSError):
        FlushJob(0, [], [], tmp_path).run()


def test_a_topic_deletion_whose_log_dir_fsync_failed_keeps_its_mark_and_takes_the_dir_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The renames to `-delete` must be on disk before the deletion's mark goes (a crash would bring the
    partition back with its records and no mark to finish it). The fsync's error raised out of a job
    that must never raise; swallowed, the mark went with the renames maybe not on disk. As Kafka, the
    failed fsync takes the dir offline (it was retried at every retention check); the next start
    finishes the deletion."""
    manager = LogManager([tmp_path / "data"], LogConfig(), clock=FakeClock())
    manager.startup()
    manager.save_topic("gone", uuid.uuid4(), 1)
    manager.get_or_create_log("gone", 0).append(batch([b"x"]))
    manager.deletions.mark_topic_deleted("gone")
    job = manager.deletions.take_topic_deletion("gone")
    failed = _failing_directory_fsyncs(monkeypatch, errno.EIO)
    job.run()  # logs the failure, raises nothing
    manager.deletions.complete_topic_deletion(job)
    assert failed and manager.deletions.is_topic_being_deleted("gone")
    assert manager.topic_store.deleting() != {}
    monkeypatch.undo()
    assert manager.offline_log_dirs == [tmp_path / "data"]
    assert manager.deletions.unfinished_topic_deletions() == []
    manager.shutdown()
    again = LogManager([tmp_path / "data"], LogConfig(), clock=FakeClock())
    again.startup()
    assert not again.deletions.is_topic_being_deleted("gone") and again.get_log("gone", 0) is None


def test_a_cleaning_whose_directory_fsync_failed_leaves_no_swap_file_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cleaned segments are renamed `.swap` (complete: a restart installs them), then the directory
    is fsynced. When that fails the cleaning fails (the broker logs it and cleans again later): its
    `.swap` files must not stay, open, for a restart to install over what was cleaned since."""
    compacted = LogConfig(segment_bytes=400, cleanup_policy=("compact",), delete_retention_ms=1000)
    log = Log.open(tmp_path / "t-0", compacted, clock=FakeClock())
    for i in range(20):
        log.append(batch([(b"k%d" % (i % 2), b"v%d" % i)]))
    log.roll()
    plan = plan_cleaning(log)
    assert plan is not None

    def failing(directory: Path, *, missing_ok: bool = False) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(cleaner, "fsync_dir", failing)
    with pytest.raises(OSError):
        run_cleaning(plan)
    assert not [name for name in os.listdir(tmp_path / "t-0") if name.endswith((".swap", ".cleaned"))]
    log.close()
