"""Acceptance of cluster mode: a real ZooKeeper and three broker processes, driven by real clients.

One cluster for the module (brokers on 127.0.0.2-4, a fresh chroot): the tests that only read and
write run first; those that kill, stop or pause a broker run last, each leaving three live brokers.
Topics have one replica per partition where data matters (replication is the next issue) and three
where only leadership is looked at.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from odradek.protocol.messages.describe_configs import DescribeConfigsRequest, DescribeConfigsResource
from odradek.protocol.messages.incremental_alter_configs import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from odradek.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic, MetadataResponse
from tests.support.broker_process import BrokerProcess
from tests.support.interop import wait_until
from tests.support.raw_client import RawClient
from tests.support.requirements import require_executable, require_module
from tests.support.zookeeper import ZooKeeperServer

SESSION_TIMEOUT_MS = 3000
PARTITIONS = 12
#: Kafka's ConfigResource type of a topic.
TOPIC_RESOURCE = 2
BROKER_IDS = (1, 2, 3)


class Cluster:
    def __init__(self, base: Path, connect: str) -> None:
        self.brokers = {
            node: BrokerProcess(
                base / f"broker-{node}",
                {
                    "node.id": str(node),
                    "zookeeper.connect": connect,
                    "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
                    "offsets.topic.replication.factor": "1",
                    "offsets.topic.num.partitions": "6",
                    "num.partitions": "3",
                    "controlled.shutdown.retry.backoff.ms": "500",
                    "group.initial.rebalance.delay.ms": "0",
                    "auto.leader.rebalance.enable": "false",
                },
                host=f"127.0.0.{node + 1}",
            )
            for node in BROKER_IDS
        }

    def bootstrap(self, *nodes: int) -> str:
        return ",".join(self.brokers[n].bootstrap for n in nodes or BROKER_IDS)

    def running(self) -> list[int]:
        return [n for n, b in self.brokers.items() if b.process is not None and b.process.poll() is None]

    def admin(self, node: int) -> Any:
        from kafka.admin import KafkaAdminClient

        return KafkaAdminClient(bootstrap_servers=self.bootstrap(node), request_timeout_ms=5000)

    def metadata(self, asked: int, topics: list[str] | None) -> MetadataResponse:
        """Broker `asked`'s own answer (a client library would go to whichever broker it likes)."""
        broker = self.brokers[asked]
        with RawClient(broker.port, timeout=2, host=broker.host) as client:
            wanted = None if topics is None else [MetadataRequestTopic(name=t) for t in topics]
            request = MetadataRequest(topics=wanted, allow_auto_topic_creation=False)
            response: MetadataResponse = client.request(request, 12)
            return response

    def controller(self, asked: int) -> int:
        return int(self.metadata(asked, []).controller_id)

    def leaders(self, topic: str, asked: int) -> dict[int, int]:
        """Partition -> leader as broker `asked` answers Metadata (-1: none)."""
        (described,) = self.metadata(asked, [topic]).topics
        return {p.partition_index: p.leader_id for p in described.partitions}

    def create(self, topic: str, replication: int, asked: int, partitions: int = PARTITIONS) -> None:
        from kafka.admin import NewTopic

        admin = self.admin(asked)
        try:
            admin.create_topics([NewTopic(topic, partitions, replication)], timeout_ms=15_000)
        finally:
            admin.close()
        # every broker's cache, not only the one asked: UpdateMetadata reaches each in its own time
        wait_until(
            lambda: all(self._has_leaders(topic, node, partitions) for node in self.running()),
            15,
            f"leaders for {topic}",
            interval=0.1,
        )

    def _has_leaders(self, topic: str, asked: int, partitions: int) -> bool:
        try:
            leaders = self.leaders(topic, asked)
        except Exception:
            return False
        return len(leaders) == partitions and all(leader >= 0 for leader in leaders.values())


