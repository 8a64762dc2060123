"""The metadata cache: which brokers exist, which topics and partitions, and who leads each.

In single-node mode the cluster is this broker alone: it is the controller and the leader of every
partition, and every replica set is [this broker]. Leader epochs, ISRs and replica lists are kept
anyway, in Kafka's terms, so that replication can fill them in later.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class BrokerEndpoint:
    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(slots=True)
class PartitionState:
    partition: int
    leader_id: int
    leader_epoch: int
    replicas: list[int]
    isr: list[int]
    offline_replicas: list[int] = field(default_factory=list)


@dataclass(slots=True)
class TopicState:
    name: str
    topic_id: uuid.UUID
    partitions: list[PartitionState]
    #: Topic-level config overrides, by Kafka name, as strings (what DescribeConfigs reports as set).
    configs: dict[str, str] = field(default_factory=dict)
    is_internal: bool = False


class ClusterMetadata:
    """Brokers and topics as this broker knows them; changed only through TopicAdmin (or the controller)."""

    def __init__(self, cluster_id: str, controller_id: int, brokers: list[BrokerEndpoint]) -> None:
        self.cluster_id = cluster_id
        self.controller_id = controller_id
        self.brokers: dict[int, BrokerEndpoint] = {b.node_id: b for b in brokers}
        self.topics: dict[str, TopicState] = {}
        self.topics_by_id: dict[uuid.UUID, TopicState] = {}

    def add_topic(self, topic: TopicState) -> None:
        self.topics[topic.name] = topic
        self.topics_by_id[topic.topic_id] = topic

    def remove_topic(self, name: str) -> TopicState | None:
        topic = self.topics.pop(name, None)
        if topic is not None:
            self.topics_by_id.pop(topic.topic_id, None)
        return topic

    def topic(self, name: str) -> TopicState | None:
        return self.topics.get(name)

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicState | None:
        return self.topics_by_id.get(topic_id)

    def partition(self, topic: str, partition: int) -> PartitionState | None:
        state = self.topics.get(topic)
        if state is None or not 0 <= partition < len(state.partitions):
            return None
        return state.partitions[partition]
