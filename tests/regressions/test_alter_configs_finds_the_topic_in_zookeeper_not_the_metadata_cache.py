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

import pytest

from odradek.cluster.metadata.zk_topics import ZkTopicAdmin
from odradek.cluster.zookeeper import paths
from odradek.cluster.zookeeper.configs import entity_config
from odradek.cluster.zookeeper.topic_znodes import TopicAssignmentZnode
from odradek.cluster.zookeeper.topics import create_topic
from odradek.protocol.error_codes import ErrorCode, KafkaError
from tests.support.zk_topic_admin import admin
from tests.support.zookeeper import zookeeper_server

__all__ = ["admin", "zookeeper_server"]  # the fixtures
pytestmark = pytest.mark.timeout(60)


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