@contextmanager
def running_cluster(zookeeper_server: ZooKeeperServer, base: Path, wait_s: float = 60) -> Iterator[Cluster]:
    """Three broker processes on their own chroot of `zookeeper_server`, all in every broker's Metadata;
    stopped (resumed first, if a test paused one) on the way out."""
    require_module("kafka")
    connect = f"{zookeeper_server.connect_string}/odradek-{uuid.uuid4().hex[:8]}"
    made = Cluster(base, connect)
    try:
        for broker in made.brokers.values():
            broker.start()
        wait_until(lambda: _all_known(made), wait_s, "three brokers in Metadata", interval=0.1)
        yield made
    finally:
        for broker in made.brokers.values():
            if broker.process is not None:
                os.kill(broker.process.pid, signal.SIGCONT)
            broker.stop()


@pytest.fixture(scope="module")
def cluster(zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(zookeeper_server, tmp_path_factory.mktemp("three-brokers"), wait_s=20) as made:
        yield made


def _all_known(cluster: Cluster) -> bool:
    try:
        return all(len(cluster.metadata(node, []).brokers) == 3 for node in BROKER_IDS)
    except Exception:
        return False


# ----- placement and clients ---------------------------------------------------------------------------


def test_partitions_spread_over_every_broker(cluster: Cluster) -> None:
    cluster.create("spread", 1, asked=2)
    cluster.create("spread-rf3", 3, asked=3)
    for topic in ("spread", "spread-rf3"):
        leaders = cluster.leaders(topic, asked=1)
        assert sorted(leaders) == list(range(PARTITIONS))
        counts = {node: list(leaders.values()).count(node) for node in BROKER_IDS}
        assert counts == {1: 4, 2: 4, 3: 4}, (topic, leaders)
    assert cluster.leaders("spread", asked=3) == cluster.leaders("spread", asked=1)


def test_kafka_python_produces_and_consumes_every_partition_through_any_broker(cluster: Cluster) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    cluster.create("kp", 1, asked=1)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap(2), acks="all")
    for partition in range(PARTITIONS):
        producer.send("kp", f"kp-{partition}".encode(), partition=partition)
    producer.flush(15)
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap(3), consumer_timeout_ms=5000)
    consumer.assign([TopicPartition("kp", p) for p in range(PARTITIONS)])
    consumer.seek_to_beginning()
    got = {m.partition: m.value for m in consumer}
    consumer.close()
    assert got == {p: f"kp-{p}".encode() for p in range(PARTITIONS)}


def test_confluent_kafka_produces_and_consumes_every_partition(cluster: Cluster) -> None:
    confluent = require_module("confluent_kafka")
    cluster.create("ck", 1, asked=3)
    producer = confluent.Producer({"bootstrap.servers": cluster.bootstrap(1), "acks": "all"})
    for partition in range(PARTITIONS):
        producer.produce("ck", f"ck-{partition}".encode(), partition=partition)
    assert producer.flush(15) == 0
    consumer = confluent.Consumer(
        {"bootstrap.servers": cluster.bootstrap(2), "group.id": "ck-reader", "enable.auto.commit": False}
    )
    consumer.assign(
        [confluent.TopicPartition("ck", p, confluent.OFFSET_BEGINNING) for p in range(PARTITIONS)]
    )
    got: dict[int, bytes] = {}
    deadline = time.monotonic() + 20
    while len(got) < PARTITIONS and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            got[message.partition()] = message.value()
    consumer.close()
    assert got == {p: f"ck-{p}".encode() for p in range(PARTITIONS)}


def test_aiokafka_produces_and_consumes_every_partition(cluster: Cluster) -> None:
    aiokafka = require_module("aiokafka")
    cluster.create("aio", 1, asked=2)

    async def run() -> dict[int, bytes]:
        producer = aiokafka.AIOKafkaProducer(bootstrap_servers=cluster.bootstrap(3), acks="all")
        await producer.start()
        try:
            for partition in range(PARTITIONS):
                await producer.send_and_wait("aio", f"aio-{partition}".encode(), partition=partition)
        finally:
            await producer.stop()
        consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=cluster.bootstrap(1))
        await consumer.start()
        try:
            consumer.assign([aiokafka.TopicPartition("aio", p) for p in range(PARTITIONS)])
            await consumer.seek_to_beginning()
            got: dict[int, bytes] = {}
            while len(got) < PARTITIONS:
                batch = await asyncio.wait_for(consumer.getmany(timeout_ms=500), 20)
                for records in batch.values():
                    got.update((r.partition, r.value) for r in records)
            return got
        finally:
            await consumer.stop()

    assert asyncio.run(run()) == {p: f"aio-{p}".encode() for p in range(PARTITIONS)}


