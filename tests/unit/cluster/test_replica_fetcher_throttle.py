"""The follower's replication quota (Kafka's RemoteLeaderEndPoint.shouldFollowerThrottle and
ReplicaFetcherThread.processPartitionData): once the bytes appended of the partitions a topic's
follower.replication.throttled.replicas names for this broker are over follower.replication.throttled.rate,
those not in sync (the last answer did not find this log's end at the leader's high watermark) are left
out of the next fetch; a fetch with nothing left waits replica.fetch.backoff.ms."""

from __future__ import annotations

import asyncio

from odradek.cluster.replication.fetch_state import FetcherContext, FetcherSettings, FetchState
from odradek.cluster.replication.replica_fetcher import ReplicaFetcher
from odradek.cluster.replication.replication_quota import ReplicationQuota
from odradek.cluster.replication.truncation_checkpoints import TruncationCheckpoints
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.fetch import EpochEndOffset, PartitionData
from odradek.protocol.records import RecordBatchBuilder
from odradek.storage.config import LogConfig
from odradek.storage.flush_scheduler import FlushScheduler
from odradek.storage.log_manager import LogManager
from tests.support.followers import follow, follower_appends

NODE_ID = 2
SETTINGS = FetcherSettings(
    fetch_max_bytes=1 << 20,
    fetch_min_bytes=1,
    fetch_wait_max_ms=100,
    fetch_response_max_bytes=1 << 20,
    fetch_backoff_ms=100,
    socket_timeout_ms=1000,
    socket_receive_buffer_bytes=-1,
)


def _fetcher(logs: LogManager, quota: ReplicationQuota) -> ReplicaFetcher:
    context = FetcherContext(
        node_id=NODE_ID,
        broker_epoch=lambda: 7,
        endpoint=lambda _: None,  # never reached: the tests call the fetcher's steps
        local_host=None,
        followers=follower_appends(logs, NODE_ID, TruncationCheckpoints(FlushScheduler([], {}))),
        quota=quota,
    )
    return ReplicaFetcher("test-fetcher", 1, SETTINGS, context)


def _states(logs: LogManager, throttled: str) -> list[FetchState]:
    logs.apply_topic_config("t", LogConfig())  # the logs exist first
    states = [FetchState("t", index, None, 5, logs.get_or_create_log("t", index)) for index in (0, 1)]
    logs.apply_topic_config(
        "t", LogConfig.from_mapping({"follower.replication.throttled.replicas": throttled})
    )
    return states


def _records(count: int) -> bytes:
    builder = RecordBatchBuilder(0, partition_leader_epoch=5)
    for _ in range(count):
        builder.append(1_700_000_000_000, None, b"v" * 100)
    return builder.build()


async def _stopped(fetcher: ReplicaFetcher) -> None:
    fetcher.task.cancel()
    await asyncio.gather(fetcher.task, return_exceptions=True)


def test_over_the_quota_a_throttled_partition_not_in_sync_is_left_out_of_the_fetch(logs: LogManager) -> None:
    async def run() -> None:
        quota = ReplicationQuota("follower", NODE_ID, 11, 1, lambda: 1000)
        fetcher = _fetcher(logs, quota)
        try:
            states = _states(logs, "0:2,1:3")  # orders-0 throttled on this broker (2), orders-1 on 3
            assert fetcher._unthrottled(states) == states  # nothing recorded yet
            quota.record(50_000)
            assert fetcher._unthrottled(states) == [states[1]]
            assert quota.throttled_total == 1
            states[0].lag = 0  # caught up with the leader's high watermark: in sync, never held back
            assert fetcher._unthrottled(states) == states
        finally:
            await _stopped(fetcher)

    asyncio.run(run())


def test_the_wildcard_throttles_every_partition_and_an_empty_fetch_waits_the_backoff(
    logs: LogManager,
) -> None:
    async def run() -> None:
        quota = ReplicationQuota("follower", NODE_ID, 11, 1, lambda: 1000)
        fetcher = _fetcher(logs, quota)
        try:
            states = _states(logs, "*")
            quota.record(50_000)
            assert fetcher._unthrottled(states) == []
            loop = asyncio.get_running_loop()
            started = loop.time()
            await fetcher._throttled_backoff()
            assert loop.time() - started >= SETTINGS.fetch_backoff_ms / 1000 * 0.9
        finally:
            await _stopped(fetcher)

    asyncio.run(run())


def test_the_bytes_appended_of_a_throttled_partition_are_recorded_and_its_lag_kept(logs: LogManager) -> None:
    async def run() -> None:
        quota = ReplicationQuota("follower", NODE_ID, 11, 1, lambda: 10**9)
        fetcher = _fetcher(logs, quota)
        try:
            states = _states(logs, "0:2")
            for state in states:
                follow(fetcher, state)
            records = _records(10)
            for state in states:
                answer = PartitionData(
                    partition_index=state.partition,
                    error_code=ErrorCode.NONE,
                    high_watermark=25,  # the leader has 15 more than this answer brings
                    last_stable_offset=25,
                    log_start_offset=0,
                    diverging_epoch=EpochEndOffset(epoch=-1, end_offset=-1),
                    records=records,
                )
                await fetcher._apply(None, state, answer)  # type: ignore[arg-type]
            assert quota.bytes_total == len(records)  # orders-0 only
            assert [state.lag for state in states] == [15, 15]
        finally:
            await _stopped(fetcher)

    asyncio.run(run())


def test_a_topic_configs_throttled_replicas_reach_its_log_config() -> None:
    config = LogConfig.from_mapping(
        {
            "leader.replication.throttled.replicas": ["0:1", "1:2"],
            "follower.replication.throttled.replicas": "*",
        }
    )
    assert config.leader_replication_throttled_replicas == ("0:1", "1:2")
    assert config.follower_replication_throttled_replicas == ("*",)
    assert LogConfig.from_mapping({}).leader_replication_throttled_replicas == ()


class _ComparedState(FetchState):
    """A followed partition that counts how often it is compared with another (dataclass equality)."""

    __slots__ = ()
    comparisons = 0

    def __eq__(self, other: object) -> bool:
        type(self).comparisons += 1
        return self is other

    __hash__ = None  # type: ignore[assignment]


def test_leaving_throttled_partitions_out_does_not_compare_each_with_every_other(logs: LogManager) -> None:
    """Each partition kept was looked up in the list of those held back by equality: over the quota,
    a follower of n throttled partitions compared about n * n / 2 of them per fetch on the event loop
    (100 ms at 1,000 partitions, 0.8 s at 3,000), as reassigning a large topic does."""

    async def run() -> None:
        quota = ReplicationQuota("follower", NODE_ID, 11, 1, lambda: 1000)
        fetcher = _fetcher(logs, quota)
        try:
            log = _states(logs, "*")[0].log
            states: list[FetchState] = [_ComparedState("t", index, None, 5, log) for index in range(200)]
            for state in states[::2]:
                state.lag = 0  # in sync: kept
            quota.record(50_000)
            kept = fetcher._unthrottled(states)
            assert kept == states[::2]
            assert _ComparedState.comparisons <= len(kept)  # the check above, not the selection
        finally:
            await _stopped(fetcher)

    asyncio.run(run())
