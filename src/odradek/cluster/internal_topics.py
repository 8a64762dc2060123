"""The coordinators' internal topics as this broker creates them (coordinator/ports.py's
InternalTopics): a single node cuts their replication factor to itself, a cluster refuses more replicas
than live brokers until enough have joined, as Kafka 3.9's AutoTopicCreationManager."""

from __future__ import annotations

from collections.abc import Mapping

from odradek.cluster.metadata import ClusterMetadata
from odradek.cluster.metadata.topics import TopicAdmin
from odradek.protocol.error_codes import ErrorCode, KafkaError


async def _create(
    topics: TopicAdmin, name: str, partitions: int, replication_factor: int, configs: Mapping[str, str]
) -> str | None:
    try:
        await topics.create_topic(name, partitions, replication_factor, configs=dict(configs), internal=True)
    except KafkaError as error:
        if error.error_code is not ErrorCode.TOPIC_ALREADY_EXISTS:
            return str(error)
    return None


class SingleNodeInternalTopics:
    """A single node's: it is the whole cluster, so the topics are made at start-up and a replication
    factor (and min.insync.replicas) over its one broker is cut to it. Kafka has no single node; a
    Kafka broker alone would refuse `offsets.topic.replication.factor=3`, odradek's serves at once."""

    created_at_startup = True

    def __init__(self, topics: TopicAdmin, cluster: ClusterMetadata) -> None:
        self.topics = topics
        self.cluster = cluster

    async def create(
        self, name: str, partitions: int, replication_factor: int, configs: Mapping[str, str]
    ) -> str | None:
        brokers = max(len(self.cluster.brokers), 1)
        if replication_factor > brokers:
            replication_factor = brokers
            if "min.insync.replicas" in configs:
                min_isr = min(int(configs["min.insync.replicas"]), brokers)
                configs = {**configs, "min.insync.replicas": str(min_isr)}
        return await _create(self.topics, name, partitions, replication_factor, configs)


class ZkInternalTopics:
    """A ZooKeeper cluster member's: made at the first FindCoordinator, and refused while fewer brokers
    are alive than the replication factor (Kafka answers COORDINATOR_NOT_AVAILABLE meanwhile)."""

    created_at_startup = False

    def __init__(self, topics: TopicAdmin, cluster: ClusterMetadata) -> None:
        self.topics = topics
        self.cluster = cluster

    async def create(
        self, name: str, partitions: int, replication_factor: int, configs: Mapping[str, str]
    ) -> str | None:
        brokers = max(len(self.cluster.brokers), 1)
        if replication_factor > brokers:
            return f"{brokers} brokers, replication factor {replication_factor}"
        return await _create(self.topics, name, partitions, replication_factor, configs)
