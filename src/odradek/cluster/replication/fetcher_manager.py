"""The replica fetchers of a broker, grouped by leader (Kafka's ReplicaFetcherManager).

The replica manager hands over the partitions this broker follows (after each LeaderAndIsr) and takes
back those it leads or stops hosting. A partition goes to fetcher `(leader, index)`, where the index
is Kafka's `abs(31 * topic.hashCode() + partition) % num.replica.fetchers`, so that each leader is
fetched from over at most `num.replica.fetchers` connections. A fetcher left with no partition stops.
`num.replica.fetchers` is read at each change: a new value redistributes the partitions.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable

from odradek.cluster.inter_broker_versions import InterBrokerVersions
from odradek.cluster.metadata import ClusterMetadata
from odradek.cluster.replication.fetch_state import FetcherContext, FetcherSettings, FetchState
from odradek.cluster.replication.replica_fetcher import ReplicaFetcher
from odradek.config.broker import BrokerConfig
from odradek.partition.hosted_partition import HostedPartition, PartitionKey
from odradek.tasks.cancelling import cancel_and_wait


class ReplicaFetcherManager:
    def __init__(
        self, config: Callable[[], BrokerConfig], cluster: ClusterMetadata, context: FetcherContext
    ) -> None:
        self.config = config
        self.cluster = cluster
        self.context = context
        self.fetchers: dict[tuple[int, int], ReplicaFetcher] = {}
        self._where: dict[PartitionKey, tuple[int, int]] = {}
        #: Fetchers stopped since (cancelled, maybe still ending): shutdown waits for them too.
        self._retired: set[asyncio.Task[None]] = set()
        self._fetchers_per_broker = max(config().num_replica_fetchers, 1)

    def add_partitions(self, partitions: list[HostedPartition]) -> None:
        """Follow each partition from its leader at its leader epoch (from the log end onwards)."""
        self._resize_if_changed()
        for hosted in partitions:
            key = (hosted.topic, hosted.partition)
            self.remove_partitions([key])
            replica_log = hosted.log
            if replica_log.latest_epoch is None and replica_log.high_watermark < replica_log.log_end_offset:
                # A log without leader epochs cannot ask where it diverges: as Kafka, it keeps only
                # what was committed and fetches the rest again.
                self.context.followers.truncate(replica_log, replica_log.high_watermark, "no leader epochs")
            state = FetchState(
                topic=hosted.topic,
                partition=hosted.partition,
                topic_id=hosted.topic_id,
                leader_epoch=hosted.leader_epoch,
                log=replica_log,
            )
            self._place(hosted.leader, state)

    def remove_partitions(self, keys: Iterable[PartitionKey]) -> None:
        for key in keys:
            where = self._where.pop(key, None)
            if where is None:
                continue
            self.fetchers[where].remove(key)
            self._stop_if_idle(where)

    def _partition_failed(self, key: PartitionKey) -> None:
        """A fetcher dropped the partition (its log failed: offline until restart, and the replica
        manager never hands it over again)."""
        where = self._where.pop(key, None)
        if where is not None:
            self._stop_if_idle(where)

    def _stop_if_idle(self, where: tuple[int, int]) -> None:
        fetcher = self.fetchers[where]
        if not fetcher.partitions:
            del self.fetchers[where]
            fetcher.task.cancel()
            fetcher.close_connection()
            self._retired.add(fetcher.task)
            fetcher.task.add_done_callback(self._retired.discard)

    def followed(self) -> dict[PartitionKey, int]:
        """Each followed partition's leader (for tests and the console)."""
        return {key: leader for key, (leader, _) in self._where.items()}

    async def shutdown(self) -> None:
        """Stop every fetcher and wait until each has ended."""
        tasks = [f.task for f in self.fetchers.values()] + list(self._retired)
        self.fetchers.clear()
        self._where.clear()
        await asyncio.gather(*(cancel_and_wait(task) for task in tasks))

    def settings(self) -> FetcherSettings:
        config = self.config()
        versions = InterBrokerVersions.at(config.inter_broker_protocol_version)
        return FetcherSettings(
            fetch_max_bytes=config.replica_fetch_max_bytes,
            fetch_min_bytes=config.replica_fetch_min_bytes,
            fetch_wait_max_ms=config.replica_fetch_wait_max_ms,
            fetch_response_max_bytes=config.replica_fetch_response_max_bytes,
            fetch_backoff_ms=config.replica_fetch_backoff_ms,
            socket_timeout_ms=config.replica_socket_timeout_ms,
            socket_receive_buffer_bytes=config.replica_socket_receive_buffer_bytes,
            fetch_version=versions.fetch,
            list_offsets_version=versions.list_offsets,
        )

    def _place(self, leader: int, state: FetchState) -> None:
        where = (leader, fetcher_index(state.topic, state.partition, self._fetchers_per_broker))
        fetcher = self.fetchers.get(where)
        if fetcher is None:
            fetcher = ReplicaFetcher(
                f"ReplicaFetcher-{where[1]}-{leader}",
                leader,
                self.settings(),
                self.context,
                self._partition_failed,
            )
            self.fetchers[where] = fetcher
        fetcher.add(state)
        self._where[state.key] = where

    def _resize_if_changed(self) -> None:
        wanted = max(self.config().num_replica_fetchers, 1)
        if wanted == self._fetchers_per_broker:
            return
        self._fetchers_per_broker = wanted
        moving = [(where[0], self.fetchers[where].partitions[key]) for key, where in self._where.items()]
        self.remove_partitions(list(self._where))
        for leader, state in moving:
            self._place(leader, state)


def fetcher_index(topic: str, partition: int, fetchers_per_broker: int) -> int:
    """Kafka's AbstractFetcherManager.getFetcherId: abs(31 * topic.hashCode() + partition) % n."""
    value = _to_int32(31 * java_string_hash(topic) + partition)
    return abs(value) % fetchers_per_broker if value != -(2**31) else 0


def java_string_hash(text: str) -> int:
    """Java's String.hashCode (over UTF-16 code units), as a signed 32-bit value."""
    value = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        value = (31 * value + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return _to_int32(value)


def _to_int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value
