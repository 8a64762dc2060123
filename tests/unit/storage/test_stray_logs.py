"""Logs that are not the topic they are named after (KIP-516): a partition directory of a topic the
broker does not know, and a log left from a deleted topic whose name a new topic took. Kafka checks
the topic id in ``partition.metadata`` (UnifiedLog.initializeTopicId) and sets such logs aside as
``-stray`` (KRaft's LogManager) instead of serving them; ``partition.metadata`` was written and never read."""

from __future__ import annotations

import logging
import shutil
import uuid
from pathlib import Path

import pytest

from odradek.storage.checkpoints import read_partition_metadata, write_partition_metadata
from odradek.storage.config import LogConfig
from odradek.storage.errors import LogStorageError
from odradek.storage.log_manager import LogManager
from odradek.storage.partition import is_stray_dir_name
from odradek.storage.stray_logs import JudgedByLeaderAndIsr, JudgedByTopicStore, StrayLogRule

from .helpers import FakeClock, batch, led_alone

CONFIG = LogConfig(segment_bytes=300)
OLD_ID = uuid.UUID(int=1)
NEW_ID = uuid.UUID(int=2)


def _manager(log_dir: Path, *, strays: StrayLogRule | None = None) -> LogManager:
    """A single node's log manager (its topic store judges) unless told another rule."""
    return LogManager([log_dir], CONFIG, clock=FakeClock(), strays=strays or JudgedByTopicStore())


def _strays(log_dir: Path) -> list[str]:
    return sorted(p.name.split(".")[0] for p in log_dir.iterdir() if is_stray_dir_name(p.name))


def _write_records(
    manager: LogManager, topic: str, partition: int, topic_id: uuid.UUID | None, n: int
) -> None:
    log = led_alone(manager.get_or_create_log(topic, partition, topic_id=topic_id))
    for i in range(n):
        log.append(batch([b"%s-%d" % (topic.encode(), i)]))


