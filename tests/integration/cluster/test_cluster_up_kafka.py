"""`odradek cluster up --brokers 1 --kafka 1`: an odradek broker and an Apache Kafka 3.9.2 broker on one
ZooKeeper, Kafka's jars fetched into an empty user cache from a file:// mirror of the Maven cache (never
Maven Central); a topic at RF=2 led by both takes records through both and gives them back; Ctrl-C
stops every process it started, Kafka's with a controlled shutdown."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from tests.support import java_suite
from tests.support.broker_process import REPO, free_port
from tests.support.interop import wait_until
from tests.support.kafka_reference import reference_classpath
from tests.support.requirements import require_module
from tests.support.zookeeper import zookeeper_command

pytestmark = pytest.mark.timeout(300)


def test_cluster_up_with_a_kafka_broker_beside_odradeks_serves_an_rf2_topic_and_ctrl_c_leaves_nothing(
    tmp_path: Path,
) -> None:
    require_module("confluent_kafka")
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    if zookeeper_command() is None:
        pytest.skip("Java or Debian's zookeeper jars are missing")
    reference_classpath()  # Kafka 3.9.2's jars in .cache/maven, the mirror served below
    port, zookeeper_port = free_port(), free_port()
    directory = tmp_path / "cluster"
    command = [sys.executable, "-m", "odradek.cli.main", "cluster", "up", "--brokers", "1", "--kafka", "1"]
    command += ["--dir", str(directory), "--port", str(port), "--zookeeper-port", str(zookeeper_port)]
    command += ["--maven-repository", java_suite.MAVEN_REPOSITORY.as_uri()]
    command += ["--override", "group.initial.rebalance.delay.ms=0"]  # for both kinds
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    up = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=REPO, env=env)
    started: list[int] = []
    try:
        assert up.stdout is not None
        lines = [up.stdout.readline().decode() for _ in range(6)]
        assert lines[0].startswith("odradek cluster up: downloading Apache Kafka 3.9.2's broker (57 jars"), (
            lines
        )
        odradek, kafka = f"127.0.0.2:{port}", f"127.0.0.3:{port}"
        assert lines[2] == f"broker 1: {odradek}  odradek, log {directory}/broker-1/broker.log\n", lines
        assert lines[3] == (
            f"broker 2: {kafka}  Apache Kafka 3.9.2 (-Xmx512m), log {directory}/broker-2/broker.log\n"
        ), lines
        started = _descendants(up.pid)
        assert len(started) == 3  # ZooKeeper and both brokers
        zookeeper = KazooClient(f"127.0.0.1:{zookeeper_port}/odradek")
        zookeeper.start(30)
        try:  # a broker listens before it registers
            wait_until(lambda: len(_registered(zookeeper)) == 2, 60, "both brokers registered", 0.2)
            registered = _registered(zookeeper)
        finally:
            zookeeper.stop()
            zookeeper.close()
        assert registered == {"1": [f"PLAINTEXT://{odradek}"], "2": [f"PLAINTEXT://{kafka}"]}
        kafka_log = directory / "broker-2" / "broker.log"
        wait_until(lambda: "[KafkaServer id=2] started" in kafka_log.read_text(), 60, "Kafka started", 0.2)
        assert (
            "\tgroup.initial.rebalance.delay.ms = 0\n" in kafka_log.read_text()
        )  # the override reached Kafka

        bootstrap = f"{odradek},{kafka}"
        topic = f"mixed-{uuid.uuid4().hex[:8]}"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        try:
            admin.create_topics([NewTopic(topic, 2, 2)])[topic].result(60)
        except TimeoutError as error:  # seen once in CI: say what the client and the brokers saw
            raise AssertionError(_diagnosis(admin, directory)) from error
        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
        delivered: list[tuple[int, int]] = []

        def on_delivery(error: object, message: object) -> None:
            assert error is None, error
            delivered.append((message.partition(), message.offset()))  # type: ignore[attr-defined]

        sent = [f"record-{n}".encode() for n in range(200)]
        for value in sent:
            producer.produce(topic, value, partition=len(delivered) % 2, on_delivery=on_delivery)
            producer.poll(0)
        assert producer.flush(60) == 0
        assert len(delivered) == len(sent)
        partitions = admin.list_topics(topic, timeout=30).topics[topic].partitions
        assert sorted(p.leader for p in partitions.values()) == [1, 2]  # one leader of each kind
        assert all(sorted(p.isrs) == [1, 2] for p in partitions.values())

        consumer = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": topic, "auto.offset.reset": "earliest"}
        )
        consumer.subscribe([topic])
        received: list[bytes] = []
        try:
            for _ in range(600):
                if len(received) == len(sent):
                    break
                message = consumer.poll(0.5)
                if message is not None and message.error() is None:
                    received.append(message.value())
        finally:
            consumer.close()
        assert sorted(received) == sorted(sent)
        del producer, admin  # librdkafka's clients gone before the brokers stop
    finally:
        up.send_signal(signal.SIGINT)
        code = up.wait(120)
    assert code == 0
    assert [pid for pid in started if _running(pid)] == []
    # Kafka's broker stopped first, with a controlled shutdown that moved its leaderships to odradek's
    kafka_log = (directory / "broker-2" / "broker.log").read_text()
    assert "[KafkaServer id=2] Controlled shutdown request returned successfully" in kafka_log
    assert "[KafkaServer id=2] shut down completed" in kafka_log
    assert "broker stopped" in (directory / "broker-1" / "broker.log").read_text()


def _diagnosis(admin: object, directory: Path) -> str:
    """The cluster as the admin client's metadata shows it, and the end of each broker's log."""
    try:
        metadata = admin.list_topics(timeout=10)  # type: ignore[attr-defined]
        seen = f"controller {metadata.controller_id}, brokers {sorted(metadata.brokers)}"
    except Exception as error:  # a diagnosis, whatever the client says
        seen = f"no metadata: {error!r}"
    parts = [f"CreateTopics unanswered after 60 s; the client sees {seen}"]
    for log in sorted(directory.glob("broker-*/broker.log")):
        lines = log.read_text(errors="replace").splitlines()
        parts.append(f"--- {log.parent.name}, last 60 lines:\n" + "\n".join(lines[-60:]))
    return "\n".join(parts)


def _registered(zookeeper: KazooClient) -> dict[str, list[str]]:
    """Each registered broker's endpoints, by id."""
    return {
        node: json.loads(zookeeper.get(f"/brokers/ids/{node}")[0])["endpoints"]
        for node in zookeeper.get_children("/brokers/ids")
    }


def _descendants(pid: int) -> list[int]:
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return [int(child) for child in children]


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"
