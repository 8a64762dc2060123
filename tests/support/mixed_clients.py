"""Clients of a mixed cluster (tests/support/mixed_cluster.py): producer ids asked of one broker,
transactional ids coordinated by a chosen broker, and confluent-kafka producers whose every
acknowledgement is kept, to be read back later."""

from __future__ import annotations

import concurrent.futures
import uuid
from dataclasses import dataclass, field
from typing import Any

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from odradek.protocol.messages.init_producer_id import InitProducerIdRequest, InitProducerIdResponse
from tests.support.interop import wait_until
from tests.support.mixed_cluster import PATIENCE_S, MixedCluster
from tests.support.raw_client import RawClient

#: A preferred election asked this many times, each answer awaited this long (see elect_preferred_leaders).
ELECTION_ATTEMPTS = 3
ELECTION_TIMEOUT_S = 30

#: FindCoordinator's key types.
GROUP_KEY = 0
TRANSACTION_KEY = 1


def producer_id_from(cluster: MixedCluster, node: int) -> int:
    """An idempotent producer id (InitProducerId without a transactional id) asked of broker `node`,
    asked again while it answers a retriable error, as clients do."""
    host, port = cluster.kafka.addresses[node]
    answers: list[InitProducerIdResponse] = []

    def answered() -> bool:
        with RawClient(port, timeout=10, host=host) as client:
            response: InitProducerIdResponse = client.request(
                InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60_000), 4
            )
        answers.append(response)
        return response.error_code == ErrorCode.NONE

    try:
        wait_until(answered, PATIENCE_S, f"a producer id from broker {node}", 0.5)
    except AssertionError as timed_out:
        raise AssertionError(f"{timed_out}; it answered {_codes(answers)}") from None
    return answers[-1].producer_id


def _codes(answers: list[InitProducerIdResponse]) -> list[str]:
    return sorted({ErrorCode(a.error_code).name for a in answers})


def transactional_id_coordinated_by(cluster: MixedCluster, node: int, prefix: str) -> str:
    """A fresh transactional id whose transaction coordinator is broker `node`."""
    return _key_coordinated_by(cluster, node, prefix, TRANSACTION_KEY)


def group_id_coordinated_by(cluster: MixedCluster, node: int, prefix: str) -> str:
    """A fresh group id whose group coordinator is broker `node`."""
    return _key_coordinated_by(cluster, node, prefix, GROUP_KEY)


def _key_coordinated_by(cluster: MixedCluster, node: int, prefix: str, key_type: int) -> str:
    host, port = cluster.kafka.addresses[node]
    for attempt in range(500):
        candidate = f"{prefix}-{attempt}-{uuid.uuid4().hex[:6]}"
        if _coordinator(host, port, candidate, key_type) == node:
            return candidate
    raise AssertionError(f"no key of type {key_type} found coordinated by broker {node}")


def coordinator_of(cluster: MixedCluster, asked: int, key: str, key_type: int) -> int:
    """The coordinator of `key` (GROUP_KEY or TRANSACTION_KEY) broker `asked` names."""
    host, port = cluster.kafka.addresses[asked]
    return _coordinator(host, port, key, key_type)


def _coordinator(host: str, port: int, key: str, key_type: int) -> int:
    found: list[int] = []

    def answered() -> bool:
        with RawClient(port, timeout=10, host=host) as client:
            response: FindCoordinatorResponse = client.request(
                FindCoordinatorRequest(key=key, key_type=key_type), 2
            )
        if response.error_code != ErrorCode.NONE:
            return False
        found.append(response.node_id)
        return True

    wait_until(answered, PATIENCE_S, f"a coordinator for {key}", 0.3)
    return found[-1]


def elect_preferred_leaders(cluster: MixedCluster, topic: str, partitions: int) -> None:
    """ElectLeaders PREFERRED for every partition of `topic`, then wait until each is led by the first
    of its replicas on every broker's Metadata."""
    from confluent_kafka import ElectionType, TopicPartition
    from confluent_kafka.admin import AdminClient

    asked = [TopicPartition(topic, p) for p in range(partitions)]
    # Once in a full run (1 of 3), under a Kafka controller just after odradek's restart, librdkafka's
    # ElectLeaders went unanswered for 60 s (cause not found: Kafka logs at WARN there). An operator
    # asks again; so does the test, with a new client, and says how often it had to.
    for attempt in range(1, ELECTION_ATTEMPTS + 1):
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap(*cluster.running())})
        try:
            admin.elect_leaders(ElectionType.PREFERRED, asked).result(ELECTION_TIMEOUT_S)
            break
        except concurrent.futures.TimeoutError:
            print(
                f"ElectLeaders for {topic} unanswered after {ELECTION_TIMEOUT_S} s (attempt {attempt}),"
                f" controller {cluster.controller()}",
                flush=True,
            )
            if attempt == ELECTION_ATTEMPTS:
                raise

    def preferred() -> bool:
        views = cluster.wait_in_sync(topic, partitions)
        return all(v.leader == v.replicas[0] for v in views.values())

    wait_until(preferred, PATIENCE_S, f"{topic}'s preferred leaders", 0.3)


@dataclass
class Acknowledged:
    """What a producer's delivery reports said: each acknowledged value by partition, and the errors."""

    values: dict[int, list[bytes]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    def on_delivery(self, error: Any, message: Any) -> None:
        if error is not None:
            self.errors.append(str(error))
        else:
            self.values.setdefault(message.partition(), []).append(message.value())

    @property
    def count(self) -> int:
        return sum(len(v) for v in self.values.values())


def idempotent_producer(bootstrap: str, **extra: Any) -> Any:
    from confluent_kafka import Producer

    return Producer(
        {"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 5, **extra}
    )


def produce_acknowledged(producer: Any, topic: str, tag: str, count: int, partitions: int) -> Acknowledged:
    """`count` values `<tag>-<i>` spread over the partitions, flushed; what was acknowledged."""
    acknowledged = Acknowledged()
    for i in range(count):
        producer.produce(
            topic, value=f"{tag}-{i}".encode(), partition=i % partitions, on_delivery=acknowledged.on_delivery
        )
        producer.poll(0)
    producer.flush(PATIENCE_S)
    return acknowledged


class ProducerUnderLoad:
    """An idempotent acks=all producer writing `<tag>-<i>` round-robin over the partitions from a
    thread, until `stop`; every acknowledgement is kept."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, tag: str) -> None:
        import threading

        self.topic = topic
        self.partitions = partitions
        self.tag = tag
        self.acknowledged = Acknowledged()
        # delivery.timeout.ms long enough to ride out a leader's SIGKILL and its ZooKeeper session
        self._producer = idempotent_producer(bootstrap, **{"delivery.timeout.ms": 120_000})
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"load-{tag}", daemon=True)
        self.sent = 0

    def start(self) -> ProducerUnderLoad:
        self._thread.start()
        return self

    def _run(self) -> None:
        import time

        while not self._stopping.is_set():
            try:
                self._producer.produce(
                    self.topic,
                    value=f"{self.tag}-{self.sent}".encode(),
                    partition=self.sent % self.partitions,
                    on_delivery=self.acknowledged.on_delivery,
                )
                self.sent += 1
            except BufferError:
                pass
            self._producer.poll(0.005)
            time.sleep(0.002)

    def wait_acknowledged(self, count: int) -> None:
        wait_until(lambda: self.acknowledged.count >= count, PATIENCE_S, f"{count} acknowledged records", 0.1)

    def stop(self) -> Acknowledged:
        self._stopping.set()
        self._thread.join(30)
        self._producer.flush(PATIENCE_S)
        return self.acknowledged
