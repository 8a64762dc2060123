"""The metadata cache: which brokers exist, which topics and partitions, and who leads each.

In single-node mode the cluster is this broker alone: it is the controller and the leader of every
partition, and every replica set is [this broker]. Leader epochs, ISRs and replica lists are kept
anyway, in Kafka's terms, so that replication can fill them in later.

In ZooKeeper mode the same cache is fed by the controller's UpdateMetadata (cluster/metadata_update.py)
and LeaderAndIsr: live brokers with an endpoint per listener name, the controller id, every partition's
state. Handlers read it the same way in both modes.
"""

from __future__ import annotations

import asyncio
import enum
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field


class BrokerMode(enum.Enum):
    """How this broker runs: alone (the default), or as one member of a ZooKeeper cluster whose
    controller tells it what it leads. Set by the wiring that connects the broker to ZooKeeper."""

    SINGLE_NODE = "single-node"
    ZOOKEEPER = "zookeeper"


@dataclass(frozen=True, slots=True)
class BrokerEndpoint:
    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True, slots=True)
class LiveBroker:
    """A broker the controller reports alive: its endpoint for each listener name, and its rack."""

    node_id: int
    endpoints: dict[str, BrokerEndpoint]
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
        self.mode = BrokerMode.SINGLE_NODE
        #: The live brokers as the last UpdateMetadata listed them, by id (a single node: itself).
        self.live_brokers: dict[int, LiveBroker] = {}
        #: ZooKeeper mode: set by the controller's first UpdateMetadata. Until then this broker knows no
        #: live broker, controller or topic (registered and serving, it waits for the controller).
        self.first_update = asyncio.Event()
        #: How many times a topic was added to this cache: a regex subscription resolved at a lower
        #: count may miss a topic (KIP-848 groups resolve their regexes again then).
        self.topic_creations = 0

    @property
    def zookeeper_mode(self) -> bool:
        return self.mode is BrokerMode.ZOOKEEPER

    def brokers_on_listener(self, listener: str) -> list[BrokerEndpoint]:
        """ZooKeeper mode: each live broker's endpoint for `listener`, by id; a broker without that
        listener is left out, as Kafka's metadata cache does."""
        found = (broker.endpoints.get(listener) for _, broker in sorted(self.live_brokers.items()))
        return [endpoint for endpoint in found if endpoint is not None]

    def set_live_brokers(self, brokers: list[LiveBroker]) -> None:
        """Replace the live brokers (UpdateMetadata always lists them all). `brokers` keeps one endpoint
        per broker for what counts brokers and racks (replica placement checks)."""
        self.live_brokers = {b.node_id: b for b in brokers}
        self.brokers = {
            b.node_id: BrokerEndpoint(b.node_id, e.host, e.port, b.rack)
            for b in brokers
            for e in list(b.endpoints.values())[:1]
        }

    def set_cluster_of_one(self, broker: LiveBroker) -> None:
        """A single node's cache: `broker` (this one, with its endpoint on each listener) is the only live
        broker and the controller, and the metadata is complete (no UpdateMetadata will ever come)."""
        self.controller_id = broker.node_id
        self.set_live_brokers([broker])
        self.first_update.set()

    def add_topic(self, topic: TopicState, by_id: bool = True) -> None:
        """Cache `topic` (`by_id`: also under its id, unless the controller has not sent one)."""
        self.topics[topic.name] = topic
        if by_id:
            self.topics_by_id[topic.topic_id] = topic
        self.topic_creations += 1

    def remove_topic(self, name: str) -> TopicState | None:
        topic = self.topics.pop(name, None)
        if topic is not None:
            self.topics_by_id.pop(topic.topic_id, None)
        return topic

    def topic(self, name: str) -> TopicState | None:
        return self.topics.get(name)

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicState | None:
        return self.topics_by_id.get(topic_id)

    def reachable_leader(self, partition: PartitionState, listener: str) -> int:
        """`partition`'s leader as a client on `listener` reaches it, or -1 (no leader): in ZooKeeper
        mode a leader the controller does not report alive, or alive without that listener, cannot be
        reached (Kafka's metadata cache answers so). A single node leads everything itself, its only live
        broker, on every listener (`set_cluster_of_one`)."""
        leader = partition.leader_id
        if leader < 0:
            return -1
        broker = self.live_brokers.get(leader)
        return leader if broker is not None and listener in broker.endpoints else -1

    def partition(self, topic: str, partition: int) -> PartitionState | None:
        state = self.topics.get(topic)
        if state is None or not 0 <= partition < len(state.partitions):
            return None
        return state.partitions[partition]

    def follow_isr(
        self,
        topic: str,
        topic_id: uuid.UUID | None,
        partition: int,
        leader: int,
        leader_epoch: int,
        replicas: Sequence[int],
        isr: Sequence[int],
    ) -> None:
        """An ISR change the controller committed for a partition this broker leads (AlterPartition),
        in the cache before the controller's UpdateMetadata brings it: never over a newer leader epoch,
        nor into another topic of the same name (one deleted and created again meanwhile)."""
        state = self.topics.get(topic)
        if state is None or not 0 <= partition < len(state.partitions):
            return
        if topic_id is not None and topic_id.int != 0 and topic_id != state.topic_id:
            return
        cached = state.partitions[partition]
        if cached.leader_epoch > leader_epoch:
            return
        state.partitions[partition] = PartitionState(
            partition=partition,
            leader_id=leader,
            leader_epoch=leader_epoch,
            replicas=list(replicas),
            isr=list(isr),
            offline_replicas=list(cached.offline_replicas),
        )
