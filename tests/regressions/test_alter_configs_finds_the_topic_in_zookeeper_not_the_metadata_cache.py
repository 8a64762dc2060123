"""In a ZooKeeper cluster, AlterConfigs of a topic asked the broker's metadata cache whether the topic
exists, which learns of a new topic only once the controller has elected its leaders: right after a
CreateTopics answered before the controller had finished (thousands of partitions), an AlterConfigs
of it was answered UNKNOWN_TOPIC_OR_PARTITION. Kafka 3.9 (AdminZkClient.validateTopicConfig) asks
ZooKeeper, and before it validates the configs: a topic that does not exist is UNKNOWN_TOPIC_OR_PARTITION
whatever configs were sent. The same gap CreatePartitions had (see
test_create_partitions_finds_the_topic_in_zookeeper_not_the_metadata_cache.py).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek.cluster.metadata import BrokerEndpoint, ClusterMetadata, LiveBroker
from odradek.cluster.zk_topics import ZkTopicAdmin
from odradek.cluster.zookeeper import paths
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.cluster.zookeeper.configs import entity_config
from odradek.cluster.zookeeper.topic_znodes import TopicAssignmentZnode
from odradek.cluster.zookeeper.topics import create_topic
from odradek.config.broker import BrokerConfig
from odradek.config.topic import resolve_topic_config
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.storage.config import LogConfig
from odradek.storage.log_manager import LogManager
from tests.support.zookeeper import ZooKeeperServer, zookeeper_server

__all__ = ["zookeeper_server"]  # the fixture
pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def admin(zookeeper_server: ZooKeeperServer, tmp_path: Path) -> Iterator[ZkTopicAdmin]:
    """Broker 1's topic administration, attached to ZooKeeper, its metadata cache empty of topics."""
    config = BrokerConfig({"node.id": "1", "log.dirs": str(tmp_path)}, warn_unknown=False)
    logs = LogManager([tmp_path], LogConfig.from_mapping(dict(resolve_topic_config({}, config))))
    endpoint = BrokerEndpoint(1, "127.0.0.1", 9092)
    cluster = ClusterMetadata("cluster", 1, [endpoint])
    cluster.set_live_brokers([LiveBroker(1, {"PLAINTEXT": endpoint})])
    zk = ZooKeeperClient.connect(f"{zookeeper_server.connect_string}/odradek-{uuid.uuid4().hex[:8]}")
    topics = ZkTopicAdmin(config, cluster, logs, 1)
    topics.attach(zk)
    try:
        yield topics
    finally:
        zk.close()


def test_alter_configs_of_a_topic_written_to_zookeeper_before_the_controller_announced_it_is_stored(
    admin: ZkTopicAdmin,
) -> None:
    create_topic(admin.zk, "young", TopicAssignmentZnode({0: [1]}, topic_id=uuid.uuid4()), {})
    assert admin.cluster.topic("young") is None  # the controller has not told this broker yet

    asyncio.run(admin.alter_configs("young", lambda current: {**current, "retention.ms": "60000"}))

    assert entity_config(admin.zk, paths.TOPIC_CONFIG, "young") == {"retention.ms": "60000"}


def test_alter_configs_of_a_topic_in_neither_zookeeper_nor_the_cache_is_unknown_before_configs_are_checked(
    admin: ZkTopicAdmin,
) -> None:
    with pytest.raises(KafkaError) as refused:
        asyncio.run(admin.alter_configs("absent", lambda current: {"retention.ms": "not a number"}))
    assert refused.value.error_code is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
