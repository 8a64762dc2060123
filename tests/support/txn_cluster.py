"""Three brokers of a cluster for the transaction tests (127.0.0.2-4, one ZooKeeper), with the
replication of their topics and internal topics chosen by the test module."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from odradek.protocol.messages.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from odradek.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic, MetadataResponse
from tests.support.broker_process import BrokerProcess
from tests.support.interop import wait_until
from tests.support.ports import free_port
from tests.support.raw_client import RawClient

BROKER_IDS = (1, 2, 3)
PARTITIONS = 6
#: The coordinator's proactive abort check (Kafka's default is 10 s; short here so the tests are too).
CLEANUP_INTERVAL_MS = 1000


class Cluster:
    def __init__(
        self,
        base: Path,
        connect: str,
        replication: int,
        min_isr: int = 1,
        extra: dict[str, str] | None = None,
        node_settings: Callable[[int, int], Mapping[str, str]] | None = None,
    ) -> None:
        """`extra`: more settings for every broker (they win over these); `node_settings`: more for one
        broker, given its node id and PLAINTEXT port (they win over `extra`)."""
        self.replication = replication
        ports = {node: free_port() for node in BROKER_IDS}
        self.brokers = {
            node: BrokerProcess(
                base / f"broker-{node}",
                {
                    "node.id": str(node),
                    "zookeeper.connect": connect,
                    "zookeeper.session.timeout.ms": "3000",
                    "offsets.topic.replication.factor": str(replication),
                    "offsets.topic.num.partitions": "3",
                    "transaction.state.log.replication.factor": str(replication),
                    "transaction.state.log.min.isr": str(min_isr),
                    "transaction.state.log.num.partitions": "3",
                    "transaction.abort.timed.out.transaction.cleanup.interval.ms": str(CLEANUP_INTERVAL_MS),
                    "controlled.shutdown.retry.backoff.ms": "500",
                    "group.initial.rebalance.delay.ms": "0",
                    "auto.leader.rebalance.enable": "false",
                    **(extra or {}),
                    **(node_settings(node, ports[node]) if node_settings else {}),
                },
                port=ports[node],
                host=host(node),
            )
            for node in BROKER_IDS
        }

    def bootstrap(self, *nodes: int) -> str:
        return ",".join(self.brokers[n].bootstrap for n in nodes or BROKER_IDS)

    def running(self) -> list[int]:
        return [n for n, b in self.brokers.items() if b.process is not None and b.process.poll() is None]

    def metadata(self, asked: int, topics: list[str] | None) -> MetadataResponse:
        broker = self.brokers[asked]
        with RawClient(broker.port, timeout=2, host=broker.host) as client:
            wanted = None if topics is None else [MetadataRequestTopic(name=t) for t in topics]
            response: MetadataResponse = client.request(
                MetadataRequest(topics=wanted, allow_auto_topic_creation=False), 12
            )
            return response

    def leaders(self, topic: str, asked: int) -> dict[int, int]:
        (described,) = self.metadata(asked, [topic]).topics
        return {p.partition_index: p.leader_id for p in described.partitions}

    def all_led(self, topic: str, partitions: int) -> bool:
        try:
            return all(
                len(leaders := self.leaders(topic, node)) == partitions
                and all(leader >= 0 for leader in leaders.values())
                for node in self.running()
            )
        except Exception:
            return False

    def create(self, topic: str, partitions: int = PARTITIONS) -> None:
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": self.bootstrap()})
        for future in admin.create_topics([NewTopic(topic, partitions, self.replication)]).values():
            future.result(20)
        wait_until(lambda: self.all_led(topic, partitions), 30, f"leaders for {topic}", interval=0.1)

    def coordinator(self, key: str, asked: int = 1, key_type: int = 1) -> int:
        """The node FindCoordinator names for a transactional id (or a group, key type 0), waiting
        while there is none yet."""
        found: list[int] = []

        def answered() -> bool:
            broker = self.brokers[asked]
            try:
                with RawClient(broker.port, timeout=2, host=broker.host) as client:
                    response: FindCoordinatorResponse = client.request(
                        FindCoordinatorRequest(key=key, key_type=key_type), 2
                    )
            except Exception:
                return False
            if response.error_code != 0:
                return False
            found.append(response.node_id)
            return True

        wait_until(answered, 60, f"a coordinator for {key}", interval=0.2)
        return found[-1]


def host(node: int) -> str:
    """The loopback address broker `node` listens on (127.0.0.2-4), as a host of its own."""
    return f"127.0.0.{node + 1}"


@contextmanager
def running_cluster(zookeeper_connect: str, work: Path) -> Iterator[Cluster]:
    """Three brokers in a chroot of their own, internal topics at RF=3 and min.insync.replicas 2 (as the
    Java suite's cluster), once every broker names all three in its Metadata; stopped after."""
    cluster = Cluster(work, f"{zookeeper_connect}/odradek-{uuid.uuid4().hex[:8]}", replication=3, min_isr=2)
    try:
        for broker in cluster.brokers.values():
            broker.start()
        wait_until(lambda: _every_broker_known(cluster), 60, "three brokers in every broker's Metadata", 0.2)
        yield cluster
    finally:
        for broker in cluster.brokers.values():
            broker.stop()


def _every_broker_known(cluster: Cluster) -> bool:
    try:
        return all(len(cluster.metadata(node, []).brokers) == len(BROKER_IDS) for node in BROKER_IDS)
    except Exception:
        return False


def transactional_producer(cluster: Cluster, transactional_id: str, **extra: Any) -> Any:
    """A confluent-kafka transactional producer bootstrapped on every broker, transactions initialised."""
    from confluent_kafka import Producer

    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap(), "transactional.id": transactional_id, **extra}
    )
    producer.init_transactions(60)
    return producer


def send_to_every_partition(producer: Any, topic: str, tag: str, partitions: int = PARTITIONS) -> None:
    """One value `<tag>-<partition>` to each partition of `topic`, flushed."""
    for partition in range(partitions):
        producer.produce(topic, value=f"{tag}-{partition}".encode(), partition=partition)
    producer.flush(60)


def commit_abort_commit(producer: Any, topic: str, partitions: int = PARTITIONS) -> None:
    """Three transactions over every partition of `topic`: r0 committed, r1 aborted, r2 committed; a
    read_committed reader must then see exactly expected_after_rounds(partitions)."""
    for round_, committed in enumerate((True, False, True)):
        producer.begin_transaction()
        send_to_every_partition(producer, topic, f"r{round_}", partitions)
        if committed:
            producer.commit_transaction(60)
        else:
            producer.abort_transaction(60)


def expected_after_rounds(partitions: int = PARTITIONS) -> dict[int, list[bytes]]:
    return {p: [f"r0-{p}".encode(), f"r2-{p}".encode()] for p in range(partitions)}
