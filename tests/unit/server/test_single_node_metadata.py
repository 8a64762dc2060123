"""A single node's metadata cache is a cluster of one's, complete once its listeners are bound: itself
the only live broker, with its endpoint on every listener, and nothing more to wait for (no controller's
UpdateMetadata will ever come). So Metadata, DescribeCluster and FindCoordinator answer from the cache
in both modes, and a partition's leader is reachable on each listener as a cluster's live broker is,
with no "which mode?" on the way."""

from __future__ import annotations

import uuid

from odradek.cluster.metadata import BrokerEndpoint, ClusterMetadata, LiveBroker, PartitionState
from odradek.server.membership import SingleNode

NODE = 3


def test_a_single_node_advertises_itself_as_the_one_live_broker_on_every_listener() -> None:
    cluster = ClusterMetadata(str(uuid.uuid4()), NODE, [])
    plain = BrokerEndpoint(NODE, "broker.example", 9092, "rack-a")
    secure = BrokerEndpoint(NODE, "broker.example", 9093, "rack-a")
    SingleNode().advertise(cluster, LiveBroker(NODE, {"PLAINTEXT": plain, "SSL": secure}, "rack-a"))
    assert cluster.first_update.is_set()  # nothing to wait for
    assert cluster.brokers_on_listener("PLAINTEXT") == [plain]
    assert cluster.brokers_on_listener("SSL") == [secure]
    assert cluster.brokers == {NODE: plain}  # one endpoint per broker: replica placement counts brokers
    led = PartitionState(partition=0, leader_id=NODE, leader_epoch=0, replicas=[NODE], isr=[NODE])
    assert cluster.reachable_leader(led, "SSL") == NODE
