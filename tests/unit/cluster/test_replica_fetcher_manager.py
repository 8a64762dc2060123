"""The replica fetchers' bookkeeping (Kafka's AbstractFetcherManager): partitions grouped by leader and
fetcher id, at most `num.replica.fetchers` per leader, a fetcher stopped once it has no partition, a
new `num.replica.fetchers` redistributing, and shutdown ending every task (a leader nobody can reach
leaves its fetcher backing off, never crashing)."""

from __future__ import annotations

import asyncio
import errno

import pytest

from odradek.cluster.metadata import ClusterMetadata
from odradek.cluster.replication.fetch_state import FetcherContext
from odradek.cluster.replication.fetcher_manager import ReplicaFetcherManager, fetcher_index
from odradek.cluster.replication.truncation_checkpoints import TruncationCheckpoints
from odradek.config.broker import BrokerConfig
from odradek.partition.hosted_partition import HostedPartition
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.fetch import EpochEndOffset, PartitionData
from odradek.protocol.records import RecordBatchBuilder
from odradek.storage.errors import LogStorageError
from odradek.storage.flush_scheduler import FlushScheduler, TruncationCheckpointJob
from odradek.storage.log_manager import LogManager
from tests.support.followers import follower_appends


def _hosted(logs: LogManager, topic: str, partition: int, leader: int) -> HostedPartition:
    return HostedPartition(
        topic=topic,
        partition=partition,
        topic_id=None,
        leader=leader,
        leader_epoch=1,
        partition_epoch=0,
        replicas=[leader, 2],
        isr=[leader, 2],
        log=logs.get_or_create_log(topic, partition),
    )


def _manager(
    logs: LogManager, config: list[BrokerConfig], checkpoints: TruncationCheckpoints | None = None
) -> ReplicaFetcherManager:
    context = FetcherContext(
        node_id=2,
        broker_epoch=lambda: 1,
        endpoint=lambda _: None,  # no leader reachable: fetchers back off
        local_host=None,
        # no power loss here: truncations wait for nothing (test_truncation_checkpoints.py)
        followers=follower_appends(logs, 2, checkpoints or TruncationCheckpoints(FlushScheduler([], {}))),
    )
    return ReplicaFetcherManager(lambda: config[0], ClusterMetadata("c", -1, []), context)


def _config(fetchers: int) -> BrokerConfig:
    return BrokerConfig(
        {"num.replica.fetchers": str(fetchers), "replica.fetch.backoff.ms": "10"}, warn_unknown=False
    )


def test_partitions_are_grouped_by_leader_and_fetcher_id(logs: LogManager) -> None:
    async def run() -> None:
        config = [_config(2)]
        manager = _manager(logs, config)
        partitions = [_hosted(logs, "t", p, leader=1 + p % 2 * 2) for p in range(6)]
        manager.add_partitions(partitions)
        expected = {(h.leader, fetcher_index("t", h.partition, 2)) for h in partitions}
        assert set(manager.fetchers) == expected
        assert all(leader in (1, 3) and index in (0, 1) for leader, index in manager.fetchers)
        await asyncio.sleep(0.05)  # the fetchers run, find no leader, back off
        assert not any(f.task.done() for f in manager.fetchers.values())

        config[0] = _config(1)
        manager.add_partitions([])
        assert set(manager.fetchers) == {(1, 0), (3, 0)}
        assert manager.followed() == {("t", p): 1 + p % 2 * 2 for p in range(6)}

        manager.remove_partitions([("t", p) for p in range(0, 6, 2)])  # every partition led by 1
        assert set(manager.fetchers) == {(3, 0)}
        tasks = [f.task for f in manager.fetchers.values()]
        await manager.shutdown()
        assert all(task.done() for task in tasks)
        assert manager.fetchers == {}

    asyncio.run(run())


@pytest.mark.parametrize(
    ("ibp", "fetch", "list_offsets"), [("3.0", 12, 7), ("3.4", 13, 7), ("3.9-IV0", 17, 9)]
)
def test_fetchers_take_their_request_versions_from_inter_broker_protocol_version(
    logs: LogManager, ibp: str, fetch: int, list_offsets: int
) -> None:
    async def run() -> None:
        config = BrokerConfig({"inter.broker.protocol.version": ibp}, warn_unknown=False)
        settings = _manager(logs, [config]).settings()
        assert (settings.fetch_version, settings.list_offsets_version) == (fetch, list_offsets)

    asyncio.run(run())


def test_a_partition_a_fetcher_dropped_for_its_failed_log_is_followed_no_more_and_its_idle_fetcher_stops(
    logs: LogManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fetcher drops a partition whose log went offline (a failed truncation checkpoint), as Kafka's
    markPartitionFailed: the manager must forget it too (it listed it as followed, and a change of
    num.replica.fetchers looked it up in a fetcher that no longer had it)."""

    def failing(job: TruncationCheckpointJob) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(TruncationCheckpointJob, "run", failing)

    async def run() -> None:
        config = [_config(1)]
        checkpoints = TruncationCheckpoints(logs.flushes)
        manager = _manager(logs, config, checkpoints)
        offline, online = _hosted(logs, "t", 0, leader=1), _hosted(logs, "u", 0, leader=3)
        for hosted in (offline, online):  # as the LeaderAndIsr that made this broker follow them
            manager.context.followers.replicas.apply_leadership(hosted)
        manager.add_partitions([offline, online])
        offline.log.append_as_follower(bytearray(_batch()))
        offline.log.truncate_to(0)
        with pytest.raises(LogStorageError):
            await checkpoints.written(offline.log)
        fetcher = manager.fetchers[(1, 0)]
        state = fetcher.partitions[("t", 0)]
        await fetcher._apply(None, state, _records_answer())  # type: ignore[arg-type]
        assert manager.followed() == {("u", 0): 3}
        assert (1, 0) not in manager.fetchers
        config[0] = _config(2)
        manager.add_partitions([])  # redistributes what is followed
        assert manager.followed() == {("u", 0): 3}
        await manager.shutdown()
        assert fetcher.task.done()

    asyncio.run(run())


def _batch() -> bytes:
    builder = RecordBatchBuilder(0, partition_leader_epoch=1)
    builder.append(1_700_000_000_000, None, b"value")
    return builder.build()


def _records_answer() -> PartitionData:
    return PartitionData(
        partition_index=0,
        error_code=ErrorCode.NONE,
        high_watermark=0,
        last_stable_offset=0,
        log_start_offset=0,
        diverging_epoch=EpochEndOffset(epoch=-1, end_offset=-1),
        records=_batch(),
    )
