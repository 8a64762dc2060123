"""The cluster as Metadata and DescribeCluster show it: brokers, the controller, topics and their partitions.

A broker that stops answering drops out of Metadata, so "down" can only be known by remembering:
`BrokerMemory` keeps every broker the console has seen (and every replica id topics name), and a
remembered broker missing from the latest answer is shown down.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from odradek.cli.client import Admin
from odradek.cli.errors import CliError, kafka_error_message

NO_LEADER = -1


@dataclass(frozen=True)
class Broker:
    id: int
    host: str
    port: int
    rack: str | None
    is_controller: bool
    up: bool

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}" if self.host else "unknown"


@dataclass(frozen=True)
class PartitionState:
    topic: str
    partition: int
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    error: str | None = None

    @property
    def offline(self) -> bool:
        return self.leader == NO_LEADER

    @property
    def under_replicated(self) -> bool:
        return len(self.isr) < len(self.replicas)


@dataclass(frozen=True)
class TopicState:
    name: str
    internal: bool
    partitions: tuple[PartitionState, ...]
    error: str | None = None

    @property
    def replication_factor(self) -> int:
        return max((len(p.replicas) for p in self.partitions), default=0)


@dataclass(frozen=True)
class ClusterState:
    cluster_id: str | None
    controller_id: int | None
    brokers: tuple[Broker, ...]
    topics: dict[str, TopicState] = field(default_factory=dict)

    @property
    def partitions(self) -> list[PartitionState]:
        return [p for topic in self.topics.values() for p in topic.partitions]

    def broker_address(self, broker_id: int) -> str | None:
        for broker in self.brokers:
            if broker.id == broker_id and broker.up:
                return broker.address
        return None


class BrokerMemory:
    """Every broker seen since the console started: id -> (host, port, rack)."""

    def __init__(self) -> None:
        self._seen: dict[int, tuple[str, int, str | None]] = {}
        self._lock = threading.Lock()

    def address_of(self, broker_id: int) -> str | None:
        """host:port of a broker seen before (None if never seen)."""
        with self._lock:
            seen = self._seen.get(broker_id)
        return f"{seen[0]}:{seen[1]}" if seen is not None and seen[0] else None

    def brokers(self, live: list[Broker], replica_ids: set[int], controller_id: int | None) -> list[Broker]:
        """`live` and, marked down, every broker remembered or named as a replica that is not in it."""
        with self._lock:
            for broker in live:
                self._seen[broker.id] = (broker.host, broker.port, broker.rack)
            live_ids = {broker.id for broker in live}
            down = []
            for broker_id in sorted((set(self._seen) | replica_ids) - live_ids):
                host, port, rack = self._seen.get(broker_id, ("", 0, None))
                down.append(Broker(broker_id, host, port, rack, broker_id == controller_id, up=False))
        return sorted([*live, *down], key=lambda broker: broker.id)


def cluster_state(admin: Admin, memory: BrokerMemory, with_topics: bool = True) -> ClusterState:
    """DescribeCluster (brokers, racks, controller, cluster id) and Metadata for every topic.

    Metadata is asked first, also when the topics are not wanted: librdkafka sends DescribeCluster to the
    controller it knows, and when that broker dies it waits for it until the request times out, every
    time; a Metadata answer from a live broker names the new controller and unblocks it.
    """
    topics = _topics(admin)
    description: Any = admin.wait(admin.client.describe_cluster(**admin.options), "DescribeCluster")
    controller = description.controller
    controller_id = controller.id if controller is not None else None
    live = [
        Broker(node.id, node.host, node.port, node.rack or None, node.id == controller_id, up=True)
        for node in description.nodes
    ]
    if not with_topics:
        topics = {}
    replica_ids = {replica for topic in topics.values() for p in topic.partitions for replica in p.replicas}
    brokers = memory.brokers(live, replica_ids, controller_id)
    return ClusterState(description.cluster_id, controller_id, tuple(brokers), topics)


def _topics(admin: Admin) -> dict[str, TopicState]:
    from confluent_kafka import KafkaException

    try:
        metadata = admin.client.list_topics(timeout=admin.timeout)
    except KafkaException as exception:
        raise CliError(kafka_error_message(exception.args[0], admin.bootstrap, "Metadata")) from None
    topics: dict[str, TopicState] = {}
    for name, info in metadata.topics.items():
        partitions = tuple(
            PartitionState(
                topic=name,
                partition=p.id,
                leader=p.leader,
                replicas=tuple(p.replicas),
                isr=tuple(p.isrs),
                error=p.error.str() if p.error is not None else None,
            )
            for p in sorted(info.partitions.values(), key=lambda p: p.id)
        )
        error = info.error.str() if info.error is not None else None
        # Metadata v1+ flags internal topics; the Python metadata object does not carry it, and Kafka's
        # internal topics are exactly the ones named with a leading "__".
        topics[name] = TopicState(name, name.startswith("__"), partitions, error)
    return dict(sorted(topics.items()))
