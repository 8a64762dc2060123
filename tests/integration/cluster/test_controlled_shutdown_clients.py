"""#16's acceptance for SIGTERM: a producer and a consumer group running through the broker being
stopped (it is in their bootstrap list, and leads some partitions and perhaps their group's
coordinator) see no error other than retriable ones, and lose nothing: every record the producer was
told is written is consumed, no offset is skipped, and the group commits the log end once the
broker is back (and never an offset past what was consumed).

Topics have one replica per partition (replication is another issue): a partition the stopping
broker leads has nowhere to move and is unavailable until the broker is back, which the clients
must ride out as Kafka's do (retries, not errors).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from odradek.coordinator.partitioning import partition_for
from odradek.protocol.messages.find_coordinator import FindCoordinatorRequest
from tests.integration.cluster.test_three_brokers import BROKER_IDS, Cluster, _all_known, running_cluster
from tests.support.interop import wait_until
from tests.support.raw_client import RawClient
from tests.support.requirements import require_module
from tests.support.zookeeper import ZooKeeperServer

TOPIC = "flow"
OFFSETS_TOPIC = "__consumer_offsets"
#: offsets.topic.num.partitions in test_three_brokers' Cluster
OFFSETS_PARTITIONS = 6
PARTITIONS = 6


@pytest.fixture(scope="module")
def cluster(zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(zookeeper_server, tmp_path_factory.mktemp("controlled-shutdown")) as made:
        yield made


class Clients:
    """A confluent-kafka producer and consumer (one group member) on their own threads, recording
    what was delivered, consumed and committed, and every error they saw."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        from confluent_kafka import Consumer, Producer

        self.group = group
        self.topic = topic
        self.errors: list[Any] = []
        self.delivered: dict[int, dict[int, bytes]] = {p: {} for p in range(PARTITIONS)}
        self.delivery_failures: list[Any] = []
        self.consumed: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(PARTITIONS)}
        self.commit_errors: list[Any] = []
        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 5,
                "error_cb": self.errors.append,
            }
        )
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "error_cb": self.errors.append,
                "on_commit": self._on_commit,
            }
        )
        self.consumer.subscribe([topic])
        self._producing = threading.Event()
        self._consuming = threading.Event()
        self._threads = [
            threading.Thread(target=self._produce, name="producer", daemon=True),
            threading.Thread(target=self._consume, name="consumer", daemon=True),
        ]

    def start(self) -> None:
        self._producing.set()
        self._consuming.set()
        for thread in self._threads:
            thread.start()

    def stop_producing(self) -> None:
        self._producing.clear()
        self._threads[0].join(60)
        assert self.producer.flush(120) == 0, "records still undelivered"

    def stop_consuming(self) -> None:
        self._consuming.clear()
        self._threads[1].join(60)

    def delivered_count(self) -> int:
        return sum(len(d) for d in self.delivered.values())

    def consumed_count(self) -> int:
        return sum(len(c) for c in self.consumed.values())

    def caught_up(self) -> bool:
        """Every delivered record consumed (the consumer's last offset per partition is the last one
        delivered there)."""
        return all(
            not delivered or (self.consumed[p] and self.consumed[p][-1][0] >= max(delivered))
            for p, delivered in self.delivered.items()
        )

    def _produce(self) -> None:
        sequence = 0
        while self._producing.is_set():
            value = b"%d" % sequence
            partition = sequence % PARTITIONS
            self.producer.produce(self.topic, value, partition=partition, on_delivery=self._on_delivery)
            self.producer.poll(0)
            sequence += 1
            time.sleep(0.005)

    def _on_delivery(self, error: Any, message: Any) -> None:
        if error is not None:
            self.delivery_failures.append(error)
        else:
            self.delivered[message.partition()][message.offset()] = message.value()

    def _consume(self) -> None:
        while self._consuming.is_set():
            message = self.consumer.poll(0.2)
            if message is None:
                continue
            if message.error() is not None:
                self.errors.append(message.error())
                continue
            self.consumed[message.partition()].append((message.offset(), message.value()))
            # asynchronous, as a consumer that keeps consuming while its coordinator moves: a
            # synchronous commit would wait for it (Java's commitSync too, up to its timeout)
            self.consumer.commit(message=message, asynchronous=True)

    def _on_commit(self, error: Any, partitions: list[Any]) -> None:
        if error is not None:
            self.commit_errors.append(error)

    def commit_final(self) -> None:
        """Commit the end of what was consumed until the group's committed offsets say so. An
        asynchronous commit librdkafka retried (its coordinator was away) may land after a newer
        one and move an offset back (Kafka's coordinator, too, keeps the last commit it receives):
        never past what was consumed, so nothing is skipped; the next commit puts it forward again."""
        from confluent_kafka import KafkaException, TopicPartition

        wanted = [TopicPartition(self.topic, p, c[-1][0] + 1) for p, c in self.consumed.items() if c]
        ends = {tp.partition: tp.offset for tp in wanted}
        deadline = time.monotonic() + 60
        while True:
            try:
                self.consumer.commit(offsets=wanted, asynchronous=False)
                asked = [TopicPartition(self.topic, p) for p in ends]
                committed = self.consumer.committed(asked, timeout=30)
                if {tp.partition: tp.offset for tp in committed} == ends:
                    return
            except KafkaException as error:
                self.commit_errors.append(error.args[0])
            assert time.monotonic() < deadline, "the final offsets were never committed"
            time.sleep(0.5)

    def close(self) -> None:
        self.consumer.close()