def test_kcat_produces_and_consumes_every_partition(cluster: Cluster) -> None:
    kcat = require_executable("kcat")
    cluster.create("kc", 1, asked=1)
    for partition in range(PARTITIONS):
        subprocess.run(
            [kcat, "-b", cluster.bootstrap(partition % 3 + 1), "-P", "-t", "kc", "-p", str(partition)],
            input=f"kc-{partition}\n".encode(),
            check=True,
            timeout=30,
        )
    for partition in range(PARTITIONS):
        out = subprocess.run(
            [
                kcat,
                "-b",
                cluster.bootstrap(3 - partition % 3),
                "-C",
                "-t",
                "kc",
                "-p",
                str(partition),
                "-o",
                "beginning",
                "-e",
                "-q",
            ],
            capture_output=True,
            check=True,
            timeout=30,
        )
        assert out.stdout.decode().split() == [f"kc-{partition}"]


def test_a_group_spanning_the_brokers_rebalances_and_commits(cluster: Cluster) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    cluster.create("grouped", 1, asked=2)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap(1))
    for partition in range(PARTITIONS):
        producer.send("grouped", b"x", partition=partition)
    producer.flush(15)
    producer.close()
    consumers = [
        KafkaConsumer(
            "grouped",
            bootstrap_servers=cluster.bootstrap(node),
            group_id="spanning",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            consumer_timeout_ms=500,
        )
        for node in (1, 3)
    ]

    def settled() -> bool:
        # both members (their coordinator on one broker, their fetches on all three) own partitions
        # and each has read every one it owns
        return all(c.assignment() for c in consumers) and all(
            c.position(tp) == 1 for c in consumers for tp in c.assignment()
        )

    seen: set[int] = set()
    deadline = time.monotonic() + 40
    while not (settled() and len(seen) == PARTITIONS) and time.monotonic() < deadline:
        for consumer in consumers:
            seen.update(m.partition for m in consumer)
    assignments = [consumer.assignment() for consumer in consumers]
    for consumer in consumers:
        consumer.commit()
    assert seen == set(range(PARTITIONS))
    assert all(assignments) and not set.intersection(*(set(a) for a in assignments))
    assert set.union(*(set(a) for a in assignments)) == {TopicPartition("grouped", p) for p in range(12)}
    for consumer in consumers:
        consumer.close()
    admin = cluster.admin(2)
    try:
        committed = admin.list_group_offsets("spanning")["spanning"]
    finally:
        admin.close()
    assert {tp.partition: meta.offset for tp, meta in committed.items()} == {p: 1 for p in range(PARTITIONS)}


def test_partitions_added_topics_deleted_and_auto_created_through_zookeeper(cluster: Cluster) -> None:
    from kafka import KafkaProducer
    from kafka.admin import NewPartitions

    cluster.create("grown", 1, asked=3, partitions=3)
    admin = cluster.admin(2)
    try:
        admin.create_partitions({"grown": NewPartitions(total_count=9)})
    finally:
        admin.close()
    wait_until(lambda: all(cluster._has_leaders("grown", node, 9) for node in BROKER_IDS), 15, "9 partitions")
    assert set(cluster.leaders("grown", asked=1).values()) == set(BROKER_IDS)  # the spread goes on

    admin = cluster.admin(1)
    try:
        admin.delete_topics(["grown"])
    finally:
        admin.close()
    wait_until(
        lambda: all(cluster.metadata(node, ["grown"]).topics[0].error_code == 3 for node in BROKER_IDS),
        15,
        "the topic gone from every broker",
        interval=0.1,
    )

    # a producer's Metadata creates the topic (auto.create.topics.enable), with num.partitions
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap(3))
    producer.send("auto-created", b"first").get(20)
    producer.close()
    assert len(cluster.leaders("auto-created", asked=1)) == 3


