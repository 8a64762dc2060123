"""compression.type other than producer with real clients: topics made by each client's admin client
(CreateTopics) or changed by it (AlterConfigs, IncrementalAlterConfigs) with a codec, written by a
producer using another codec, read back by every client. CreateTopics with compression.type was
INVALID_CONFIG before ("recompression is not built yet"), which failed client test suites that make
their topics that way."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin import NewTopic as AioNewTopic
from confluent_kafka import Producer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
)
from kafka import KafkaAdminClient
from kafka.admin import AlterConfigOp, ConfigResourceType
from kafka.admin import ConfigResource as KafkaResource
from kafka.admin import NewTopic as KafkaNewTopic

from odradek.protocol.records import Compression
from tests.support.broker_process import BrokerProcess
from tests.support.interop import (
    Sample,
    base_timestamp,
    by_partition,
    expected,
    samples,
    stored_batches,
)
from tests.support.interop_clients import (
    aiokafka_consume,
    aiokafka_consumed,
    aiokafka_produce,
    aiokafka_run,
    confluent_consume,
    confluent_consumed,
    confluent_produce,
    confluent_producer,
    kafka_python_consume,
    kafka_python_consumed,
    kafka_python_produce,
    kafka_python_producer,
)

pytestmark = pytest.mark.timeout(90)

PARTITIONS = 2
PER_PARTITION = 30


def _confluent_create(bootstrap: str, topic: str, configs: dict[str, str]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1, config=configs)], operation_timeout=10)[topic].result(
        15
    )


def _confluent_produce(bootstrap: str, topic: str, produced: list[Sample], **config: Any) -> None:
    reports = confluent_produce(confluent_producer(bootstrap, **config), topic, produced)
    assert [r.error() for r in reports if r.error() is not None] == []


def _counts(produced: list[Sample]) -> dict[int, int]:
    return {partition: len(records) for partition, records in expected(produced).items()}


def _every_client_reads(bootstrap: str, topic: str, produced: list[Sample]) -> None:
    want, counts = expected(produced), _counts(produced)
    assert by_partition(map(confluent_consumed, confluent_consume(bootstrap, topic, counts))) == want
    assert by_partition(map(kafka_python_consumed, kafka_python_consume(bootstrap, topic, counts))) == want
    read = aiokafka_run(aiokafka_consume(bootstrap, topic, counts))
    assert by_partition(map(aiokafka_consumed, read)) == want


def _stored_codecs(broker: BrokerProcess, topic: str) -> set[Compression]:
    return {b.compression for p in range(PARTITIONS) for b in stored_batches(broker.port, topic, p)}


def test_confluent_creates_a_zstd_topic_and_writes_it_with_lz4(interop_broker: BrokerProcess) -> None:
    topic = "codec-confluent-zstd"
    _confluent_create(
        interop_broker.bootstrap, topic, {"compression.type": "zstd", "compression.zstd.level": "9"}
    )
    produced = samples(topic, PARTITIONS, PER_PARTITION, base_timestamp())
    _confluent_produce(
        interop_broker.bootstrap, topic, produced, **{"compression.type": "lz4", "enable.idempotence": True}
    )
    assert _stored_codecs(interop_broker, topic) == {Compression.ZSTD}
    _every_client_reads(interop_broker.bootstrap, topic, produced)


def test_kafka_python_creates_a_gzip_topic_and_writes_it_uncompressed(interop_broker: BrokerProcess) -> None:
    topic = "codec-kafka-python-gzip"
    admin = KafkaAdminClient(bootstrap_servers=interop_broker.bootstrap)
    try:
        admin.create_topics([KafkaNewTopic(topic, PARTITIONS, 1, topic_configs={"compression.type": "gzip"})])
    finally:
        admin.close()
    produced = samples(topic, PARTITIONS, PER_PARTITION, base_timestamp())
    metadata = kafka_python_produce(kafka_python_producer(interop_broker.bootstrap), topic, produced)
    assert all(m is not None for m in metadata)
    assert _stored_codecs(interop_broker, topic) == {Compression.GZIP}
    _every_client_reads(interop_broker.bootstrap, topic, produced)


def test_aiokafka_creates_an_uncompressed_topic_and_writes_it_with_snappy(
    interop_broker: BrokerProcess,
) -> None:
    topic = "codec-aiokafka-uncompressed"
    produced = samples(topic, PARTITIONS, PER_PARTITION, base_timestamp())

    async def scenario() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=interop_broker.bootstrap)
        await admin.start()
        try:
            await admin.create_topics(
                [AioNewTopic(topic, PARTITIONS, 1, topic_configs={"compression.type": "uncompressed"})]
            )
        finally:
            await admin.close()
        await aiokafka_produce(interop_broker.bootstrap, topic, produced, compression_type="snappy")

    asyncio.run(asyncio.wait_for(scenario(), 40))
    assert _stored_codecs(interop_broker, topic) == {Compression.NONE}
    _every_client_reads(interop_broker.bootstrap, topic, produced)


def test_a_codec_set_later_by_alter_configs_applies_to_the_next_batches(
    interop_broker: BrokerProcess,
) -> None:
    topic = "codec-altered"
    bootstrap = interop_broker.bootstrap
    _confluent_create(bootstrap, topic, {})
    first = samples(topic, PARTITIONS, 5, base_timestamp())
    _confluent_produce(bootstrap, topic, first, **{"compression.type": "zstd"})
    admin = AdminClient({"bootstrap.servers": bootstrap})
    # IncrementalAlterConfigs (confluent-kafka)
    changes = [
        ConfigEntry("compression.type", "lz4", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("compression.lz4.level", "12", incremental_operation=AlterConfigOpType.SET),
    ]
    [done] = admin.incremental_alter_configs(
        [ConfigResource("topic", topic, incremental_configs=changes)]
    ).values()
    assert done.result(15) is None
    resource = ConfigResource("topic", topic)
    described = admin.describe_configs([resource])[resource].result(15)
    assert (described["compression.type"].value, described["compression.type"].source) == (
        "lz4",
        ConfigSource.DYNAMIC_TOPIC_CONFIG.value,
    )
    assert described["compression.lz4.level"].value == "12"
    second = samples(topic, PARTITIONS, 5, base_timestamp() + 100_000)
    _confluent_produce(bootstrap, topic, second, **{"compression.type": "gzip"})
    # IncrementalAlterConfigs (kafka-python), then the legacy AlterConfigs (confluent-kafka)
    kafka_admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        kafka_admin.alter_configs(
            [
                KafkaResource(
                    ConfigResourceType.TOPIC, topic, {"compression.type": (AlterConfigOp.SET, "snappy")}
                )
            ]
        )
    finally:
        kafka_admin.close()
    third = samples(topic, PARTITIONS, 5, base_timestamp() + 200_000)
    _confluent_produce(bootstrap, topic, third, **{"compression.type": "none"})
    with pytest.warns(DeprecationWarning):
        [done] = admin.alter_configs(
            [ConfigResource("topic", topic, set_config={"compression.type": "producer"})]
        ).values()
    assert done.result(15) is None
    fourth = samples(topic, PARTITIONS, 5, base_timestamp() + 300_000)
    _confluent_produce(bootstrap, topic, fourth, **{"compression.type": "zstd"})

    batches = stored_batches(interop_broker.port, topic, 0)
    codecs = [b.compression for b in batches]
    # librdkafka sends a batch that compressing does not shrink uncompressed; the topic codec applies
    # to what it sent, so only the producer-codec stages can show NONE.
    runs = [codecs[i] for i in range(len(codecs)) if i == 0 or codecs[i] != codecs[i - 1]]
    assert runs[1:3] == [Compression.LZ4, Compression.SNAPPY]
    assert runs[0] in (Compression.ZSTD, Compression.NONE) and runs[-1] in (
        Compression.ZSTD,
        Compression.NONE,
    )
    produced = [*first, *second, *third, *fourth]
    read = confluent_consume(bootstrap, topic, _counts(produced))
    assert by_partition(map(confluent_consumed, read)) == expected(produced)


def test_a_transactional_producer_s_records_and_markers_on_a_recompressing_topic(
    interop_broker: BrokerProcess,
) -> None:
    topic = "codec-transactions"
    bootstrap = interop_broker.bootstrap
    _confluent_create(bootstrap, topic, {"compression.type": "gzip"})
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": "codec-txn",
            "compression.type": "zstd",
            "linger.ms": 5,
        }
    )
    producer.init_transactions(30)
    producer.begin_transaction()
    for n in range(20):
        producer.produce(topic, value=b"aborted-%d" % n, partition=0)
    producer.flush(30)
    producer.abort_transaction(30)
    producer.begin_transaction()
    for n in range(20):
        producer.produce(topic, value=b"committed-%d " % n * 10, partition=0)
    producer.commit_transaction(30)
    stored = stored_batches(interop_broker.port, topic, 0)
    data = [b for b in stored if not b.is_control]
    markers = [b for b in stored if b.is_control]
    assert {b.compression for b in data} == {Compression.GZIP} and all(b.is_transactional for b in data)
    assert len(markers) == 2 and {b.compression for b in markers} == {Compression.NONE}

    committed = confluent_consume(
        bootstrap, topic, {0: 20}, timeout=30, **{"isolation.level": "read_committed"}
    )
    assert [m.value() for m in committed] == [b"committed-%d " % n * 10 for n in range(20)]