@pytest.mark.parametrize("stopped", ["a broker", "the controller"])
def test_sigterm_a_producer_and_a_consumer_through_the_stopping_broker_lose_nothing(
    cluster: Cluster, stopped: str
) -> None:
    require_module("confluent_kafka")
    from kafka.admin import NewTopic

    topic = f"{TOPIC}-{stopped.split()[-1]}"
    admin = cluster.admin(1)
    try:
        admin.create_topics([NewTopic(topic, PARTITIONS, 1)], timeout_ms=30_000)
    finally:
        admin.close()
    wait_until(
        lambda: all(len(_leaders(cluster, n, topic)) == PARTITIONS for n in BROKER_IDS),
        60,
        "leaders",
        interval=0.1,
    )
    controller = cluster.controller(asked=1)
    if stopped == "the controller":
        stopping = controller
    else:
        stopping = next(n for n in BROKER_IDS if n != controller)
    other = next(n for n in BROKER_IDS if n != stopping)
    assert stopping in _leaders(cluster, other, topic).values(), "the stopping broker leads nothing"

    # the hard case: the group's coordinator is on the stopping broker too
    group = _group_coordinated_by(cluster, stopping, other, prefix=topic)
    clients = Clients(cluster.bootstrap(stopping, other), group=group, topic=topic)
    clients.start()
    try:
        wait_until(lambda: clients.consumed_count() > 50, 60, "the consumer under way", interval=0.1)
        assert cluster.brokers[stopping].stop(timeout=60) == 0
        assert f"controlled shutdown of broker {stopping} succeeded" in cluster.brokers[stopping].log_text()
        consumed_while_down = clients.consumed_count()
        wait_until(
            lambda: clients.consumed_count() > consumed_while_down + 50,
            60,
            "records consumed from the partitions still led",
            interval=0.1,
        )
        cluster.brokers[stopping].start()
        wait_until(lambda: _all_known(cluster), 60, "the broker back", interval=0.1)
        delivered_back = clients.delivered_count()
        wait_until(
            lambda: clients.delivered_count() > delivered_back + 50, 60, "producing again", interval=0.1
        )
        clients.stop_producing()
        wait_until(clients.caught_up, 90, "every delivered record consumed", interval=0.2)
    finally:
        clients.stop_consuming()
    try:
        clients.commit_final()
    finally:
        clients.close()

    assert clients.delivery_failures == []
    unexpected = [e for e in clients.errors + clients.commit_errors if not _retriable(e)]
    assert unexpected == []
    for partition, delivered in clients.delivered.items():
        offsets = [offset for offset, _ in clients.consumed[partition]]
        # no offset skipped: the consumer read every offset from 0 up, and nothing twice in a row
        assert sorted(set(offsets)) == list(range(max(delivered) + 1)), partition
        assert dict(clients.consumed[partition]) == delivered, partition
    # what the group committed is the end of every partition: a new member would skip nothing
    _assert_committed_at_end(cluster, clients)


def _retriable(error: Any) -> bool:
    from confluent_kafka import KafkaError

    # librdkafka's _TRANSPORT is a connection the stopping broker closed (the client reconnects or
    # goes to the new leader); the coordinator errors while the group's coordinator moves
    transient = {
        KafkaError._TRANSPORT,
        KafkaError._WAIT_COORD,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.NOT_COORDINATOR,
        KafkaError.REBALANCE_IN_PROGRESS,
    }
    return bool(error.retriable()) or error.code() in transient


def _assert_committed_at_end(cluster: Cluster, clients: Clients) -> None:
    """Every partition's committed offset is at most its end: a new member of the group re-reads,
    never skips. (Equal to the end once commit_final returned; a commit librdkafka retried across the
    coordinator's restart can still land afterwards, during close, and move one back.)"""
    from confluent_kafka import Consumer, TopicPartition

    reader = Consumer({"bootstrap.servers": cluster.bootstrap(), "group.id": clients.group})
    try:
        asked = [TopicPartition(clients.topic, p) for p in range(PARTITIONS)]
        committed = {tp.partition: tp.offset for tp in reader.committed(asked, timeout=30)}
        ends = {
            p: reader.get_watermark_offsets(TopicPartition(clients.topic, p), timeout=30)[1]
            for p in range(PARTITIONS)
        }
    finally:
        reader.close()
    assert all(0 <= committed[p] <= ends[p] for p in range(PARTITIONS)), (committed, ends)


def _group_coordinated_by(cluster: Cluster, coordinator: int, asked: int, prefix: str) -> str:
    """A group id whose __consumer_offsets partition `coordinator` leads (the topic is created by
    the first FindCoordinator)."""
    broker = cluster.brokers[asked]
    with RawClient(broker.port, timeout=30, host=broker.host) as client:
        client.request(FindCoordinatorRequest(key="any", key_type=0), 1)
    wait_until(
        lambda: len(_leaders(cluster, asked, OFFSETS_TOPIC)) == OFFSETS_PARTITIONS,
        60,
        "__consumer_offsets led",
        interval=0.1,
    )
    leaders = _leaders(cluster, asked, OFFSETS_TOPIC)
    return next(
        group
        for group in (f"{prefix}-{n}" for n in range(1000))
        if leaders[partition_for(group, OFFSETS_PARTITIONS)] == coordinator
    )


def _leaders(cluster: Cluster, node: int, topic: str) -> dict[int, int]:
    try:
        leaders = cluster.leaders(topic, node)
    except Exception:
        return {}
    return {p: leader for p, leader in leaders.items() if leader >= 0}
