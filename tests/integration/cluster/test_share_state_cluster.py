"""The share coordinator on three brokers: `__share_group_state` at replication factor 3 (min.isr 2),
reached through the persister's RPCs (cluster/share_state_client.py) from outside the coordinator's
broker; the coordinator's broker SIGKILLed, the state read back from the next leader of its partition,
nothing acknowledged lost."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import pytest

from odradek.cluster.metadata import BrokerEndpoint, ClusterMetadata, LiveBroker
from odradek.cluster.share_state_client import ShareStatePersister
from odradek.config.broker import BrokerConfig
from odradek.partition.share.persister import (
    DeliveryState,
    SharePartitionKey,
    ShareState,
    ShareStateSummary,
    StateBatch,
)
from odradek.protocol.messages.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from odradek.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from tests.support.interop import wait_until
from tests.support.raw_client import RawClient
from tests.support.requirements import require_module
from tests.support.txn_cluster import BROKER_IDS, Cluster
from tests.support.zookeeper import ZooKeeperServer

pytestmark = pytest.mark.timeout(300)
SHARE_STATE = "__share_group_state"
ACKED, AVAILABLE = DeliveryState.ACKNOWLEDGED, DeliveryState.AVAILABLE


@pytest.fixture(scope="module")
def cluster(zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    require_module("confluent_kafka")
    connect = f"{zookeeper_server.connect_string}/odradek-{uuid.uuid4().hex[:8]}"
    made = Cluster(
        tmp_path_factory.mktemp("share-rf3"),
        connect,
        replication=3,
        min_isr=2,
        extra={
            "share.coordinator.state.topic.num.partitions": "3",
            "share.coordinator.state.topic.replication.factor": "3",
            "share.coordinator.state.topic.min.isr": "2",
        },
    )
    try:
        for broker in made.brokers.values():
            broker.start()
        wait_until(lambda: _every_broker_known(made), 60, "three brokers in Metadata", interval=0.2)
        yield made
    finally:
        for broker in made.brokers.values():
            broker.stop()


def _every_broker_known(cluster: Cluster) -> bool:
    try:
        return all(len(cluster.metadata(node, []).brokers) == 3 for node in BROKER_IDS)
    except Exception:
        return False


class FindCoordinatorLookup:
    """The persister's coordinator lookup from outside the cluster: FindCoordinator (key type SHARE)
    to a running broker. This process coordinates nothing: it never calls the local side."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster

    def coordinator_node(self, key: str) -> int | None:
        for node in self.cluster.running():
            broker = self.cluster.brokers[node]
            try:
                with RawClient(broker.port, timeout=2, host=broker.host) as client:
                    response: FindCoordinatorResponse = client.request(
                        FindCoordinatorRequest(key_type=2, coordinator_keys=[key]), 6
                    )
            except Exception:
                continue
            (answer,) = response.coordinators
            return int(answer.node_id) if answer.error_code == 0 else None
        return None

    async def initialize(self, key: SharePartitionKey, state_epoch: int, start_offset: int) -> None:
        raise AssertionError("not a coordinator")

    async def read(self, key: SharePartitionKey, leader_epoch: int) -> ShareState:
        raise AssertionError("not a coordinator")

    async def write(
        self,
        key: SharePartitionKey,
        state_epoch: int,
        leader_epoch: int,
        start_offset: int,
        batches: tuple[StateBatch, ...],
        delivery_complete_count: int = -1,
    ) -> None:
        raise AssertionError("not a coordinator")

    async def delete(self, key: SharePartitionKey) -> None:
        raise AssertionError("not a coordinator")

    async def read_summary(self, key: SharePartitionKey, leader_epoch: int) -> ShareStateSummary:
        raise AssertionError("not a coordinator")


def persister_for(cluster: Cluster) -> ShareStatePersister:
    metadata = ClusterMetadata("test", -1, [])
    metadata.set_live_brokers(
        [
            LiveBroker(node, {"PLAINTEXT": BrokerEndpoint(node, broker.host, broker.port)})
            for node, broker in cluster.brokers.items()
        ]
    )
    config = BrokerConfig({"node.id": "0", "log.dirs": "/nonexistent"}, warn_unknown=False)
    return ShareStatePersister(0, FindCoordinatorLookup(cluster), config, metadata)


def topic_id(cluster: Cluster, name: str) -> uuid.UUID:
    broker = cluster.brokers[1]
    with RawClient(broker.port, timeout=5, host=broker.host) as client:
        response = client.request(
            MetadataRequest(topics=[MetadataRequestTopic(name=name)], allow_auto_topic_creation=False), 12
        )
    (topic,) = response.topics
    assert topic.error_code == 0
    return topic.topic_id


def test_acknowledged_share_state_survives_the_sigkill_of_its_coordinators_broker(cluster: Cluster) -> None:
    cluster.create("work", 1)
    key = SharePartitionKey("workers", topic_id(cluster, "work"), 0)
    lookup = FindCoordinatorLookup(cluster)
    killed: list[int] = []

    async def scenario() -> ShareState:
        persister = persister_for(cluster)
        try:
            await persister.initialize(key, state_epoch=1, start_offset=0)
            await persister.read(key, leader_epoch=4)
            for offset in range(0, 40, 2):  # each write is acknowledged only once the ISR holds it
                batches = (
                    StateBatch(offset, offset, ACKED, 1),
                    StateBatch(offset + 1, offset + 1, AVAILABLE, 2),
                )
                await persister.write(key, 1, 4, offset // 2, batches)
            coordinator = lookup.coordinator_node(key.coordinator_key)
            assert coordinator in BROKER_IDS
            cluster.brokers[coordinator].kill()
            killed.append(coordinator)
            # the persister retries (the dead broker, then NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE)
            # with Kafka's backoff until the controller has elected the partition's next leader
            return await persister.read(key, leader_epoch=5)
        finally:
            persister.close()

    try:
        state = asyncio.run(scenario())
        assert (state.state_epoch, state.start_offset) == (1, 19)
        expected = tuple(
            StateBatch(offset, offset, ACKED, 1)
            if offset % 2 == 0
            else StateBatch(offset, offset, AVAILABLE, 2)
            for offset in range(19, 40)
        )
        assert state.batches == expected
        assert lookup.coordinator_node(key.coordinator_key) not in (None, *killed)
    finally:
        for node in killed:
            cluster.brokers[node].start()
