"""An in-process share coordinator on real `__share_group_state` logs of a single node."""

from __future__ import annotations

import uuid
from pathlib import Path

from odradek.cluster.internal_topics import SingleNodeInternalTopics
from odradek.cluster.metadata import BrokerEndpoint, ClusterMetadata
from odradek.cluster.metadata.topics import LocalTopicAdmin
from odradek.config.broker import BrokerConfig
from odradek.config.topic import resolve_topic_config
from odradek.coordinator.share.coordinator import ShareCoordinator
from odradek.partition.replica_manager import ReplicaManager
from odradek.partition.share.persister import SharePartitionKey
from odradek.protocol.records import iter_record_batches
from odradek.server.share_coordinator import build_share_coordinator
from odradek.storage.config import LogConfig
from odradek.storage.fetch import FetchIsolation
from odradek.storage.log_manager import LogManager

DEFAULTS = {"share.coordinator.state.topic.num.partitions": "3"}


class ShareHarness:
    def __init__(self, tmp_path: Path, **overrides: str) -> None:
        self.tmp_path = tmp_path
        self.overrides = overrides
        settings = {"node.id": "1", "log.dirs": str(tmp_path), **DEFAULTS, **overrides}
        self.config = BrokerConfig(settings, warn_unknown=False)
        self.now_ms = 1_700_000_000_000
        self.logs = LogManager(
            [tmp_path], LogConfig.from_mapping(dict(resolve_topic_config({}, self.config)))
        )
        self.logs.startup()
        self.cluster = ClusterMetadata("cluster", 1, [BrokerEndpoint(1, "localhost", 9092)])
        self.replicas = ReplicaManager(1, self.cluster, self.logs)
        self.topics = LocalTopicAdmin(self.config, self.cluster, self.logs, 1, self.replicas)
        self.topics.load()
        self.coordinator: ShareCoordinator = build_share_coordinator(
            self.config,
            self.cluster,
            SingleNodeInternalTopics(self.topics, self.cluster),
            self.logs,
            1,
            self.replicas,
            clock=lambda: self.now_ms / 1000,
        )

    async def start(self) -> ShareCoordinator:
        """Started, its topic made (as the first share key's lookup makes it) and loaded."""
        await self.coordinator.start()
        await self.coordinator.create_and_load()
        return self.coordinator

    async def topic(self, name: str = "orders", partitions: int = 2) -> uuid.UUID:
        await self.topics.create_topic(name, partitions, 1)
        topic = self.cluster.topic(name)
        assert topic is not None
        return topic.topic_id

    def stop(self) -> None:
        self.coordinator.stop()
        self.logs.shutdown()

    async def restart(self) -> ShareCoordinator:
        """A new coordinator on the same logs (as after a broker restart): the state is the replay."""
        self.stop()
        fresh = ShareHarness(self.tmp_path, **self.overrides)
        self.__dict__.update(fresh.__dict__)
        return await self.start()

    def records(self, key: SharePartitionKey) -> list[tuple[bytes, bytes | None]]:
        """The (key, value) records of `key`'s `__share_group_state` partition, oldest first."""
        partition = self.coordinator.runtime.partition_for(key.coordinator_key)
        log_ = self.logs.get_log("__share_group_state", partition)
        assert log_ is not None
        info = log_.read(0, 1 << 24, isolation=FetchIsolation.LOG_END, min_one_message=True)
        found = []
        for batch in iter_record_batches(info.read_bytes()):
            for record in batch.records:
                assert record.key is not None
                found.append((bytes(record.key), None if record.value is None else bytes(record.value)))
        return found
