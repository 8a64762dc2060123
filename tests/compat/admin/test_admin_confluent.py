"""confluent-kafka's (librdkafka's) AdminClient against one broker: topics, partitions, records, configs,
cluster, with the errors a Kafka broker gives."""

from __future__ import annotations

import time
from concurrent.futures import Future
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicCollection, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
)

from tests.support.broker_process import BrokerProcess

pytestmark = pytest.mark.timeout(90)


@pytest.fixture(scope="module")
def admin(shared_broker: BrokerProcess) -> AdminClient:
    return AdminClient({"bootstrap.servers": shared_broker.bootstrap})


def outcome(future: Future[Any]) -> Any:
    """The future's result, or the KafkaError code it failed with."""
    try:
        return future.result(timeout=15)
    except KafkaException as error:
        return error.args[0].code()


def exists(admin: AdminClient, topic: str) -> bool:
    """Whether describe_topics finds the topic (Metadata for named topics)."""
    return outcome(admin.describe_topics(TopicCollection([topic]))[topic]) != KafkaError.UNKNOWN_TOPIC_OR_PART


def produce(bootstrap: str, topic: str, count: int, partition: int = 0) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(count):
        producer.produce(topic, key=b"k%d" % i, value=b"v%d" % i, partition=partition)
    assert producer.flush(15) == 0


def test_create_topics_with_configs_and_assignment(admin: AdminClient) -> None:
    futures = admin.create_topics(
        [
            NewTopic(
                "ck-configs", num_partitions=3, replication_factor=1, config={"cleanup.policy": "compact"}
            ),
            NewTopic("ck-assigned", num_partitions=2, replica_assignment=[[1], [1]]),
            NewTopic("ck-defaults"),
        ]
    )
    assert {name: outcome(f) for name, f in futures.items()} == {
        "ck-configs": None,
        "ck-assigned": None,
        "ck-defaults": None,
    }
    described = admin.describe_topics(TopicCollection(["ck-configs", "ck-assigned", "ck-defaults"]))
    partitions = {name: len(f.result(15).partitions) for name, f in described.items()}
    assert partitions == {"ck-configs": 3, "ck-assigned": 2, "ck-defaults": 1}
    [configs] = admin.describe_configs([ConfigResource("topic", "ck-configs")]).values()
    entry = configs.result(15)["cleanup.policy"]
    assert (entry.value, entry.source) == ("compact", ConfigSource.DYNAMIC_TOPIC_CONFIG.value)


def test_list_topics(admin: AdminClient) -> None:
    admin.create_topics([NewTopic("ck-listed", 1, 1)])["ck-listed"].result(15)
    assert "ck-listed" in admin.list_topics(timeout=5).topics


def test_create_topics_validate_only(admin: AdminClient) -> None:
    futures = admin.create_topics([NewTopic("ck-validated", 2, 1)], validate_only=True)
    assert outcome(futures["ck-validated"]) is None
    assert not exists(admin, "ck-validated")


def test_create_topics_errors(admin: AdminClient) -> None:
    admin.create_topics([NewTopic("ck-existing", 1, 1)])["ck-existing"].result(15)
    futures = admin.create_topics(
        [
            NewTopic("ck-existing", 1, 1),
            NewTopic("ck-bad-rf", 1, 5),
            NewTopic("ck-bad-assignment", num_partitions=1, replica_assignment=[[7]]),
            NewTopic("ck-bad-config", 1, 1, config={"retention.ms": "soon"}),
            NewTopic("ck-unknown-config", 1, 1, config={"no.such.config": "1"}),
            NewTopic("ck bad name", 1, 1),
        ]
    )
    assert {name: outcome(f) for name, f in futures.items()} == {
        "ck-existing": KafkaError.TOPIC_ALREADY_EXISTS,
        "ck-bad-rf": KafkaError.INVALID_REPLICATION_FACTOR,
        "ck-bad-assignment": KafkaError.INVALID_REPLICA_ASSIGNMENT,
        "ck-bad-config": KafkaError.INVALID_CONFIG,
        "ck-unknown-config": KafkaError.INVALID_CONFIG,
        "ck bad name": KafkaError.TOPIC_EXCEPTION,
    }
    with pytest.raises(KafkaException) as raised:
        admin.create_topics([NewTopic("ck-existing", 1, 1)])["ck-existing"].result(15)
    assert "Topic 'ck-existing' already exists." in str(raised.value)


def test_create_partitions(admin: AdminClient) -> None:
    admin.create_topics([NewTopic("ck-grow", 1, 1)])["ck-grow"].result(15)
    futures = admin.create_partitions([NewPartitions("ck-grow", 3, replica_assignment=[[1], [1]])])
    assert outcome(futures["ck-grow"]) is None
    assert len(admin.describe_topics(TopicCollection(["ck-grow"]))["ck-grow"].result(15).partitions) == 3
    errors = admin.create_partitions([NewPartitions("ck-grow", 2), NewPartitions("ck-grow-missing", 2)])
    assert {name: outcome(f) for name, f in errors.items()} == {
        "ck-grow": KafkaError.INVALID_PARTITIONS,
        "ck-grow-missing": KafkaError.UNKNOWN_TOPIC_OR_PART,
    }
    validated = admin.create_partitions([NewPartitions("ck-grow", 8)], validate_only=True)
    assert outcome(validated["ck-grow"]) is None
    assert len(admin.describe_topics(TopicCollection(["ck-grow"]))["ck-grow"].result(15).partitions) == 3


