"""A broker's topic administration attached to ZooKeeper, its metadata cache told of no topic: the
window between a topic written to ZooKeeper and the controller's UpdateMetadata, held open."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek.cluster.metadata import BrokerEndpoint, ClusterMetadata, LiveBroker
from odradek.cluster.metadata.zk_topics import ZkTopicAdmin
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.config.broker import BrokerConfig
from tests.support.zookeeper import ZooKeeperServer


@pytest.fixture
def admin(zookeeper_server: ZooKeeperServer, tmp_path: Path) -> Iterator[ZkTopicAdmin]:
    """Broker 1's topic administration, attached to ZooKeeper, its metadata cache empty of topics."""
    config = BrokerConfig({"node.id": "1", "log.dirs": str(tmp_path)}, warn_unknown=False)
    endpoint = BrokerEndpoint(1, "127.0.0.1", 9092)
    cluster = ClusterMetadata("cluster", 1, [endpoint])
    cluster.set_live_brokers([LiveBroker(1, {"PLAINTEXT": endpoint})])
    zk = ZooKeeperClient.connect(f"{zookeeper_server.connect_string}/odradek-{uuid.uuid4().hex[:8]}")
    try:
        yield ZkTopicAdmin(config, cluster, zk)
    finally:
        zk.close()
