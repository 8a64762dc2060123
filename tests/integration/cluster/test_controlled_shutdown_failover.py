"""A controlled shutdown of a partition leader, end to end (#17's failover goal): a real ZooKeeper, three
broker processes, RF=3, min.insync.replicas=2, and an idempotent acks=all confluent-kafka producer
writing to every partition the whole time.

The followers' fetches may wait long at their leader (`replica.fetch.wait.max.ms`, a user's setting):
the leadership moves and the ISR changes that a controlled shutdown makes must not leave a follower's
fetch parked there at an old leader epoch, with the high watermark, and every acks=all produce behind
it on the client's connection, waiting for that fetch to time out.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.broker_process import BrokerProcess
from tests.support.interop import wait_until
from tests.support.requirements import require_module
from tests.support.zookeeper import ZooKeeperServer

BROKER_IDS = (1, 2, 3)
TOPIC = "moving"
PARTITIONS = 3
#: Far longer than the bound below: a fetch parked until it times out fails the test.
FETCH_WAIT_MAX_MS = 20_000  # below replica.lag.time.max.ms (30 s), as Kafka requires
#: Generous on a loaded machine (the bench measures ~0.1 s); far below FETCH_WAIT_MAX_MS.
FIRST_ACK_BOUND_S = 10.0


@pytest.fixture(scope="module")
def brokers(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[int, BrokerProcess]]:
    require_module("confluent_kafka")
    base: Path = tmp_path_factory.mktemp("controlled-shutdown-failover")
    connect = f"{zookeeper_server.connect_string}/odradek-{uuid.uuid4().hex[:8]}"
    made = {
        node: BrokerProcess(
            base / f"broker-{node}",
            {
                "node.id": str(node),
                "zookeeper.connect": connect,
                "replica.fetch.wait.max.ms": str(FETCH_WAIT_MAX_MS),
                "min.insync.replicas": "2",
                "offsets.topic.replication.factor": "1",
                "auto.leader.rebalance.enable": "false",
            },
            host=f"127.0.0.{node + 1}",
        )
        for node in BROKER_IDS
    }
    try:
        for broker in made.values():
            broker.start()
        yield made
    finally:
        for broker in made.values():
            broker.stop()


class Producing:
    """An idempotent acks=all producer writing a record to every partition every 10 ms, on its own
    thread, recording when each partition's records were sent and acknowledged."""

    def __init__(self, bootstrap: str) -> None:
        from confluent_kafka import Producer

        #: The client's own errors (error_cb), for the failure message.
        self.errors: list[Any] = []
        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 5,
                "error_cb": self.errors.append,
            }
        )
        #: partition -> [(monotonic time sent, monotonic time acknowledged)]
        self.acks: dict[int, list[tuple[float, float]]] = {p: [] for p in range(PARTITIONS)}
        self.failures: list[Any] = []
        self._lock = threading.Lock()
        self._running = threading.Event()
        self._thread = threading.Thread(target=self._run, name="producer", daemon=True)

    def start(self) -> None:
        # librdkafka refuses a partition its metadata does not know yet (_UNKNOWN_PARTITION)
        wait_until(
            lambda: len(self.producer.list_topics(TOPIC, 10).topics[TOPIC].partitions) == PARTITIONS,
            60,
            "the producer's metadata",
            interval=0.1,
        )
        self._running.set()
        self._thread.start()

    def stop(self) -> None:
        self._running.clear()
        self._thread.join(60)
        self.producer.flush(60)

    def acked_after(self, partition: int, sent_after: float) -> float | None:
        """When the first record sent after `sent_after` to `partition` was acknowledged."""
        with self._lock:
            return min((acked for sent, acked in self.acks[partition] if sent > sent_after), default=None)

    def _run(self) -> None:
        try:
            while self._running.is_set():
                for partition in range(PARTITIONS):
                    with contextlib.suppress(BufferError):  # a full queue skips a round
                        self._send(partition)
                self.producer.poll(0.01)
        except Exception as error:  # for the failure message: the thread would end silently
            self.errors.append(error)

    def _send(self, partition: int) -> None:
        sent = time.monotonic()

        def acked(error: Any, message: Any) -> None:
            self._acked(error, message, sent)

        self.producer.produce(TOPIC, b"x", partition=partition, on_delivery=acked)

    def _acked(self, error: Any, message: Any, sent: float) -> None:
        with self._lock:
            if error is not None:
                self.failures.append(error)
            else:
                self.acks[message.partition()].append((sent, time.monotonic()))


def _leaders(bootstrap: str) -> dict[int, tuple[int, int]]:
    """partition -> (leader, number of in-sync replicas), as the cluster's metadata says."""
    from confluent_kafka.admin import AdminClient

    topic = AdminClient({"bootstrap.servers": bootstrap}).list_topics(TOPIC, timeout=10).topics[TOPIC]
    return {p: (m.leader, len(m.isrs)) for p, m in topic.partitions.items()}


def test_acks_all_resumes_on_the_new_leaders_well_before_a_parked_follower_fetch_would_time_out(
    brokers: dict[int, BrokerProcess],
) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    bootstrap = ",".join(b.bootstrap for b in brokers.values())
    admin = AdminClient({"bootstrap.servers": bootstrap})

    def all_registered() -> bool:
        try:
            return len(admin.list_topics(timeout=10).brokers) == len(BROKER_IDS)
        except Exception:
            return False

    wait_until(all_registered, 60, "three brokers in the metadata", interval=0.1)
    assignment = [[BROKER_IDS[(p + i) % 3] for i in range(3)] for p in range(PARTITIONS)]
    new = NewTopic(
        TOPIC, num_partitions=PARTITIONS, replica_assignment=assignment, config={"min.insync.replicas": "2"}
    )
    admin.create_topics([new], operation_timeout=30)[TOPIC].result(60)

    def all_led_in_sync() -> bool:
        try:
            return all(isr == 3 and leader >= 0 for leader, isr in _leaders(bootstrap).values())
        except Exception:
            return False

    wait_until(all_led_in_sync, 60, "every partition led with a full ISR", interval=0.1)
    producing = Producing(bootstrap)
    producing.start()
    try:
        wait_until(
            lambda: all(producing.acks.values()),
            60,
            f"acks on every partition (client errors {producing.errors[:5]})",
            interval=0.1,
        )
        victim = brokers[1]  # leads partition 0, follows the others
        assert victim.process is not None
        signalled = time.monotonic()
        victim.process.send_signal(signal.SIGTERM)
        victim.process.wait(60)
        stopped = time.monotonic()
        victim.process = None
        # After the victim has stopped only new leaders can acknowledge; every partition must, within
        # the bound, and none may wait out the 20 s a parked follower fetch takes.
        wait_until(
            lambda: all(producing.acked_after(p, stopped) is not None for p in range(PARTITIONS)),
            FIRST_ACK_BOUND_S + (stopped - signalled),
            "acks from the new leaders",
            interval=0.05,
        )
    finally:
        producing.stop()
    assert not producing.failures, producing.failures[:5]
