"""Client quotas in a ZooKeeper cluster (two brokers): set through one broker, written to /config/users,
/config/clients and /config/ips as Kafka writes them (other keys of a user's znode kept) with a
/config/changes notification, described and enforced by the other broker too."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from odradek.cli.main import main as odradek
from tests.support.broker_process import BrokerProcess
from tests.support.interop import wait_until
from tests.support.requirements import require_module
from tests.support.zookeeper import ZooKeeperServer

pytestmark = pytest.mark.timeout(240)

RATE = 100 * 1024
VALUE = b"v" * 1000
MESSAGES = 600
#: What another tool (Kafka's SCRAM credentials) keeps in a user's znode: never ours to drop.
SCRAM = "salt=c2FsdA==,stored_key=a2V5,server_key=a2V5,iterations=4096"


@pytest.fixture
def two_brokers(
    zookeeper_server: ZooKeeperServer, tmp_path: Path
) -> Iterator[tuple[str, list[BrokerProcess]]]:
    require_module("confluent_kafka")
    chroot = f"/odradek-quotas-{uuid.uuid4().hex[:8]}"
    zk = KazooClient(hosts=zookeeper_server.connect_string)
    zk.start(10)
    brokers = [
        BrokerProcess(
            tmp_path / f"broker-{node}",
            {
                "node.id": str(node),
                "zookeeper.connect": zookeeper_server.connect_string + chroot,
                "offsets.topic.replication.factor": "1",
                "offsets.topic.num.partitions": "2",
                "quota.window.num": "2",
                "quota.window.size.seconds": "1",
            },
            host=f"127.0.0.{node + 1}",
        )
        for node in (1, 2)
    ]
    try:
        zk.create(
            f"{chroot}/config/users/alice",
            json.dumps({"version": 1, "config": {"SCRAM-SHA-256": SCRAM}}).encode(),
            makepath=True,
        )
        for broker in brokers:
            broker.start()
        yield chroot, brokers
    finally:
        for broker in brokers:
            broker.stop()
        zk.stop()
        zk.close()


def _znode(zookeeper_server: ZooKeeperServer, path: str) -> Any:
    zk = KazooClient(hosts=zookeeper_server.connect_string)
    zk.start(10)
    try:
        data, _ = zk.get(path)
        return json.loads(data)
    finally:
        zk.stop()
        zk.close()


def _notifications(zookeeper_server: ZooKeeperServer, chroot: str) -> list[str]:
    zk = KazooClient(hosts=zookeeper_server.connect_string)
    zk.start(10)
    try:
        changes = f"{chroot}/config/changes"
        return [
            json.loads(zk.get(f"{changes}/{name}")[0])["entity_path"]
            for name in sorted(zk.get_children(changes))
        ]
    finally:
        zk.stop()
        zk.close()


def test_a_quota_set_through_one_broker_applies_on_the_other(
    zookeeper_server: ZooKeeperServer,
    two_brokers: tuple[str, list[BrokerProcess]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    chroot, (first, second) = two_brokers
    assert (
        odradek(
            [
                "quotas",
                "alter",
                "--user",
                "alice",
                "--add-config",
                "producer_byte_rate=2048",
                "--bootstrap-server",
                first.bootstrap,
            ]
        )
        == 0
    )
    assert (
        odradek(
            [
                "quotas",
                "alter",
                "--client",
                "slow-producer",
                "--add-config",
                f"producer_byte_rate={RATE}",
                "--bootstrap-server",
                first.bootstrap,
            ]
        )
        == 0
    )

    assert _znode(zookeeper_server, f"{chroot}/config/users/alice") == {
        "version": 1,
        "config": {"SCRAM-SHA-256": SCRAM, "producer_byte_rate": "2048"},
    }
    assert _znode(zookeeper_server, f"{chroot}/config/clients/slow-producer") == {
        "version": 1,
        "config": {"producer_byte_rate": str(RATE)},
    }
    assert (
        odradek(
            [
                "quotas",
                "alter",
                "--ip-defaults",
                "--add-config",
                "connection_creation_rate=1000",
                "--bootstrap-server",
                first.bootstrap,
            ]
        )
        == 0
    )
    assert _znode(zookeeper_server, f"{chroot}/config/ips/<default>") == {
        "version": 1,
        "config": {"connection_creation_rate": "1000"},
    }
    assert _notifications(zookeeper_server, chroot)[-3:] == [
        "users/alice",
        "clients/slow-producer",
        "ips/<default>",
    ]

    def described_by_the_other() -> bool:
        capsys.readouterr()
        assert odradek(["quotas", "describe", "--bootstrap-server", second.bootstrap]) == 0
        out = capsys.readouterr().out
        return "slow-producer" in out and "ip=<default>" in out

    wait_until(described_by_the_other, 60, "the quota described by the other broker", interval=0.5)

    # Enforced by each broker on what it leads: two partitions, one on each broker.
    topic = f"quota-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": first.bootstrap})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(60)
    throttled_by: set[int] = set()
    producer = Producer(
        {
            "bootstrap.servers": first.bootstrap,
            "client.id": "slow-producer",
            "linger.ms": 5,
            "batch.size": 16 * 1024,
            "throttle_cb": lambda event: (
                throttled_by.add(event.broker_id) if event.throttle_time > 0 else None
            ),
        }
    )
    wait_until(
        lambda: _leaders(producer, topic) == {1, 2}, 60, "a partition led by each broker", interval=0.5
    )
    started = time.monotonic()
    for index in range(MESSAGES):
        while True:
            try:
                producer.produce(topic, VALUE, partition=index % 2)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    assert producer.flush(120) == 0
    elapsed = time.monotonic() - started
    producer.poll(0)
    assert 2 in throttled_by, f"throttled by brokers {sorted(throttled_by)} only"
    per_broker = MESSAGES * len(VALUE) / 2 / elapsed
    assert per_broker < 1.6 * RATE, f"{per_broker:.0f} B/s per broker against a quota of {RATE} B/s"

    # A broker that starts reads every quota from ZooKeeper.
    second.restart()
    wait_until(described_by_the_other, 60, "the quotas read again by the restarted broker", interval=0.5)


def _leaders(producer: Any, topic: str) -> set[int]:
    metadata = producer.list_topics(topic, timeout=10)
    described = metadata.topics.get(topic)
    if described is None or described.error is not None:
        return set()
    return {p.leader for p in described.partitions.values()}