def test_a_single_node_sets_aside_the_partition_directories_of_topics_it_does_not_know(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """They were loaded and kept; a topic created later under the name was handed the old log."""
    manager = _manager(tmp_path)
    manager.save_topic("orders", OLD_ID, 1)
    _write_records(manager, "orders", 0, OLD_ID, 3)
    _write_records(manager, "orders", 4, OLD_ID, 2)  # beyond the topic's partition count
    _write_records(manager, "ghost", 0, uuid.uuid4(), 2)  # no topic record at all
    manager.shutdown()

    again = _manager(tmp_path)
    with caplog.at_level(logging.WARNING, "odradek.storage"):
        again.startup()
    assert sorted(again.logs) == [("orders", 0)]
    assert _strays(tmp_path) == ["ghost-0", "orders-4"]
    assert "ghost-0" in caplog.text and "-stray" in caplog.text
    # a topic created now under a stray's name starts empty
    ghost_id = uuid.uuid4()
    again.save_topic("ghost", ghost_id, 1)
    assert again.get_or_create_log("ghost", 0, topic_id=ghost_id).log_end_offset == 0
    again.shutdown()
    # the stray directories do not stop the next start, and stay where they are
    third = _manager(tmp_path)
    third.startup()
    assert _strays(tmp_path) == ["ghost-0", "orders-4"]
    third.shutdown()


def test_a_log_left_from_a_deleted_topic_is_never_served_as_the_new_topic_of_the_same_name(
    tmp_path: Path,
) -> None:
    """The topic record names a new incarnation (another id) of the log's topic: the old log is set
    aside at the start and the topic's partition starts empty, at offset 0 (not at the old log start
    offset its checkpoint still held)."""
    manager = _manager(tmp_path)
    manager.save_topic("orders", OLD_ID, 1)
    _write_records(manager, "orders", 0, OLD_ID, 5)
    log = manager.get_log("orders", 0)
    assert log is not None
    log.delete_records(3)
    manager.shutdown()
    # the deletion and the new topic's creation happened where this log dir was not seen (restored
    # from a backup, moved back from another broker, a deletion lost with a disk)
    _manager(tmp_path).topic_store.save_topic("orders", NEW_ID, 1)

    again = _manager(tmp_path)
    again.startup()
    assert again.get_log("orders", 0) is None
    assert _strays(tmp_path) == ["orders-0"]
    new = again.get_or_create_log("orders", 0, topic_id=NEW_ID)
    assert (new.log_start_offset, new.log_end_offset, new.topic_id) == (0, 0, NEW_ID)
    again.shutdown()
    third = _manager(tmp_path)
    third.startup()
    reloaded = third.get_log("orders", 0)
    assert reloaded is not None and (reloaded.log_start_offset, reloaded.log_end_offset) == (0, 0)


def test_a_cluster_member_sets_aside_a_log_of_another_topic_id_when_asked_for_the_partition(
    tmp_path: Path,
) -> None:
    """A cluster member knows its topics only from the controller: the log is loaded, and the first
    LeaderAndIsr naming the partition with another topic id sets it aside (as KRaft's
    findStrayReplicas) and gets an empty log; it was served as the new topic."""
    manager = _manager(tmp_path, strays=JudgedByLeaderAndIsr())
    _write_records(manager, "orders", 0, OLD_ID, 4)
    manager.shutdown()
    again = _manager(tmp_path, strays=JudgedByLeaderAndIsr())
    again.startup()
    old = again.get_log("orders", 0)
    assert old is not None and old.topic_id == OLD_ID and not old.matches_topic_id(NEW_ID)
    job = again.prepare_partitions("orders", [0], topic_id=NEW_ID)
    assert again.get_log("orders", 0) is None  # out of service from here on
    job.run()
    again.complete_partitions(job)
    new = again.get_log("orders", 0)
    assert new is not None and new is not old
    assert (new.log_end_offset, new.topic_id) == (0, NEW_ID)
    assert read_partition_metadata(tmp_path / "orders-0") == NEW_ID
    assert _strays(tmp_path) == ["orders-0"]
    again.shutdown()


def test_a_log_without_partition_metadata_takes_the_topic_id_it_is_asked_for(tmp_path: Path) -> None:
    """As Kafka's UnifiedLog.assignTopicId: a log made before topic ids (none given at its creation)
    keeps its records and gets the id."""
    manager = _manager(tmp_path, strays=JudgedByLeaderAndIsr())
    _write_records(manager, "orders", 0, None, 3)
    assert manager.get_log("orders", 0) is not None
    assert read_partition_metadata(tmp_path / "orders-0") is None
    job = manager.prepare_partitions("orders", [0], topic_id=NEW_ID)
    job.run()
    manager.complete_partitions(job)
    log = manager.get_log("orders", 0)
    assert log is not None and (log.log_end_offset, log.topic_id) == (3, NEW_ID)
    assert read_partition_metadata(tmp_path / "orders-0") == NEW_ID
    assert _strays(tmp_path) == []
    manager.shutdown()


def test_a_stray_name_fits_the_file_name_limit(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    manager.topic_store.save_topic("orders", NEW_ID, 1)
    long_topic = "t" * 249
    directory = tmp_path / f"{long_topic}-0"
    directory.mkdir()
    write_partition_metadata(directory, OLD_ID)
    manager.startup()
    (stray,) = [p for p in tmp_path.iterdir() if is_stray_dir_name(p.name)]
    assert len(stray.name) <= 255


def test_log_dirs_given_in_another_order_stop_the_start_instead_of_setting_every_partition_aside(
    tmp_path: Path,
) -> None:
    """The topic store lives in the first log dir: in another order the broker would know no topic
    and set every partition aside."""
    first, second = tmp_path / "a", tmp_path / "b"
    manager = LogManager([first, second], CONFIG, clock=FakeClock())
    manager.startup()
    manager.save_topic("orders", OLD_ID, 2)
    _write_records(manager, "orders", 0, OLD_ID, 1)
    _write_records(manager, "orders", 1, OLD_ID, 1)
    manager.shutdown()
    swapped = LogManager([second, first], CONFIG, clock=FakeClock())
    with pytest.raises(LogStorageError, match=r"first of log\.dirs"):
        swapped.startup()
    assert _strays(first) == [] and _strays(second) == []


@pytest.mark.parametrize("lost", ["first log dir not mounted", "topics file lost"])
def test_a_missing_topics_file_stops_the_start_instead_of_setting_every_partition_aside(
    tmp_path: Path, lost: str
) -> None:
    """Without the topics file a single node knows no topic: it set every partition directory of the
    log dirs aside and started empty, and once the disk was mounted again (or the file restored) those
    partitions were made again, empty. Only a topic store that was read may judge the directories."""
    first, second = tmp_path / "a", tmp_path / "b"
    manager = LogManager([first, second], CONFIG, clock=FakeClock())
    manager.startup()
    manager.save_topic("orders", OLD_ID, 4)
    for partition in range(4):
        _write_records(manager, "orders", partition, OLD_ID, 2)
    manager.shutdown()
    if lost == "first log dir not mounted":  # its mount point is an empty directory
        first.rename(tmp_path / "a-unmounted")
        first.mkdir()
    else:
        (first / "__odradek_topics.json").rename(tmp_path / "topics-backup.json")
    with pytest.raises(LogStorageError) as refused:
        LogManager([first, second], CONFIG, clock=FakeClock()).startup()
    assert str(first / "__odradek_topics.json") in str(refused.value)
    assert "first of log.dirs" in str(refused.value) and "\n" not in str(refused.value)
    assert _strays(first) == [] and _strays(second) == []
    if lost == "first log dir not mounted":
        first.rmdir()
        (tmp_path / "a-unmounted").rename(first)
    else:
        (tmp_path / "topics-backup.json").rename(first / "__odradek_topics.json")
    mounted = LogManager([first, second], CONFIG, clock=FakeClock())
    mounted.startup()
    assert sorted(mounted.logs) == [("orders", p) for p in range(4)]
    assert all(log.log_end_offset == 2 for log in mounted.logs.values())


def test_a_first_start_without_a_topics_file_starts_when_no_log_dir_holds_a_partition(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    second.mkdir()
    (second / "orders-0.0123456789abcdef0123456789abcdef-stray").mkdir()  # set aside before: not served
    manager = LogManager([first, second], CONFIG, clock=FakeClock())
    manager.startup()
    assert manager.logs == {}


def test_a_partition_directory_in_two_log_dirs_stops_the_start(tmp_path: Path) -> None:
    """Kafka's LogManager refuses duplicate log directories of a partition; the second log dir's copy
    silently replaced the first's (a log dir that was not mounted while the partition was made again in
    another, then mounted back), and which records were served depended on the order of log.dirs."""
    first, second = tmp_path / "a", tmp_path / "b"
    manager = LogManager([first, second], CONFIG, clock=FakeClock())
    manager.startup()
    manager.save_topic("orders", OLD_ID, 1)
    _write_records(manager, "orders", 0, OLD_ID, 3)
    manager.shutdown()
    (held,) = [d for d in (first, second) if (d / "orders-0").is_dir()]
    other = second if held == first else first
    shutil.copytree(held / "orders-0", other / "orders-0")
    with pytest.raises(LogStorageError, match="orders-0") as refused:
        LogManager([first, second], CONFIG, clock=FakeClock()).startup()
    assert str(first / "orders-0") in str(refused.value) and str(second / "orders-0") in str(refused.value)
