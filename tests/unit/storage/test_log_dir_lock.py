"""The `.lock` of each log dir: held by one LogDirLocks at a time, given up on release or on a failed
acquire (flock is per open file, so a second acquire in this process conflicts as another process would)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from odradek.storage.errors import LogStorageError
from odradek.storage.log_dir_lock import LOCK_FILE_NAME, LogDirLockedError, LogDirLocks


def test_second_lock_on_a_log_dir_is_refused_while_the_first_is_held(tmp_path: Path) -> None:
    first = LogDirLocks.acquire([tmp_path / "data"])
    try:
        with pytest.raises(
            LogDirLockedError, match=re.escape(f"Failed to acquire lock on file .lock in {tmp_path / 'data'}")
        ):
            LogDirLocks.acquire([tmp_path / "data"])
    finally:
        first.release()
    assert (tmp_path / "data" / LOCK_FILE_NAME).exists()


def test_log_dir_can_be_locked_again_once_released(tmp_path: Path) -> None:
    LogDirLocks.acquire([tmp_path / "data"]).release()
    LogDirLocks.acquire([tmp_path / "data"]).release()


def test_failed_acquire_gives_up_the_dirs_it_had_locked(tmp_path: Path) -> None:
    held = LogDirLocks.acquire([tmp_path / "b"])
    try:
        with pytest.raises(LogDirLockedError):
            LogDirLocks.acquire([tmp_path / "a", tmp_path / "b"])
        LogDirLocks.acquire([tmp_path / "a"]).release()  # "a" was not left locked
    finally:
        held.release()


def test_log_dir_that_cannot_be_created_is_named(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(
        LogStorageError, match=re.escape(f"data directory {tmp_path / 'file' / 'data'}: Not a directory")
    ):
        LogDirLocks.acquire([tmp_path / "file" / "data"])


def test_log_dir_listed_twice_is_named_as_a_duplicate_not_as_locked(tmp_path: Path) -> None:
    with pytest.raises(LogStorageError, match="Duplicate log directory found") as refused:
        LogDirLocks.acquire([tmp_path / "data", tmp_path / "other" / ".." / "data"])
    assert not isinstance(refused.value, LogDirLockedError)


def test_a_log_dir_that_cannot_be_used_is_offline_when_another_can_be(tmp_path: Path) -> None:
    """As Kafka 3.9's createAndValidateLogDirs: the broker starts with that dir offline."""
    (tmp_path / "broken").write_text("")  # a file where the dir should be
    locks = LogDirLocks.acquire([tmp_path / "a", tmp_path / "broken"])
    try:
        assert list(locks.offline) == [tmp_path / "broken"]
        assert "is not a directory" in str(locks.offline[tmp_path / "broken"])
        with pytest.raises(LogDirLockedError):
            LogDirLocks.acquire([tmp_path / "a"])  # the usable one is held
    finally:
        locks.release()


def test_the_first_log_dir_must_be_usable_as_it_holds_the_brokers_own_metadata(tmp_path: Path) -> None:
    (tmp_path / "broken").write_text("")
    with pytest.raises(LogStorageError, match="first log dir"):
        LogDirLocks.acquire([tmp_path / "broken", tmp_path / "a"])
    LogDirLocks.acquire([tmp_path / "a"]).release()  # not left locked


def test_a_log_dir_whose_meta_properties_cannot_be_read_starts_offline_when_another_can_be_used(
    tmp_path: Path,
) -> None:
    """Kafka 3.9's MetaPropertiesEnsemble.Loader puts a log dir whose meta.properties it cannot read
    among its error dirs, which the LogManager starts offline. It stopped the whole start."""
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "meta.properties").write_bytes(b"\xff\xfe\x00\x01\x80")
    locks = LogDirLocks.acquire([tmp_path / "a", tmp_path / "b"])
    try:
        assert list(locks.offline) == [tmp_path / "b"]
        assert "meta.properties" in str(locks.offline[tmp_path / "b"])
    finally:
        locks.release()


def test_an_unreadable_meta_properties_in_the_first_log_dir_stops_the_start(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "meta.properties").write_text("version=0\nbroker.id=x\ncluster.id=c\n")
    with pytest.raises(LogStorageError, match=r"meta\.properties"):
        LogDirLocks.acquire([tmp_path / "a", tmp_path / "b"])
    LogDirLocks.acquire([tmp_path / "b"]).release()  # not left locked
