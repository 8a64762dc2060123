"""Broker settings that were accepted without effect now do what Kafka's do: broker.rack is what
Metadata and DescribeCluster report, fetch.max.bytes caps a Fetch response whatever the client asks;
and message.format.version, which odradek refused, is accepted as Kafka 3.x accepts it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, NewTopic, ResourceType

from odradek.protocol.messages.describe_cluster import DescribeClusterRequest
from odradek.protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from odradek.protocol.messages.metadata import MetadataRequest
from odradek.protocol.records import iter_record_batches
from tests.support.broker_process import BrokerProcess
from tests.support.raw_client import RawClient

pytestmark = pytest.mark.timeout(60)

RACK = "rack-b"
FETCH_MAX_BYTES = 1024  # Kafka's lowest allowed value
BATCH_VALUE = b"v" * 600  # one record batch each, so two never fit in 1 KiB


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    data: Path = tmp_path_factory.mktemp("settings") / "data"
    process = BrokerProcess(data, {"broker.rack": RACK, "fetch.max.bytes": str(FETCH_MAX_BYTES)}).start()
    try:
        yield process
    finally:
        process.stop()


def test_broker_rack_is_reported_in_metadata_and_describe_cluster(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as client:
        metadata = client.request(MetadataRequest(topics=[]), 1)
        cluster = client.request(DescribeClusterRequest(), 0)
    assert [(b.node_id, b.rack) for b in metadata.brokers] == [(1, RACK)]
    assert [(b.broker_id, b.rack) for b in cluster.brokers] == [(1, RACK)]


def test_fetch_max_bytes_caps_a_fetch_response_below_what_the_client_asks(broker: BrokerProcess) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for _ in range(4):
        producer.produce("capped", value=BATCH_VALUE)
        assert producer.flush(10) == 0
    fetch = FetchRequest(
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=10 << 20,
        topics=[
            FetchTopic(
                topic="capped",
                partitions=[FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=10 << 20)],
            )
        ],
    )
    with RawClient(broker.port) as client:
        response = client.request(fetch, 4)
    [partition] = response.responses[0].partitions
    batches = list(iter_record_batches(partition.records or b""))
    assert partition.high_watermark == 4
    assert len(batches) == 1  # a second would pass fetch.max.bytes; the first always comes whole


@pytest.mark.filterwarnings("ignore:alter_configs has been deprecated:DeprecationWarning")
def test_message_format_version_set_as_librdkafka_test_0092_sets_it_is_accepted(
    broker: BrokerProcess,
) -> None:
    """Kafka 3.x accepts the deprecated message.format.version and ignores it; so does odradek."""
    topic = "mixed-msgver"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(10)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    resource = ConfigResource(ResourceType.TOPIC, topic, set_config={"message.format.version": "0.10.0.0"})
    for number in range(6):
        producer.produce(topic, value=f"message-{number}".encode())
        assert producer.flush(10) == 0
        if number == 2:
            admin.alter_configs([resource])[resource].result(10)  # legacy AlterConfigs, as the test does
    described = admin.describe_configs([ConfigResource(ResourceType.TOPIC, topic)])
    entry = next(iter(described.values())).result(10)["message.format.version"]
    assert (entry.value, entry.source) == ("0.10.0.0", ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "mixed-msgver"})
    consumer.assign([TopicPartition(topic, 0, 0)])
    values = []
    deadline = time.monotonic() + 10
    while len(values) < 6 and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            values.append(message.value())
    consumer.close()
    assert values == [f"message-{number}".encode() for number in range(6)]