def test_delete_records_then_consume_from_the_new_start(
    admin: AdminClient, shared_broker: BrokerProcess
) -> None:
    admin.create_topics([NewTopic("ck-records", 1, 1)])["ck-records"].result(15)
    produce(shared_broker.bootstrap, "ck-records", 10)
    futures = admin.delete_records([TopicPartition("ck-records", 0, 6)])
    [deleted] = futures.values()
    assert deleted.result(15).low_watermark == 6
    beyond = admin.delete_records([TopicPartition("ck-records", 0, 11)])
    assert outcome(next(iter(beyond.values()))) == KafkaError.OFFSET_OUT_OF_RANGE
    consumer = Consumer(
        {
            "bootstrap.servers": shared_broker.bootstrap,
            "group.id": "ck-records-reader",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.assign([TopicPartition("ck-records", 0)])
        offsets = []
        deadline = time.monotonic() + 15
        while len(offsets) < 4 and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                offsets.append(message.offset())
        assert offsets == [6, 7, 8, 9]
        assert consumer.get_watermark_offsets(TopicPartition("ck-records", 0), timeout=10) == (6, 10)
    finally:
        consumer.close()


def test_describe_and_alter_topic_configs(admin: AdminClient) -> None:
    admin.create_topics([NewTopic("ck-alter", 1, 1, config={"retention.ms": "60000"})])["ck-alter"].result(15)
    resource = ConfigResource("topic", "ck-alter")
    changes = [
        ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND),
        ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE),
        ConfigEntry("segment.ms", "3600000", incremental_operation=AlterConfigOpType.SET),
    ]
    [done] = admin.incremental_alter_configs(
        [ConfigResource("topic", "ck-alter", incremental_configs=changes)]
    ).values()
    assert outcome(done) is None
    configs = admin.describe_configs([resource])[resource].result(15)
    assert configs["cleanup.policy"].value == "delete,compact"
    assert (configs["segment.ms"].value, configs["segment.ms"].source) == (
        "3600000",
        ConfigSource.DYNAMIC_TOPIC_CONFIG.value,
    )
    assert configs["retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value
    subtract = [ConfigEntry("cleanup.policy", "delete", incremental_operation=AlterConfigOpType.SUBTRACT)]
    [done] = admin.incremental_alter_configs(
        [ConfigResource("topic", "ck-alter", incremental_configs=subtract)]
    ).values()
    assert outcome(done) is None
    assert admin.describe_configs([resource])[resource].result(15)["cleanup.policy"].value == "compact"
    bad = [ConfigEntry("retention.ms", "1", incremental_operation=AlterConfigOpType.APPEND)]
    [refused] = admin.incremental_alter_configs(
        [ConfigResource("topic", "ck-alter", incremental_configs=bad)]
    ).values()
    assert outcome(refused) == KafkaError.INVALID_CONFIG
    missing = ConfigResource("topic", "ck-alter-missing")
    assert outcome(admin.describe_configs([missing])[missing]) == KafkaError.UNKNOWN_TOPIC_OR_PART


def test_legacy_alter_configs_replaces_the_set(admin: AdminClient) -> None:
    admin.create_topics([NewTopic("ck-legacy", 1, 1, config={"retention.ms": "60000"})])["ck-legacy"].result(
        15
    )
    resource = ConfigResource("topic", "ck-legacy", set_config={"segment.ms": "7200000"})
    with pytest.warns(DeprecationWarning):
        [done] = admin.alter_configs([resource]).values()
    assert outcome(done) is None
    described = ConfigResource("topic", "ck-legacy")
    configs = admin.describe_configs([described])[described].result(15)
    assert configs["segment.ms"].value == "7200000"
    assert configs["retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value


def test_describe_broker_configs(admin: AdminClient) -> None:
    resource = ConfigResource("broker", "1")
    configs = admin.describe_configs([resource])[resource].result(15)
    assert (
        configs["log.dirs"].is_read_only
        and configs["log.dirs"].source == ConfigSource.STATIC_BROKER_CONFIG.value
    )
    assert configs["num.partitions"].value == "1"
    assert not configs["log.retention.ms"].is_read_only


def test_describe_cluster(admin: AdminClient, shared_broker: BrokerProcess) -> None:
    cluster = admin.describe_cluster(include_authorized_operations=True).result(15)
    assert cluster.cluster_id and cluster.controller.id == 1
    assert [(n.id, f"{n.host}:{n.port}") for n in cluster.nodes] == [(1, shared_broker.bootstrap)]
    assert cluster.authorized_operations


def test_delete_topics(admin: AdminClient) -> None:
    admin.create_topics([NewTopic("ck-doomed", 1, 1)])["ck-doomed"].result(15)
    futures = admin.delete_topics(["ck-doomed", "ck-never-existed"])
    assert {name: outcome(f) for name, f in futures.items()} == {
        "ck-doomed": None,
        "ck-never-existed": KafkaError.UNKNOWN_TOPIC_OR_PART,
    }
    assert not exists(admin, "ck-doomed")
