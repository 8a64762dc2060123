"""A future log found at start whose topic id is not its current log's was resumed as that log's move,
and swapped in once "caught up": the partition then served another topic's records.

A replica moving between log dirs has a future log (``<topic>-<partition>.<uuid>-future``) holding its
topic's id. When the partition goes (its topic deleted, a StopReplica with delete), the future log is
renamed ``-delete`` first, on the loop, without a directory fsync; the current log's rename follows in a
worker thread, fsynced. A power loss can keep the second and lose the first: the future log of the gone
topic is back at the next start. Once a topic of the same name has a partition here again, the start
took that leftover for a copy of the new log: the copy compares leader epochs only, both logs began at
epoch 0, so it kept the old topic's records below the new log's end and swapped them in. A future log
of another topic id is no copy of the current log; it is set aside (``-stray``), as a stray log is.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from odradek.storage.checkpoints import read_partition_metadata, write_partition_metadata
from odradek.storage.log import Log
from odradek.storage.log_manager import LogManager
from odradek.storage.log_moves import copy_to_future
from odradek.storage.partition import TopicPartition, is_stray_dir_name

from .helpers import batch
from .test_log_moves import _manager

OLD_TOPIC_ID = uuid.UUID("11111111-1111-1111-1111-111111111111")
NEW_TOPIC_ID = uuid.UUID("22222222-2222-2222-2222-222222222222")


def _moving_a_log_of_the_old_topic(manager: LogManager) -> tuple[Log, Log]:
    """t-0 of topic id OLD_TOPIC_ID with five records, moving to the other log dir and partly copied;
    (its log, its future log)."""
    current = manager.get_or_create_log("t", 0)
    write_partition_metadata(current.dir, OLD_TOPIC_ID)
    current.topic_id = OLD_TOPIC_ID
    for i in range(5):
        current.append(batch([f"old-{i}".encode()]))
    target = next(d for d in manager.log_dirs if d != current.dir.parent)
    future = manager.moves.create_future_log("t", 0, target)
    manager.moves.install_future_log(future)
    copy_to_future(current, future, 200, manager.deletions.schedule_deletion)
    return current, future


def test_a_future_log_of_another_topic_id_than_its_current_log_is_set_aside_at_start(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    current, future = _moving_a_log_of_the_old_topic(manager)
    target = future.dir.parent
    assert future.log_end_offset > 0
    future_dir = future.dir
    manager.shutdown()
    # the topic went and came back under a new id; the old future log's rename was lost
    write_partition_metadata(current.dir, NEW_TOPIC_ID)

    again = _manager(tmp_path)
    try:
        assert TopicPartition("t", 0) not in again.future_logs
        assert not future_dir.exists()
        (stray,) = [d for d in target.iterdir() if is_stray_dir_name(d.name)]
        assert read_partition_metadata(stray) == OLD_TOPIC_ID  # kept for the operator
        log = again.get_log("t", 0)
        assert log is not None and log.topic_id == NEW_TOPIC_ID
    finally:
        again.shutdown()


def test_a_log_set_aside_for_another_topic_id_takes_its_future_log_with_it(tmp_path: Path) -> None:
    """A cluster member's LogManager sets a log aside when a LeaderAndIsr names the partition under
    another topic id (the topic deleted and made again while this broker did not see it). Its future
    log, a copy of the set-aside log, stayed in the moves: the copy went on from the new, empty log into
    it, kept what the epochs did not tell apart, swapped it in, and with it the old topic's id."""
    manager = _manager(tmp_path)
    try:
        _moving_a_log_of_the_old_topic(manager)

        job = manager.prepare_partitions("t", [0], topic_id=NEW_TOPIC_ID)
        job.run()
        manager.complete_partitions(job)

        made = manager.get_log("t", 0)
        assert made is not None and made.topic_id == NEW_TOPIC_ID and made.log_end_offset == 0
        assert TopicPartition("t", 0) not in manager.future_logs
    finally:
        manager.shutdown()
