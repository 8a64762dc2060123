"""Fetching from followers (KIP-392), end to end: a real ZooKeeper and three brokers in racks a, b and
c, topics with three replicas, consumers of confluent-kafka (librdkafka) and kafka-python.

Which broker served a consumer is read from each broker's `odradek_topic_bytes_out` (Prometheus
endpoint): it counts the record bytes a broker returned to clients, never to followers, so a broker
that only followed a topic and redirected nobody has none. Broker 1 runs Kafka's LeaderSelector, 2 and 3
the RackAwareReplicaSelector: a topic's leader decides where its consumers go.
"""

from __future__ import annotations

import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from tests.support.broker_process import BrokerProcess, free_port
from tests.support.interop import consume_partition_zero, wait_until
from tests.support.requirements import require_module
from tests.support.zookeeper import ZooKeeperServer

RACKS = {1: "a", 2: "b", 3: "c"}
SELECTORS = {
    1: "org.apache.kafka.common.replica.LeaderSelector",
    2: "org.apache.kafka.common.replica.RackAwareReplicaSelector",
    3: "org.apache.kafka.common.replica.RackAwareReplicaSelector",
}
#: Bounds of the waits on a loaded machine: the checks pass as soon as they hold.
PATIENCE_S = 60
RECORDS = 200


class Cluster:
    def __init__(self, base: Path, connect: str) -> None:
        self.brokers = {
            node: BrokerProcess(
                base / f"broker-{node}",
                {
                    "node.id": str(node),
                    "broker.rack": RACKS[node],
                    "replica.selector.class": SELECTORS[node],
                    "metrics.host": f"127.0.0.{node + 1}",
                    "metrics.port": str(free_port()),
                    "zookeeper.connect": connect,
                    "zookeeper.session.timeout.ms": "20000",
                    "replica.fetch.wait.max.ms": "200",
                    "default.replication.factor": "3",
                    "offsets.topic.replication.factor": "3",
                    "offsets.topic.num.partitions": "1",
                    "transaction.state.log.num.partitions": "1",
                    "controlled.shutdown.retry.backoff.ms": "500",
                    "auto.leader.rebalance.enable": "false",
                },
                host=f"127.0.0.{node + 1}",
            )
            for node in RACKS
        }

    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers.values() if b.process is not None)

    def create(self, topic: str, replicas: list[int]) -> None:
        """One partition on `replicas`, the first its leader; returns once every replica is in sync."""
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": self.bootstrap()})
        admin.create_topics([NewTopic(topic, 1, replica_assignment=[replicas])], operation_timeout=15)[
            topic
        ].result(30)

    def bytes_out(self, node: int, topic: str) -> float:
        """What broker `node` returned to clients of `topic` (0 when it served none)."""
        return self.metric(node, f'odradek_topic_bytes_out_total{{topic="{topic}"}}')

    def metric(self, node: int, series: str) -> float:
        """One series of broker `node`'s metrics endpoint (0 when it has none)."""
        broker = self.brokers[node]
        url = f"http://{broker.host}:{broker.overrides['metrics.port']}/metrics"
        with urllib.request.urlopen(url, timeout=10) as scraped:
            for line in scraped.read().decode().splitlines():
                if line.startswith(f"{series} "):
                    return float(line.rsplit(" ", 1)[1])
        return 0.0


