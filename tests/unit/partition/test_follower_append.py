"""partition/'s one entry for appends as follower (Kafka's Partition.appendRecordsToFollowerOrFutureReplica
and the HW and log-start updates of ReplicaFetcherThread.processPartitionData): it appends only to a
partition hosted here as follower at the fetch's leader epoch, in the log the fetch was for, moves the
follower's high watermark and log start, raises the append event, and an I/O error takes the log dir
offline as a leader's append does."""

from __future__ import annotations

import asyncio
import errno
from typing import Any

import pytest

from odradek.cluster.replication.truncation_checkpoints import TruncationCheckpoints
from odradek.partition.follower_append import FollowerAppends
from odradek.protocol.messages.fetch import PartitionData
from odradek.storage.errors import LogStorageError
from odradek.storage.flush_scheduler import FlushScheduler
from odradek.storage.log import Log
from odradek.storage.log_manager import LogManager
from odradek.storage.partition import TopicPartition
from odradek.storage.segment import LogSegment
from tests.support.followers import follower_appends, host_follower
from tests.unit.cluster.test_replica_fetcher import _answer, _batches

NODE, LEADER, EPOCH = 2, 1, 5


def _followed(logs: LogManager, leader: int = LEADER, epoch: int = EPOCH) -> tuple[FollowerAppends, Log]:
    """Partition t-0 hosted by broker NODE as follower of `leader` at `epoch` (no truncation to wait for:
    cluster/test_truncation_checkpoints.py has those)."""
    appends = follower_appends(logs, NODE, TruncationCheckpoints(FlushScheduler([], {})))
    replica_log = logs.get_or_create_log("t", 0)
    host_follower(appends.replicas, replica_log, leader, epoch)
    return appends, replica_log


def _append(appends: FollowerAppends, replica_log: Log, data: PartitionData, epoch: int = EPOCH) -> Any:
    return asyncio.run(appends.append_fetched(("t", 0), epoch, replica_log, data, lambda: True))


def _one() -> PartitionData:
    return _answer(_batches(0, EPOCH, [b"a"]), high_watermark=1)


def test_an_answer_for_a_partition_followed_at_its_epoch_is_appended_and_moves_hw_and_log_start(
    logs: LogManager,
) -> None:
    appends, replica_log = _followed(logs)
    fetched = _batches(0, EPOCH, [b"a", b"b", b"c", b"d"])
    data = _answer(fetched, high_watermark=3)
    data.log_start_offset = 1

    async def main() -> tuple[int | None, set[Any] | None]:
        with appends.replicas.appends.waiting_on([("t", 0)]) as waiter:
            appended = await appends.append_fetched(("t", 0), EPOCH, replica_log, data, lambda: True)
            return appended, waiter.take_woken()

    appended, woken = asyncio.run(main())
    assert woken == {TopicPartition("t", 0)}  # a consumer's fetch from this follower wakes
    assert appended == len(fetched)
    assert replica_log.log_end_offset == 4
    assert replica_log.high_watermark == 3
    assert replica_log.log_start_offset == 1
    assert _append(appends, replica_log, _answer(b"", high_watermark=9)) == 0
    assert replica_log.high_watermark == 4  # the leader's, never past this log's end


def test_an_answer_at_another_leader_epoch_appends_nothing(logs: LogManager) -> None:
    appends, replica_log = _followed(logs, epoch=EPOCH + 1)  # a LeaderAndIsr at a newer epoch since
    assert _append(appends, replica_log, _one()) is None
    assert replica_log.log_end_offset == 0


def test_a_partition_led_here_is_not_appended_to_as_follower(logs: LogManager) -> None:
    appends, replica_log = _followed(logs, leader=NODE)
    assert _append(appends, replica_log, _one()) is None
    assert replica_log.log_end_offset == 0


def test_a_partition_not_hosted_here_or_in_another_log_is_not_appended_to(logs: LogManager) -> None:
    appends = follower_appends(logs, NODE, TruncationCheckpoints(FlushScheduler([], {})))
    replica_log = logs.get_or_create_log("t", 0)
    assert _append(appends, replica_log, _one()) is None
    other = logs.get_or_create_log("t", 1)
    host_follower(appends.replicas, other, LEADER, EPOCH)
    appends.replicas.hosted[("t", 0)] = appends.replicas.hosted.pop(("t", 1))  # t-0 hosted in another log
    assert _append(appends, replica_log, _one()) is None
    assert replica_log.log_end_offset == 0


def test_an_answer_the_fetcher_no_longer_fetches_is_not_applied(logs: LogManager) -> None:
    appends, replica_log = _followed(logs)
    assert asyncio.run(appends.append_fetched(("t", 0), EPOCH, replica_log, _one(), lambda: False)) is None
    assert replica_log.log_end_offset == 0


def test_an_io_error_in_a_follower_append_takes_the_log_dir_offline(
    logs: LogManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    appends, replica_log = _followed(logs)

    def failing(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(LogSegment, "append", failing)
    with pytest.raises(LogStorageError):
        _append(appends, replica_log, _one())
    assert logs.failures.is_offline(replica_log.dir.parent)


def test_a_truncation_schedules_the_segments_it_removed_for_deletion(
    logs: LogManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    appends, replica_log = _followed(logs)
    replica_log.append_as_follower(bytearray(_batches(0, EPOCH, [b"a", b"b", b"c"])))
    replica_log.roll()
    replica_log.append_as_follower(bytearray(_batches(3, EPOCH, [b"d"])))
    scheduled: list[list[int]] = []

    def schedule(segments: list[LogSegment], delay_ms: int) -> None:
        scheduled.append([segment.base_offset for segment in segments])

    monkeypatch.setattr(logs.deletions, "schedule_deletion", schedule)
    appends.truncate(replica_log, 2, "a test")
    assert replica_log.log_end_offset == 2
    assert scheduled == [[3]]
    appends.truncate_fully_and_start_at(replica_log, 10)
    assert replica_log.log_start_offset == replica_log.log_end_offset == 10
    assert scheduled == [[3], [0]]
