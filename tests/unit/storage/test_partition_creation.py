"""PartitionCreationJob: new partitions made by ``run`` (a worker thread's part), installed only by
``complete_partitions``, with one fsync per directory, and undone whole when a file operation fails."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from odradek.storage.checkpoints import read_partition_metadata
from odradek.storage.config import LogConfig
from odradek.storage.errors import LogStorageError
from odradek.storage.log import Log
from odradek.storage.log_manager import LogManager
from odradek.storage.topic_store import TopicRecord
from tests.support.fsync_gate import FsyncGate

from .helpers import FakeClock, batch


def _manager(*log_dirs: Path) -> LogManager:
    manager = LogManager(list(log_dirs), LogConfig(), clock=FakeClock())
    manager.startup()
    return manager


def test_partitions_are_installed_only_on_completion_with_one_fsync_per_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manager = _manager(tmp_path)
    topic_id = uuid.uuid4()
    record = TopicRecord("t", topic_id, 50, 1, {"cleanup.policy": "compact"})
    job = manager.prepare_partitions("t", range(50), topic_id=topic_id, record=record)
    gate = FsyncGate()
    monkeypatch.setattr(os, "fsync", gate)
    job.run()
    assert manager.get_log("t", 0) is None and manager.topic_store.load_topics()["t"] == record
    assert len(manager.complete_partitions(job)) == 50

    log = manager.get_log("t", 7)
    assert log is not None and log.config.compact and read_partition_metadata(log.dir) == topic_id
    assert log.append(batch([(b"k", b"v")])).base_offset == 0
    paths = [call.path for call in gate.calls]
    # The topics file and its dir; per partition three small files then the partition dir; the log dir.
    assert len(paths) == 2 + 4 * 50 + 1
    assert paths[-1] == str(tmp_path)
    for partition in range(50):
        directory = str(tmp_path / f"t-{partition}")
        mine = [i for i, path in enumerate(paths) if path.startswith(directory + "/") or path == directory]
        assert len(mine) == 4 and paths[mine[-1]] == directory  # the dir's fsync after its files'


def test_partitions_spread_over_log_dirs_within_one_job(tmp_path: Path) -> None:
    manager = _manager(tmp_path / "d1", tmp_path / "d2")
    manager.get_or_create_log("old", 0)  # d1 holds one partition already
    job = manager.prepare_partitions("t", range(3))
    assert [d.parent.name for d in job.directories.values()] == ["d2", "d1", "d2"]


def test_failed_creation_removes_its_directories_and_topic_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manager = _manager(tmp_path)
    _fail_at(manager, monkeypatch, "t-3")
    job = manager.prepare_partitions("t", range(5), record=TopicRecord("t", uuid.uuid4(), 5))
    with pytest.raises(LogStorageError, match="disk full"):  # its log dir is offline (Kafka's too)
        job.run()
    assert "t" not in manager.topic_store.load_topics()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("t-")]
    assert job.logs == {} and manager.get_log("t", 0) is None


def test_failed_growth_restores_the_previous_partition_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manager = _manager(tmp_path)
    topic_id = uuid.uuid4()
    manager.save_topic("t", topic_id, 2)
    for partition in range(2):
        manager.get_or_create_log("t", partition, topic_id=topic_id)
    _fail_at(manager, monkeypatch, "t-3")
    job = manager.prepare_partitions(
        "t", range(2, 5), topic_id=topic_id, record=TopicRecord("t", topic_id, 5)
    )
    assert sorted(job.directories) == [2, 3, 4]
    with pytest.raises(LogStorageError):
        job.run()
    assert manager.topic_store.load_topics()["t"].partitions == 2
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("t-")) == ["t-0", "t-1"]


def _fail_at(manager: LogManager, monkeypatch: pytest.MonkeyPatch, dir_name: str) -> None:
    """Make opening the new log in ``dir_name`` fail as a full disk would."""
    real = manager._open_new_log

    def opening(directory: Path, config: LogConfig) -> Log:
        if directory.name == dir_name:
            raise OSError(28, "disk full")
        return real(directory, config)

    monkeypatch.setattr(manager, "_open_new_log", opening)