@pytest.fixture(scope="module")
def cluster(zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    require_module("confluent_kafka")
    chroot = f"/odradek-{uuid.uuid4().hex[:8]}"
    made = Cluster(tmp_path_factory.mktemp("followers"), zookeeper_server.connect_string + chroot)
    view = KazooClient(hosts=zookeeper_server.connect_string)
    view.start(10)
    try:
        for broker in made.brokers.values():
            broker.start()
        ids = f"{chroot}/brokers/ids"
        wait_until(
            lambda: view.exists(ids) is not None and len(view.get_children(ids)) == 3,
            PATIENCE_S,
            "three registered brokers",
            0.1,
        )
        yield made
    finally:
        view.stop()
        view.close()
        for broker in made.brokers.values():
            broker.stop()


def _produce(cluster: Cluster, topic: str, values: list[bytes]) -> None:
    import confluent_kafka

    producer = confluent_kafka.Producer({"bootstrap.servers": cluster.bootstrap(), "acks": "all"})
    errors: list[Any] = []
    for value in values:
        producer.produce(topic, value, partition=0, on_delivery=lambda e, _m: e and errors.append(e))
        producer.poll(0)
    assert producer.flush(PATIENCE_S) == 0
    assert not errors, errors


def _values(topic: str, start: int, count: int) -> list[bytes]:
    return [f"{topic}-{i}".encode() * 8 for i in range(start, start + count)]


class _Consumer:
    """A confluent-kafka consumer of partition 0 from the beginning, with or without a rack."""

    def __init__(
        self, cluster: Cluster, topic: str, rack: str | None, isolation_level: str = "read_uncommitted"
    ) -> None:
        import confluent_kafka

        settings = {
            "bootstrap.servers": cluster.bootstrap(),
            "group.id": f"g-{uuid.uuid4().hex[:6]}",
            "enable.auto.commit": False,
            "topic.metadata.refresh.interval.ms": 1000,
            "isolation.level": isolation_level,
            **({"client.rack": rack} if rack else {}),
        }
        self.consumer = confluent_kafka.Consumer(settings)
        self.consumer.assign([confluent_kafka.TopicPartition(topic, 0, confluent_kafka.OFFSET_BEGINNING)])
        self.got: list[bytes] = []

    def read(self, expected: int, patience_s: float = PATIENCE_S) -> list[bytes]:
        """What the consumer has got, once it has `expected` records or `patience_s` passed."""
        deadline = time.monotonic() + patience_s
        while len(self.got) < expected and time.monotonic() < deadline:
            message = self.consumer.poll(0.5)
            if message is not None and message.error() is None:
                self.got.append(message.value())
        return self.got

    def close(self) -> None:
        self.consumer.close()


def test_a_consumer_without_client_rack_reads_from_the_leader(cluster: Cluster) -> None:
    topic = "no-rack"
    cluster.create(topic, [3, 2, 1])
    values = _values(topic, 0, RECORDS)
    _produce(cluster, topic, values)
    consumer = _Consumer(cluster, topic, rack=None)
    try:
        assert consumer.read(RECORDS) == values
    finally:
        consumer.close()
    assert cluster.bytes_out(3, topic) >= sum(map(len, values))
    assert (cluster.bytes_out(1, topic), cluster.bytes_out(2, topic)) == (0, 0)


def test_with_the_default_leader_selector_a_consumer_in_rack_b_reads_from_the_leader(
    cluster: Cluster,
) -> None:
    topic = "leader-selector"
    cluster.create(topic, [1, 2, 3])  # led by broker 1: LeaderSelector
    values = _values(topic, 0, RECORDS)
    _produce(cluster, topic, values)
    consumer = _Consumer(cluster, topic, rack="b")
    try:
        assert consumer.read(RECORDS) == values
    finally:
        consumer.close()
    assert cluster.bytes_out(1, topic) >= sum(map(len, values))
    assert (cluster.bytes_out(2, topic), cluster.bytes_out(3, topic)) == (0, 0)


def test_kafka_python_with_client_rack_b_reads_from_the_follower_in_rack_b(cluster: Cluster) -> None:
    require_module("kafka")
    topic = "near-kafka-python"
    cluster.create(topic, [3, 2, 1])
    values = _values(topic, 0, RECORDS)
    _produce(cluster, topic, values)
    got = consume_partition_zero(cluster.bootstrap(), topic, RECORDS, PATIENCE_S, client_rack="b")
    assert got == values
    assert cluster.bytes_out(2, topic) >= sum(map(len, values))
    assert (cluster.bytes_out(1, topic), cluster.bytes_out(3, topic)) == (0, 0)


def test_a_read_committed_consumer_in_rack_b_gets_only_committed_records_from_the_follower(
    cluster: Cluster,
) -> None:
    """The follower's last stable offset and aborted transactions, kept from the replicated batches."""
    import confluent_kafka

    topic = "near-transactions"
    cluster.create(topic, [3, 2, 1])
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": cluster.bootstrap(), "transactional.id": f"t-{uuid.uuid4().hex[:6]}"}
    )
    producer.init_transactions(PATIENCE_S)
    committed: list[bytes] = []
    for number, commit in enumerate((True, False, True)):
        producer.begin_transaction()
        values = _values(topic, number * 10, 10)
        for value in values:
            producer.produce(topic, value, partition=0)
        if commit:
            producer.commit_transaction(PATIENCE_S)
            committed += values
        else:
            producer.abort_transaction(PATIENCE_S)
    consumer = _Consumer(cluster, topic, rack="b", isolation_level="read_committed")
    try:
        assert consumer.read(len(committed)) == committed
        # Nothing more comes: the aborted records stay hidden (the consumer reads past them).
        assert consumer.read(len(committed) + 1, patience_s=3) == committed
    finally:
        consumer.close()
    assert cluster.bytes_out(2, topic) > 0
    assert (cluster.bytes_out(1, topic), cluster.bytes_out(3, topic)) == (0, 0)


def test_a_consumer_in_rack_b_reads_from_the_follower_in_rack_b_and_goes_back_to_the_leader_without_it(
    cluster: Cluster,
) -> None:
    topic = "near"
    cluster.create(topic, [3, 2, 1])  # led by broker 3 (rack c); broker 2 is the follower in rack b
    first = _values(topic, 0, RECORDS)
    _produce(cluster, topic, first)
    consumer = _Consumer(cluster, topic, rack="b")
    try:
        assert consumer.read(RECORDS) == first
        # Every record came from broker 2; the leader only redirected (no records), broker 1 nothing.
        assert cluster.bytes_out(2, topic) >= sum(map(len, first))
        assert (cluster.bytes_out(1, topic), cluster.bytes_out(3, topic)) == (0, 0)

        cluster.brokers[2].stop()
        second = _values(topic, RECORDS, RECORDS)
        _produce(cluster, topic, second)
        assert consumer.read(2 * RECORDS) == first + second
        # The rest came from the leader: no follower in rack b is left to name.
        assert cluster.bytes_out(3, topic) >= sum(map(len, second))
        assert cluster.bytes_out(1, topic) == 0
    finally:
        consumer.close()
        cluster.brokers[2].start()


def test_followers_fetch_from_their_leader_in_incremental_fetch_sessions(cluster: Cluster) -> None:
    """KIP-227 between brokers: each follower of a partition led by broker 1 holds a session there."""
    cluster.create("sessions", [1, 2, 3])
    _produce(cluster, "sessions", _values("sessions", 0, 20))
    wait_until(
        lambda: cluster.metric(1, 'odradek_incremental_fetch_sessions{fetcher="follower"}') >= 2,
        PATIENCE_S,
        "brokers 2 and 3 in fetch sessions at broker 1",
    )
    assert cluster.metric(1, 'odradek_incremental_fetch_partitions_cached{fetcher="follower"}') >= 2
    consumer = _Consumer(cluster, "sessions", None)
    try:
        assert consumer.read(20) == _values("sessions", 0, 20)
    finally:
        consumer.close()
