"""aiokafka's AIOKafkaAdminClient (old protocol versions: CreateTopics v3, DeleteTopics v3,
CreatePartitions v1, DescribeConfigs v2, AlterConfigs v1) against one broker."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic, RecordsToDelete
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.errors import InvalidPartitionsError, UnknownTopicOrPartitionError
from aiokafka.structs import TopicPartition

from tests.support.broker_process import BrokerProcess

pytestmark = pytest.mark.timeout(90)

TOPIC_ALREADY_EXISTS = 36
INVALID_REPLICATION_FACTOR = 38
INVALID_CONFIG = 40
UNKNOWN_TOPIC_OR_PARTITION = 3


def with_admin(bootstrap: str, scenario: Callable[[AIOKafkaAdminClient], Awaitable[Any]]) -> Any:
    async def run() -> Any:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            return await scenario(admin)
        finally:
            await admin.close()

    return asyncio.run(run())


def test_topics_and_partitions(shared_broker: BrokerProcess) -> None:
    async def scenario(admin: AIOKafkaAdminClient) -> None:
        created = await admin.create_topics(
            [
                NewTopic("aio-topic", 2, 1, topic_configs={"retention.ms": "60000"}),
                NewTopic("aio-assigned", -1, -1, replica_assignments={0: [1], 1: [1]}),
            ]
        )
        assert [(t, e) for t, e, _ in created.topic_errors] == [("aio-topic", 0), ("aio-assigned", 0)]
        again = await admin.create_topics(
            [
                NewTopic("aio-topic", 1, 1),
                NewTopic("aio-rf", 1, 3),
                NewTopic("aio-config", 1, 1, topic_configs={"x": "y"}),
            ]
        )
        assert [(t, e) for t, e, _ in again.topic_errors] == [
            ("aio-topic", TOPIC_ALREADY_EXISTS),
            ("aio-rf", INVALID_REPLICATION_FACTOR),
            ("aio-config", INVALID_CONFIG),
        ]
        assert again.topic_errors[0][2] == "Topic 'aio-topic' already exists."
        validated = await admin.create_topics([NewTopic("aio-validated", 1, 1)], validate_only=True)
        assert validated.topic_errors[0][1] == 0
        assert {"aio-topic", "aio-assigned"} <= set(await admin.list_topics())
        assert "aio-validated" not in await admin.list_topics()
        grown = await admin.create_partitions({"aio-topic": NewPartitions(4)})
        assert [(t, e) for t, e, _ in grown.topic_errors] == [("aio-topic", 0)]
        with pytest.raises(UnknownTopicOrPartitionError):
            await admin.create_partitions({"aio-missing": NewPartitions(2)})
        with pytest.raises(InvalidPartitionsError, match="which is higher than the requested"):
            await admin.create_partitions({"aio-topic": NewPartitions(3)})
        [described] = await admin.describe_topics(["aio-topic"])
        assert len(described["partitions"]) == 4
        deleted = await admin.delete_topics(["aio-assigned", "aio-missing"])
        assert list(deleted.topic_error_codes) == [
            ("aio-assigned", 0),
            ("aio-missing", UNKNOWN_TOPIC_OR_PARTITION),
        ]

    with_admin(shared_broker.bootstrap, scenario)


def test_configs(shared_broker: BrokerProcess) -> None:
    async def scenario(admin: AIOKafkaAdminClient) -> None:
        await admin.create_topics([NewTopic("aio-configs", 1, 1, topic_configs={"retention.ms": "60000"})])
        topic = ConfigResource(ConfigResourceType.TOPIC, "aio-configs")
        broker = ConfigResource(ConfigResourceType.BROKER, "1", {"log.cleaner.backoff.ms": None})
        altered = await admin.alter_configs(
            [
                ConfigResource(ConfigResourceType.TOPIC, "aio-configs", {"segment.ms": "3600000"}),
                ConfigResource(ConfigResourceType.BROKER, "1", {"log.cleaner.backoff.ms": "25000"}),
            ]
        )
        assert [r[0] for response in altered for r in response.resources] == [0, 0]
        responses = await admin.describe_configs([topic, broker], include_synonyms=True)
        entries = {
            (resource[3], entry[0]): entry
            for response in responses
            for resource in response.resources
            for entry in resource[4]
        }
        # AlterConfigs replaced the topic's whole set: retention.ms is back to its default.
        assert entries[("aio-configs", "segment.ms")][1:4] == ("3600000", False, 1)
        assert entries[("aio-configs", "retention.ms")][3] == 5
        assert entries[("1", "log.cleaner.backoff.ms")][1:4] == ("25000", False, 2)
        await admin.alter_configs([ConfigResource(ConfigResourceType.BROKER, "1", {})])

    with_admin(shared_broker.bootstrap, scenario)


def test_cluster_and_delete_records(shared_broker: BrokerProcess) -> None:
    async def scenario(admin: AIOKafkaAdminClient) -> None:
        cluster = await admin.describe_cluster()
        assert cluster["controller_id"] == 1
        assert [(b["node_id"], b["port"]) for b in cluster["brokers"]] == [(1, shared_broker.port)]
        await admin.create_topics([NewTopic("aio-records", 1, 1)])
        producer = AIOKafkaProducer(bootstrap_servers=shared_broker.bootstrap)
        await producer.start()
        try:
            for i in range(6):
                await producer.send_and_wait("aio-records", b"v%d" % i, partition=0)
        finally:
            await producer.stop()
        partition = TopicPartition("aio-records", 0)
        assert await admin.delete_records({partition: RecordsToDelete(4)}) == {partition: 4}

    with_admin(shared_broker.bootstrap, scenario)
