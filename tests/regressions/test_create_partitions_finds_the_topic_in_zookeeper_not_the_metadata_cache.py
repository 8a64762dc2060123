"""In a ZooKeeper cluster, CreatePartitions looked the topic up in the broker's metadata cache, which
learns of a new topic only once the controller has elected its leaders and sent UpdateMetadata: right
after a CreateTopics of 5,000 partitions (answered after CREATION_WAIT_S, before the controller had
finished), CreatePartitions to 10,000 was answered UNKNOWN_TOPIC_OR_PARTITION (seen by
bench/kafka_scale_bench.py). Kafka 3.9's ZkAdminManager.createPartitions reads the topic's assignment
from ZooKeeper, so a topic that is written is a topic that can grow. Here the topic is written to
ZooKeeper and no controller ever tells the broker: the window between the two, held open.
"""

from __future__ import annotations

import asyncio
import uuid

import pytest

from odradek.cluster.metadata.zk_topics import ZkTopicAdmin
from odradek.cluster.zookeeper.topic_znodes import TopicAssignmentZnode
from odradek.cluster.zookeeper.topics import create_topic, mark_topic_for_deletion, topic_assignment
from odradek.protocol.error_codes import ErrorCode, KafkaError
from tests.support.zk_topic_admin import admin
from tests.support.zookeeper import zookeeper_server

__all__ = ["admin", "zookeeper_server"]  # the fixtures
pytestmark = pytest.mark.timeout(60)


def test_create_partitions_grows_a_topic_written_to_zookeeper_before_the_controller_announced_it(
    admin: ZkTopicAdmin,
) -> None:
    create_topic(admin.zk, "young", TopicAssignmentZnode({0: [1]}, topic_id=uuid.uuid4()), {})
    assert admin.cluster.topic("young") is None  # the controller has not told this broker yet

    asyncio.run(admin.create_partitions("young", 3))

    found = topic_assignment(admin.zk, "young")
    assert found is not None
    assert {p: list(r) for p, r in found[0].partitions.items()} == {0: [1], 1: [1], 2: [1]}


def test_create_partitions_of_a_topic_in_neither_zookeeper_nor_the_cache_is_unknown(
    admin: ZkTopicAdmin,
) -> None:
    with pytest.raises(KafkaError) as refused:
        asyncio.run(admin.create_partitions("absent", 3))
    assert refused.value.error_code is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_create_partitions_of_an_internal_topic_known_only_to_zookeeper_is_still_refused(
    admin: ZkTopicAdmin,
) -> None:
    create_topic(admin.zk, "__consumer_offsets", TopicAssignmentZnode({0: [1]}, topic_id=uuid.uuid4()), {})

    with pytest.raises(KafkaError) as refused:
        asyncio.run(admin.create_partitions("__consumer_offsets", 3))
    assert refused.value.error_code is ErrorCode.INVALID_REQUEST


def test_create_partitions_of_a_topic_queued_for_deletion_is_refused_as_kafka_does(
    admin: ZkTopicAdmin,
) -> None:
    """Kafka's KafkaApis answers INVALID_TOPIC_EXCEPTION for a topic queued for deletion: growing it
    would give the deletion partitions it never planned to delete."""
    create_topic(admin.zk, "leaving", TopicAssignmentZnode({0: [1]}, topic_id=uuid.uuid4()), {})
    mark_topic_for_deletion(admin.zk, "leaving")

    with pytest.raises(KafkaError) as refused:
        asyncio.run(admin.create_partitions("leaving", 3))
    assert refused.value.error_code is ErrorCode.INVALID_TOPIC_EXCEPTION
    assert refused.value.error_message == "The topic is queued for deletion."
    found = topic_assignment(admin.zk, "leaving")
    assert found is not None and list(found[0].partitions) == [0]
