"""partition/'s one entry for appends as follower (Kafka's Partition.appendRecordsToFollowerOrFutureReplica
and the HW and log-start updates of ReplicaFetcherThread.processPartitionData): it appends only to a
partition hosted here as follower at the fetch's leader epoch, in the log the fetch was for, moves the
follower's high watermark and log start, raises the append event, and an I/O error takes the log dir
offline as a leader's append does."""

from __future__ import annotations

import asyncio
import errno
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from odradek.cluster.metadata import ClusterMetadata
from odradek.partition.follower_append import FollowerAppends
from odradek.partition.hosted_partition import HostedPartition
from odradek.partition.replica_manager import ReplicaManager
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.fetch import EpochEndOffset, PartitionData
from odradek.protocol.records import RecordBatchBuilder
from odradek.storage.config import LogConfig
from odradek.storage.errors import LogStorageError
from odradek.storage.log import Log
from odradek.storage.log_manager import LogManager
from odradek.storage.partition import TopicPartition
from odradek.storage.segment import LogSegment

NODE, LEADER, EPOCH = 2, 1, 5


@pytest.fixture
def logs(tmp_path: Path) -> Iterator[LogManager]:
    manager = LogManager([tmp_path / "logs"], LogConfig.from_mapping({}), single_node=False)
    manager.startup()
    try:
        yield manager
    finally:
        manager.shutdown()


class _NoTruncation:
    """No truncation's checkpoints to wait for (cluster/test_truncation_checkpoints.py has those)."""

    def pending(self, replica_log: Log) -> bool:
        return False

    async def written(self, replica_log: Log) -> None:
        return None


def _replicas(logs: LogManager) -> ReplicaManager:
    return ReplicaManager(NODE, ClusterMetadata("c", -1, []), logs)


def _host(replicas: ReplicaManager, replica_log: Log, leader: int = LEADER, epoch: int = EPOCH) -> None:
    replicas.apply_leadership(
        HostedPartition(
            topic="t",
            partition=0,
            topic_id=None,
            leader=leader,
            leader_epoch=epoch,
            partition_epoch=0,
            replicas=[LEADER, NODE],
            isr=[LEADER, NODE],
            log=replica_log,
        )
    )


def _batches(base_offset: int, values: list[bytes]) -> bytes:
    out = bytearray()
    for i, value in enumerate(values):
        builder = RecordBatchBuilder(base_offset + i, partition_leader_epoch=EPOCH)
        builder.append(1_700_000_000_000, None, value)
        out += builder.build()
    return bytes(out)


def _answer(records: bytes, high_watermark: int, log_start_offset: int = 0) -> PartitionData:
    return PartitionData(
        partition_index=0,
        error_code=ErrorCode.NONE,
        high_watermark=high_watermark,
        last_stable_offset=high_watermark,
        log_start_offset=log_start_offset,
        diverging_epoch=EpochEndOffset(epoch=-1, end_offset=-1),
        records=records,
    )


def _append(replicas: ReplicaManager, replica_log: Log, data: PartitionData, epoch: int = EPOCH) -> Any:
    appends = FollowerAppends(replicas, _NoTruncation())
    return asyncio.run(appends.append_fetched(("t", 0), epoch, replica_log, data, lambda: True))


def test_an_answer_for_a_partition_followed_at_its_epoch_is_appended_and_moves_hw_and_log_start(
    logs: LogManager,
) -> None:
    replicas = _replicas(logs)
    replica_log = logs.get_or_create_log("t", 0)
    _host(replicas, replica_log)
    fetched = _batches(0, [b"a", b"b", b"c", b"d"])
    data = _answer(fetched, high_watermark=3, log_start_offset=1)

    async def main() -> tuple[int | None, set[Any] | None]:
        appends = FollowerAppends(replicas, _NoTruncation())
        with replicas.appends.waiting_on([("t", 0)]) as waiter:
            appended = await appends.append_fetched(("t", 0), EPOCH, replica_log, data, lambda: True)
            return appended, waiter.take_woken()

    appended, woken = asyncio.run(main())
    assert woken == {TopicPartition("t", 0)}  # a consumer's fetch from this follower wakes
    assert appended == len(fetched)
    assert replica_log.log_end_offset == 4
    assert replica_log.high_watermark == 3
    assert replica_log.log_start_offset == 1
    assert _append(replicas, replica_log, _answer(b"", high_watermark=9)) == 0
    assert replica_log.high_watermark == 4  # the leader's, never past this log's end


