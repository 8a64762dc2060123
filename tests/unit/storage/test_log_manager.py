"""LogManager: partition dirs, topic metadata, checkpoints, clean shutdown, periodic jobs."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from odradek.storage.checkpoints import read_offset_checkpoint, read_partition_metadata
from odradek.storage.cleaner import run_cleaning
from odradek.storage.config import LogConfig
from odradek.storage.errors import LogStorageError
from odradek.storage.log_manager import LogManager
from odradek.storage.partition import TopicPartition
from odradek.storage.segment import LogSegment
from odradek.storage.stray_logs import JudgedByLeaderAndIsr

from .helpers import FakeClock, batch, led_alone, read_records, values

TOPIC_ID = uuid.UUID(int=7)


def _manager(tmp_path: Path, clock: FakeClock, **config: object) -> LogManager:
    manager = LogManager([tmp_path / "d1", tmp_path / "d2"], LogConfig(**config), clock=clock)  # type: ignore[arg-type]
    manager.startup()
    return manager


def test_topics_and_their_configs_survive_restart(tmp_path: Path) -> None:
    clock = FakeClock()
    manager = _manager(tmp_path, clock)
    topic_id = uuid.uuid4()
    manager.save_topic("orders", topic_id, 2, {"cleanup.policy": "compact", "segment.bytes": 500})
    log = manager.get_or_create_log("orders", 0, topic_id=topic_id)
    assert log.config.compact and log.config.segment_bytes == 500
    assert read_partition_metadata(log.dir) == topic_id
    manager.shutdown()

    again = _manager(tmp_path, clock)
    topics = again.topic_store.load_topics()
    assert topics["orders"].topic_id == topic_id and topics["orders"].partitions == 2
    reloaded = again.get_log("orders", 0)
    assert reloaded is not None and reloaded.config.compact
    again.save_topic("orders", topic_id, 2, {"segment.bytes": 700})  # AlterConfigs
    assert reloaded.config.segment_bytes == 700 and not reloaded.config.compact


def test_partitions_spread_over_log_dirs(tmp_path: Path) -> None:
    manager = _manager(tmp_path, FakeClock())
    dirs = {manager.get_or_create_log("t", p).dir.parent.name for p in range(4)}
    assert dirs == {"d1", "d2"}


def test_delete_log_renames_then_removes_after_delay(tmp_path: Path) -> None:
    clock = FakeClock()
    manager = _manager(tmp_path, clock, file_delete_delay_ms=1000)
    log = led_alone(manager.get_or_create_log("gone", 0))
    log.append(batch())
    region = log.read(0, 100).regions[0]
    parent = log.dir.parent
    assert manager.deletions.delete_log("gone", 0)
    (renamed,) = [p for p in parent.iterdir() if p.name.startswith("gone-0.")]
    assert renamed.name.endswith("-delete") and len(renamed.name) == len("gone-0.") + 32 + len("-delete")
    assert region.read()  # an in-flight read still works
    assert manager.deletions.take_file_deletions().directories == []
    clock.advance(1000)
    manager.deletions.take_file_deletions().run()
    assert not renamed.exists()
    assert manager.get_log("gone", 0) is None


def test_delete_topic_removes_metadata_and_logs(tmp_path: Path) -> None:
    manager = _manager(tmp_path, FakeClock(), file_delete_delay_ms=0)
    manager.save_topic("t", uuid.uuid4(), 2)
    for p in range(2):
        manager.get_or_create_log("t", p)
    assert manager.deletions.delete_topic("t")
    manager.deletions.take_file_deletions().run()
    assert manager.logs == {} and manager.topic_store.load_topics() == {}


def test_checkpoints_are_kafka_files_and_clean_shutdown_skips_recovery(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = FakeClock()
    manager = _manager(tmp_path, clock)
    manager.save_topic("t", TOPIC_ID, 1)  # a single node keeps only the logs of topics it knows
    log = led_alone(manager.get_or_create_log("t", 0, topic_id=TOPIC_ID))
    for _ in range(5):
        log.append(batch())
    log.delete_records(2)
    manager.flushes.prepare_checkpoint().run()
    root = log.dir.parent
    assert read_offset_checkpoint(root / "log-start-offset-checkpoint") == {TopicPartition("t", 0): 2}
    assert read_offset_checkpoint(root / "replication-offset-checkpoint") == {TopicPartition("t", 0): 5}
    manager.shutdown()
    assert (root / ".kafka_cleanshutdown").exists()
    assert read_offset_checkpoint(root / "recovery-point-offset-checkpoint") == {TopicPartition("t", 0): 5}

    def no_recovery(*args: object, **kwargs: object) -> int:
        raise AssertionError("recovery ran after a clean shutdown")

    monkeypatch.setattr(LogSegment, "recover", no_recovery)
    again = _manager(tmp_path, clock)
    monkeypatch.undo()
    reloaded = again.get_log("t", 0)
    assert reloaded is not None and reloaded.log_start_offset == 2 and reloaded.log_end_offset == 5
    assert not (root / ".kafka_cleanshutdown").exists()  # consumed by the start


def test_crash_recovery_through_the_manager(tmp_path: Path) -> None:
    clock = FakeClock()
    manager = _manager(tmp_path, clock, segment_bytes=300)
    manager.save_topic("t", TOPIC_ID, 1)
    log = manager.get_or_create_log("t", 0, topic_id=TOPIC_ID)
    results = [log.append(batch([b"r%d" % i])) for i in range(30)]
    # no shutdown: the next start recovers from the (absent) recovery point
    again = _manager(tmp_path, clock, segment_bytes=300)
    reloaded = again.get_log("t", 0)
    assert reloaded is not None and reloaded.log_end_offset == results[-1].last_offset + 1
    led_alone(reloaded)  # led again after the restart: the high watermark reaches the recovered end
    assert values(read_records(reloaded)) == [b"r%d" % i for i in range(30)]


def test_retention_and_compaction_jobs(tmp_path: Path) -> None:
    clock = FakeClock()
    manager = _manager(tmp_path, clock, segment_bytes=300, retention_ms=1000, file_delete_delay_ms=500)
    log = led_alone(manager.get_or_create_log("t", 0))
    for i in range(10):
        log.append(batch([b"x%d" % i]))
    clock.advance(2000)
    assert manager.cleanup_logs() > 0
    deleted = [p for p in log.dir.iterdir() if p.name.endswith(".deleted")]
    assert deleted
    manager.deletions.take_file_deletions().run()
    assert all(p.exists() for p in deleted)  # file.delete.delay.ms not yet passed
    clock.advance(500)
    manager.deletions.take_file_deletions().run()
    assert not any(p.exists() for p in deleted)

    manager.save_topic("c", uuid.uuid4(), 1, {"cleanup.policy": "compact"})
    compacted = led_alone(manager.get_or_create_log("c", 0))
    for i in range(10):
        compacted.append(batch([(b"k", b"v%d" % i)]))
    compacted.roll()
    plans = manager.cleaner.compaction_plans()
    assert [log for log, _ in plans] == [compacted]
    manager.cleaner.complete_compaction(compacted, run_cleaning(plans[0][1]))
    assert values(read_records(compacted)) == [b"v9"]
    flushes = manager.flushes.prepare_flushes()
    for _, job in flushes:
        job.run()
    manager.flushes.complete_flushes(flushes)


def test_meta_properties(tmp_path: Path) -> None:
    manager = LogManager([tmp_path / "a", tmp_path / "b"])
    meta = manager.ensure_meta_properties(7)
    assert (tmp_path / "a" / "meta.properties").exists() and (tmp_path / "b" / "meta.properties").exists()
    assert LogManager([tmp_path / "a"]).ensure_meta_properties(7) == meta
    with pytest.raises(LogStorageError):
        LogManager([tmp_path / "a"]).ensure_meta_properties(8)
    assert os.path.getsize(tmp_path / "a" / "meta.properties") > 0


def test_a_cluster_member_checkpoints_high_watermarks_alone_as_they_move(tmp_path: Path) -> None:
    """replica.high.watermark.checkpoint.interval.ms writes replication-offset-checkpoint only: a
    follower's high watermark lags its log end, and the recovery points keep their own interval."""
    manager = LogManager(
        [tmp_path / "d1", tmp_path / "d2"], LogConfig(), clock=FakeClock(), strays=JudgedByLeaderAndIsr()
    )
    manager.startup()
    try:
        first, second = manager.get_or_create_log("t", 0), manager.get_or_create_log("t", 1)
        for _ in range(5):
            first.append(batch())
            second.append(batch())
        first.update_high_watermark(3)
        second.update_high_watermark(4)
        manager.flushes.prepare_high_watermark_checkpoint().run()
        for log, high_watermark in ((first, 3), (second, 4)):
            root = log.dir.parent
            expected = {log.topic_partition: high_watermark}
            assert read_offset_checkpoint(root / "replication-offset-checkpoint") == expected
            assert not (root / "recovery-point-offset-checkpoint").exists()
    finally:
        manager.shutdown()


def test_a_log_manager_opens_logs_with_a_followers_rule_and_their_leadership_moves_the_high_watermark(
    tmp_path: Path,
) -> None:
    """Who moves the high watermark is the partition's leadership (partition/replica_manager.py), in a
    cluster and on a single node alike: the log manager no longer decides it by mode."""
    clock = FakeClock()
    manager = _manager(tmp_path, clock)
    manager.save_topic("t", TOPIC_ID, 1)
    log = manager.get_or_create_log("t", 0, topic_id=TOPIC_ID)
    log.append(batch())
    assert not log.auto_high_watermark and log.high_watermark == 0  # a follower's until led
    manager.flushes.prepare_checkpoint().run()
    manager.shutdown()
    again = _manager(tmp_path, clock)
    reloaded = again.get_log("t", 0)
    assert reloaded is not None and not reloaded.auto_high_watermark
    assert reloaded.high_watermark == 0  # the checkpoint's, not the log end: leadership moves it
    led_alone(reloaded)
    assert reloaded.high_watermark == reloaded.log_end_offset == 1
