"""kafka-python's KafkaAdminClient against one broker: topics (by name and id), partitions, records,
configs (incremental and legacy), cluster and log dirs."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import kafka.errors as errors
import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import AlterConfigOp, ConfigResource, ConfigResourceType, KafkaAdminClient

from tests.support.broker_process import BrokerProcess

pytestmark = pytest.mark.timeout(90)


@pytest.fixture(scope="module")
def admin(shared_broker: BrokerProcess) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=shared_broker.bootstrap)
    try:
        yield client
    finally:
        client.close()


def produce(bootstrap: str, topic: str, count: int) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for i in range(count):
        producer.send(topic, key=b"k%d" % i, value=b"v%d" % i, partition=0)
    producer.flush(10)
    producer.close()


def codes(result: dict[str, object], key: str = "topics") -> dict[str, int]:
    return {t["name"]: t["error_code"] for t in result[key]}  # type: ignore[attr-defined]


def test_create_list_and_describe_topics(admin: KafkaAdminClient) -> None:
    result = admin.create_topics(
        {
            "kp-configs": {
                "num_partitions": 2,
                "replication_factor": 1,
                "configs": {"retention.ms": "60000"},
            },
            "kp-assigned": {"assignments": {0: [1], 1: [1], 2: [1]}},
            "kp-defaults": {},
        }
    )
    assert codes(result) == {"kp-configs": 0, "kp-assigned": 0, "kp-defaults": 0}
    created = {t["name"]: t for t in result["topics"]}
    assert (created["kp-configs"]["num_partitions"], created["kp-configs"]["replication_factor"]) == (2, 1)
    assert created["kp-configs"]["configs"]["retention.ms"]["value"] == "60000"
    assert {"kp-configs", "kp-assigned", "kp-defaults"} <= set(admin.list_topics())
    described = {t["name"]: t for t in admin.describe_topics(["kp-configs", "kp-assigned", "kp-defaults"])}
    assert {name: len(t["partitions"]) for name, t in described.items()} == {
        "kp-configs": 2,
        "kp-assigned": 3,
        "kp-defaults": 1,
    }
    by_id = admin.describe_topics([uuid.UUID(created["kp-configs"]["topic_id"])])
    assert [t["name"] for t in by_id] == ["kp-configs"]


def test_create_topics_validate_only_and_errors(admin: KafkaAdminClient) -> None:
    validated = admin.create_topics({"kp-validated": {"num_partitions": 3}}, validate_only=True)
    assert codes(validated) == {"kp-validated": 0}
    assert "kp-validated" not in admin.list_topics()
    admin.create_topics({"kp-existing": {}})
    result = admin.create_topics(
        {
            "kp-existing": {},
            "kp-zero": {"num_partitions": 0},
            "kp-rf": {"replication_factor": 4},
            "kp-assignment": {"assignments": {0: [1], 2: [1]}},
            "kp-config": {"configs": {"cleanup.policy": "sometimes"}},
            "kp.bad!": {},
        },
        raise_errors=False,
    )
    assert codes(result) == {
        "kp-existing": errors.TopicAlreadyExistsError.errno,
        "kp-zero": errors.InvalidPartitionsError.errno,
        "kp-rf": errors.InvalidReplicationFactorError.errno,
        "kp-assignment": errors.InvalidReplicationAssignmentError.errno,
        "kp-config": errors.InvalidConfigurationError.errno,
        "kp.bad!": errors.InvalidTopicError.errno,
    }
    with pytest.raises(errors.TopicAlreadyExistsError):
        admin.create_topics({"kp-existing": {}})


def test_create_partitions(admin: KafkaAdminClient) -> None:
    admin.create_topics({"kp-grow": {"num_partitions": 1}})
    admin.create_partitions({"kp-grow": 2})
    admin.create_partitions({"kp-grow": {"count": 4, "assignments": [[1], [1]]}})
    assert len(admin.describe_topics(["kp-grow"])[0]["partitions"]) == 4
    with pytest.raises(errors.InvalidPartitionsError):
        admin.create_partitions({"kp-grow": 3})
    with pytest.raises(errors.UnknownTopicOrPartitionError):
        admin.create_partitions({"kp-grow-missing": 3})


def test_delete_records_then_consume_from_the_new_start(
    admin: KafkaAdminClient, shared_broker: BrokerProcess
) -> None:
    admin.create_topics({"kp-records": {"num_partitions": 1}})
    produce(shared_broker.bootstrap, "kp-records", 8)
    partition = TopicPartition("kp-records", 0)
    deleted = admin.delete_records({partition: 5})
    assert deleted[partition]["low_watermark"] == 5
    consumer = KafkaConsumer(bootstrap_servers=shared_broker.bootstrap, consumer_timeout_ms=3000)
    try:
        consumer.assign([partition])
        assert consumer.beginning_offsets([partition]) == {partition: 5}
        consumer.seek_to_beginning()
        assert [(m.offset, m.value) for m in consumer] == [(5, b"v5"), (6, b"v6"), (7, b"v7")]
    finally:
        consumer.close()
    everything = admin.delete_records({partition: -1})
    assert everything[partition]["low_watermark"] == 8
    with pytest.raises(errors.OffsetOutOfRangeError):
        admin.delete_records({partition: 9})


def test_topic_configs(admin: KafkaAdminClient) -> None:
    admin.create_topics({"kp-alter": {"configs": {"retention.ms": "60000"}}})
    changes = {
        "cleanup.policy": (AlterConfigOp.APPEND, "compact"),
        "retention.ms": (AlterConfigOp.DELETE, None),
        "segment.ms": "3600000",
    }
    admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "kp-alter", changes)])
    described = admin.describe_configs(
        [ConfigResource(ConfigResourceType.TOPIC, "kp-alter")], include_synonyms=True
    )
    configs = described["topic"]["kp-alter"]
    assert {name: c["value"] for name, c in configs.items()} == {
        "cleanup.policy": "delete,compact",
        "segment.ms": "3600000",
    }
    assert configs["segment.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
    admin.alter_configs(
        [
            ConfigResource(
                ConfigResourceType.TOPIC, "kp-alter", {"cleanup.policy": (AlterConfigOp.SUBTRACT, "delete")}
            )
        ]
    )
    every = admin.describe_configs(
        [ConfigResource(ConfigResourceType.TOPIC, "kp-alter")], config_filter="all"
    )
    assert every["topic"]["kp-alter"]["cleanup.policy"]["value"] == "compact"
    assert every["topic"]["kp-alter"]["retention.ms"]["config_source"] == "DEFAULT_CONFIG"
    # The legacy API replaces the whole set: kafka-python fills in the other modified keys itself.
    admin.alter_configs(
        [ConfigResource(ConfigResourceType.TOPIC, "kp-alter", {"segment.ms": "7200000"})], incremental=False
    )
    after = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "kp-alter")])["topic"][
        "kp-alter"
    ]
    assert {name: c["value"] for name, c in after.items()} == {
        "cleanup.policy": "compact",
        "segment.ms": "7200000",
    }


def test_broker_configs(admin: KafkaAdminClient) -> None:
    resource = ConfigResource(ConfigResourceType.BROKER, "1")
    configs = admin.describe_configs([resource], config_filter="all")["broker"]["1"]
    assert configs["num.partitions"]["value"] == "1"
    assert configs["log.dirs"]["read_only"] and configs["log.dirs"]["config_source"] == "STATIC_BROKER_CONFIG"
    admin.alter_configs([ConfigResource(ConfigResourceType.BROKER, "1", {"log.cleaner.backoff.ms": "20000"})])
    changed = admin.describe_configs(
        [ConfigResource(ConfigResourceType.BROKER, "1", ["log.cleaner.backoff.ms"])]
    )
    assert changed["broker"]["1"]["log.cleaner.backoff.ms"]["value"] == "20000"
    assert changed["broker"]["1"]["log.cleaner.backoff.ms"]["config_source"] == "DYNAMIC_BROKER_CONFIG"
    admin.reset_configs([ConfigResource(ConfigResourceType.BROKER, "1", ["log.cleaner.backoff.ms"])])
    reset = admin.describe_configs(
        [ConfigResource(ConfigResourceType.BROKER, "1", ["log.cleaner.backoff.ms"])], config_filter="all"
    )
    assert reset["broker"]["1"]["log.cleaner.backoff.ms"]["config_source"] == "DEFAULT_CONFIG"


def test_describe_cluster_and_log_dirs(admin: KafkaAdminClient, shared_broker: BrokerProcess) -> None:
    cluster = admin.describe_cluster()
    assert cluster["controller_id"] == 1 and cluster["cluster_id"]
    assert [(b["broker_id"], b["host"], b["port"]) for b in cluster["brokers"]] == [
        (1, "127.0.0.1", shared_broker.port)
    ]
    admin.create_topics({"kp-dirs": {"num_partitions": 2}})
    produce(shared_broker.bootstrap, "kp-dirs", 3)
    [broker] = admin.describe_log_dirs({"kp-dirs": [0, 1]})
    [log_dir] = broker["log_dirs"]
    assert log_dir["log_dir"] == str(shared_broker.data_dir.absolute())
    sizes = {p["partition_index"]: p["partition_size"] for t in log_dir["topics"] for p in t["partitions"]}
    assert sizes[1] == 0 < sizes[0]
    assert log_dir["total_bytes"] >= log_dir["usable_bytes"] > 0


def test_delete_topics_by_name_and_by_id(admin: KafkaAdminClient) -> None:
    created = admin.create_topics({"kp-doomed": {}, "kp-doomed-by-id": {}})
    topic_id = uuid.UUID({t["name"]: t for t in created["topics"]}["kp-doomed-by-id"]["topic_id"])
    result = admin.delete_topics(["kp-doomed", topic_id])
    assert {(t["name"], t["error_code"]) for t in result["topics"]} == {
        ("kp-doomed", 0),
        ("kp-doomed-by-id", 0),
    }
    assert not {"kp-doomed", "kp-doomed-by-id"} & set(admin.list_topics())
    missing = admin.delete_topics(["kp-never-existed", uuid.uuid4()], raise_errors=False)
    assert sorted(t["error_code"] for t in missing["topics"]) == [
        errors.UnknownTopicOrPartitionError.errno,
        errors.UnknownTopicIdError.errno,
    ]