def test_topic_configs_reach_every_broker_and_their_logs(cluster: Cluster) -> None:
    require_module("confluent_kafka")
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap(1)})
    created = admin.create_topics([NewTopic("configured", 3, 1, config={"retention.ms": "3600000"})])
    created["configured"].result(20)
    wait_until(
        lambda: all(_topic_config(cluster, n, "configured", "retention.ms") == "3600000" for n in BROKER_IDS),
        10,
        "the topic's config on every broker",
        interval=0.1,
    )
    # IncrementalAlterConfigs on broker 2: written to /config/topics, then the /config/changes
    # notification every broker follows
    alter = IncrementalAlterConfigsRequest(
        resources=[
            AlterConfigsResource(
                resource_type=TOPIC_RESOURCE,
                resource_name="configured",
                configs=[AlterableConfig(name="retention.ms", config_operation=0, value="7200000")],
            )
        ],
        validate_only=False,
    )
    with RawClient(cluster.brokers[2].port, timeout=10, host=cluster.brokers[2].host) as client:
        (answer,) = client.request(alter, 1).responses
    assert answer.error_code == 0, answer
    wait_until(
        lambda: all(_topic_config(cluster, n, "configured", "retention.ms") == "7200000" for n in BROKER_IDS),
        10,
        "the changed config on every broker",
        interval=0.1,
    )


def _topic_config(cluster: Cluster, node: int, topic: str, name: str) -> str | None:
    broker = cluster.brokers[node]
    request = DescribeConfigsRequest(
        resources=[
            DescribeConfigsResource(
                resource_type=TOPIC_RESOURCE, resource_name=topic, configuration_keys=[name]
            )
        ]
    )
    with RawClient(broker.port, timeout=5, host=broker.host) as client:
        (result,) = client.request(request, 1).results
    return next((c.value for c in result.configs if c.name == name), None)


# ----- failures (each leaves three live brokers) ------------------------------------------------------


def test_a_killed_controller_is_replaced_within_the_session_timeout(
    cluster: Cluster, record_property: pytest.RecordProperty
) -> None:
    old = cluster.controller(asked=1)
    other = next(n for n in BROKER_IDS if n != old)
    before = cluster.leaders("spread", asked=other)
    before_rf3 = cluster.leaders("spread-rf3", asked=other)
    killed_at = time.monotonic()
    cluster.brokers[old].kill()
    wait_until(
        lambda: _controller_or_none(cluster, other) not in (None, old),
        SESSION_TIMEOUT_MS / 1000 + 2,
        "a new controller",
        interval=0.05,
    )
    failover = time.monotonic() - killed_at
    record_property("controller_failover_seconds", round(failover, 2))
    print(f"controller failover: {failover:.2f}s")  # the measurement, for the report
    # its single-replica partitions have no leader, never the dead one; the others got a live one
    wait_until(
        lambda: all(
            (leader == -1) == (before[p] == old) for p, leader in cluster.leaders("spread", other).items()
        ),
        10,
        "offline partitions without a leader",
        interval=0.1,
    )
    wait_until(
        lambda: all(leader not in (old, -1) for leader in cluster.leaders("spread-rf3", other).values()),
        10,
        "live leaders from the ISR for the replicated partitions",
        interval=0.1,
    )
    cluster.create("after-failover", 1, asked=other)
    # back: it rejoins, and a preferred election gives it its leaderships again
    cluster.brokers[old].start()
    wait_until(lambda: _all_known(cluster), 20, "the broker back", interval=0.1)
    wait_until(
        lambda: all(leader >= 0 for leader in cluster.leaders("spread", other).values()),
        15,
        "the offline partitions back",
        interval=0.1,
    )
    # the single-replica partitions are led by their only replica again
    assert cluster.leaders("spread", asked=other) == before
    # Without replication nothing brings the restarted broker back into the ISRs of the RF 3
    # partitions, so a preferred election cannot pick it yet (Kafka elects the preferred replica only
    # from the ISR): the controller answers, and nobody leads what it should not.
    outcome = _elect_preferred(cluster, "spread-rf3")
    assert set(outcome) == {("spread-rf3", p) for p in range(PARTITIONS)}
    moved_back = {p for p, leader in cluster.leaders("spread-rf3", other).items() if leader == before_rf3[p]}
    assert {p for p, error in outcome.items() if error is None} <= {("spread-rf3", p) for p in moved_back}