def test_an_answer_at_another_leader_epoch_appends_nothing(logs: LogManager) -> None:
    replicas = _replicas(logs)
    replica_log = logs.get_or_create_log("t", 0)
    _host(replicas, replica_log, epoch=EPOCH + 1)  # a LeaderAndIsr at a newer epoch since the fetch
    assert _append(replicas, replica_log, _answer(_batches(0, [b"a"]), high_watermark=1)) is None
    assert replica_log.log_end_offset == 0


def test_a_partition_led_here_is_not_appended_to_as_follower(logs: LogManager) -> None:
    replicas = _replicas(logs)
    replica_log = logs.get_or_create_log("t", 0)
    _host(replicas, replica_log, leader=NODE)
    assert _append(replicas, replica_log, _answer(_batches(0, [b"a"]), high_watermark=1)) is None
    assert replica_log.log_end_offset == 0


def test_a_partition_not_hosted_here_or_in_another_log_is_not_appended_to(logs: LogManager) -> None:
    replicas = _replicas(logs)
    replica_log = logs.get_or_create_log("t", 0)
    assert _append(replicas, replica_log, _answer(_batches(0, [b"a"]), high_watermark=1)) is None
    _host(replicas, logs.get_or_create_log("t", 1))  # hosted, but the fetch was for another log
    assert _append(replicas, replica_log, _answer(_batches(0, [b"a"]), high_watermark=1)) is None
    assert replica_log.log_end_offset == 0


def test_an_answer_the_fetcher_no_longer_fetches_is_not_applied(logs: LogManager) -> None:
    replicas = _replicas(logs)
    replica_log = logs.get_or_create_log("t", 0)
    _host(replicas, replica_log)
    appends = FollowerAppends(replicas, _NoTruncation())
    data = _answer(_batches(0, [b"a"]), high_watermark=1)
    assert asyncio.run(appends.append_fetched(("t", 0), EPOCH, replica_log, data, lambda: False)) is None
    assert replica_log.log_end_offset == 0


def test_an_io_error_in_a_follower_append_takes_the_log_dir_offline(
    logs: LogManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    replicas = _replicas(logs)
    replica_log = logs.get_or_create_log("t", 0)
    _host(replicas, replica_log)

    def failing(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(LogSegment, "append", failing)
    with pytest.raises(LogStorageError):
        _append(replicas, replica_log, _answer(_batches(0, [b"a"]), high_watermark=1))
    assert logs.failures.is_offline(replica_log.dir.parent)


def test_a_truncation_schedules_the_segments_it_removed_for_deletion(
    logs: LogManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    replicas = _replicas(logs)
    replica_log = logs.get_or_create_log("t", 0)
    _host(replicas, replica_log)
    replica_log.append_as_follower(bytearray(_batches(0, [b"a", b"b", b"c"])))
    replica_log.roll()
    replica_log.append_as_follower(bytearray(_batches(3, [b"d"])))
    scheduled: list[list[int]] = []

    def schedule(segments: list[LogSegment], delay_ms: int) -> None:
        scheduled.append([segment.base_offset for segment in segments])

    monkeypatch.setattr(logs, "schedule_deletion", schedule)
    appends = FollowerAppends(replicas, _NoTruncation())
    appends.truncate(replica_log, 2, "a test")
    assert replica_log.log_end_offset == 2
    assert scheduled == [[3]]
    appends.truncate_fully_and_start_at(replica_log, 10)
    assert replica_log.log_start_offset == replica_log.log_end_offset == 10
    assert scheduled == [[3], [0]]
