"""odradek's own at-least-once producer (client/producer.py) and offset lookups (client/offsets.py),
what the Spark source and sink use for a delegation token's login, against a broker process."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, TopicPartition

from odradek.client.cluster import Cluster, RequestError
from odradek.client.offsets import list_offsets, topic_partitions
from odradek.client.partitioner import partition_for_key
from odradek.client.producer import Producer
from odradek.client.security import PLAINTEXT
from odradek.protocol.error_codes import ErrorCode
from tests.support.broker_process import BrokerProcess

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    settings = {"offsets.topic.num.partitions": "1", "num.partitions": "3"}
    process = BrokerProcess(tmp_path_factory.mktemp("client-producer") / "data", settings).start()
    try:
        yield process
    finally:
        process.stop()


def _read_all(bootstrap: str, topic: str) -> list[tuple[int, bytes | None, bytes | None]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "check", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(3)])
        found: list[tuple[int, bytes | None, bytes | None]] = []
        deadline = time.monotonic() + 30
        while len(found) < 30 and time.monotonic() < deadline:
            for message in consumer.consume(100, timeout=0.5):
                assert message.error() is None, message.error()
                found.append((message.partition(), message.key(), message.value()))
        return found
    finally:
        consumer.close()


def test_every_record_sent_is_acknowledged_on_flush_in_the_java_clients_partition(
    broker: BrokerProcess,
) -> None:
    with Producer(broker.bootstrap) as producer:
        for i in range(20):
            producer.send("own-producer", f"v{i}".encode(), f"k{i}".encode(), headers=[("h", b"x")])
        for i in range(10):
            producer.send("own-producer", f"u{i}".encode(), partition=2)
        producer.flush()
    found = _read_all(broker.bootstrap, "own-producer")
    keyed = sorted((p, k, v) for p, k, v in found if k is not None)
    assert keyed == sorted(
        (partition_for_key(f"k{i}".encode(), 3), f"k{i}".encode(), f"v{i}".encode()) for i in range(20)
    )
    assert sorted(v or b"" for p, k, v in found if k is None and p == 2) == sorted(
        f"u{i}".encode() for i in range(10)
    )


def test_offsets_and_partitions_are_looked_up_without_creating_a_topic(broker: BrokerProcess) -> None:
    with Producer(broker.bootstrap) as producer:
        for i in range(6):
            producer.send("own-offsets", f"v{i}".encode(), partition=i % 3)
        producer.flush()
    cluster = Cluster(broker.bootstrap, 30.0, PLAINTEXT)
    try:
        assert topic_partitions(cluster, ["own-offsets", "own-never-created"]) == {"own-offsets": [0, 1, 2]}
        assert "own-never-created" not in topic_partitions(cluster, None)
        queries = {("own-offsets", p): -1 for p in range(3)} | {("own-offsets", 0): -2}
        assert list_offsets(cluster, queries, 30.0) == {
            ("own-offsets", 0): 0,
            ("own-offsets", 1): 2,
            ("own-offsets", 2): 2,
        }
        far_future = int(time.time() * 1000) + 3_600_000
        assert list_offsets(cluster, {("own-offsets", 1): far_future}, 30.0) == {("own-offsets", 1): -1}
    finally:
        cluster.close()


def test_a_partition_that_does_not_exist_is_an_error_once_the_deadline_passes(broker: BrokerProcess) -> None:
    cluster = Cluster(broker.bootstrap, 1.0, PLAINTEXT)
    try:
        with pytest.raises(RequestError) as refused:
            list_offsets(cluster, {("own-offsets-missing", 0): -1}, 1.0)
        assert refused.value.error is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    finally:
        cluster.close()