def test_sigterm_moves_leaderships_away_first(cluster: Cluster) -> None:
    controller = cluster.controller(asked=1)
    stopping = next(n for n in BROKER_IDS if n != controller)
    other = next(n for n in BROKER_IDS if n not in (controller, stopping))
    # a producer bootstrapped through the stopping broker, writing to partitions others lead: its
    # requests go to their leaders and nothing is lost (those the stopping broker leads, with one
    # replica, go offline: Kafka's answer too)
    from kafka import KafkaProducer

    elsewhere = [p for p, leader in cluster.leaders("spread", asked=other).items() if leader != stopping]
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap(stopping, other), acks="all", retries=5)
    sent = [producer.send("spread", b"before", partition=p) for p in elsewhere]
    # (generous bounds: on two shared cores a loaded machine slows every step, not the outcome)
    assert cluster.brokers[stopping].stop(timeout=60) == 0
    sent += [producer.send("spread", b"after", partition=p) for p in elsewhere]
    producer.flush(60)
    for future in sent:
        future.get(timeout=30)  # raises what the producer got, if anything
    producer.close()
    assert f"controlled shutdown of broker {stopping} succeeded" in cluster.brokers[stopping].log_text()
    rf3 = cluster.leaders("spread-rf3", asked=other)
    assert stopping not in rf3.values() and -1 not in rf3.values()
    cluster.brokers[stopping].start()
    wait_until(lambda: _all_known(cluster), 20, "the broker back", interval=0.1)
    _elect_preferred(cluster, "spread-rf3")


def test_a_paused_controller_cannot_change_anything_once_resumed(cluster: Cluster) -> None:
    stale = cluster.controller(asked=1)
    other = next(n for n in BROKER_IDS if n != stale)
    process = cluster.brokers[stale].process
    assert process is not None
    os.kill(process.pid, signal.SIGSTOP)
    try:
        wait_until(
            lambda: _controller_or_none(cluster, other) not in (None, stale),
            SESSION_TIMEOUT_MS / 1000 + 10,
            "a new controller while the old one is paused",
            interval=0.1,
        )
        new = _controller_or_none(cluster, other)
        leaders = cluster.leaders("spread-rf3", asked=other)
    finally:
        os.kill(process.pid, signal.SIGCONT)
    # resumed, it finds its session gone: it resigns and registers again; the new controller stays
    wait_until(lambda: _all_known(cluster), 20, "the paused broker back", interval=0.1)
    time.sleep(1)
    assert _controller_or_none(cluster, other) == new
    assert _controller_or_none(cluster, stale) == new
    assert all(leader != -1 for leader in cluster.leaders("spread-rf3", asked=stale).values())
    assert set(cluster.leaders("spread-rf3", asked=other)) == set(leaders)


def _controller_or_none(cluster: Cluster, asked: int) -> int | None:
    try:
        controller = cluster.controller(asked)
    except Exception:
        return None
    return controller if controller >= 0 else None


def _elect_preferred(cluster: Cluster, topic: str) -> dict[tuple[str, int], object]:
    confluent = require_module("confluent_kafka")
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap(*cluster.running())})
    partitions = [confluent.TopicPartition(topic, p) for p in range(PARTITIONS)]
    future = admin.elect_leaders(confluent.ElectionType.PREFERRED, partitions)
    answered = future.result(20)
    return {(tp.topic, tp.partition): error for tp, error in answered.items()}
