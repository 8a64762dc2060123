"""A cluster at the oldest inter.broker.protocol.version odradek honours (3.0, i.e. 3.0-IV1): its
brokers speak LeaderAndIsr v5, UpdateMetadata v7, StopReplica v3, Fetch v12 (topics by name),
ListOffsets v7 and AlterPartition v0 to each other (the versions are the unit tests'), and clients see
a cluster like any other: confluent-kafka produces acks=all to RF=3, a paused follower leaves the ISR
and comes back through AlterPartition, kafka-python reads every record. The followers' high
watermarks reach replication-offset-checkpoint within replica.high.watermark.checkpoint.interval.ms,
while the recovery-point checkpoint interval is an hour."""

from __future__ import annotations

import json
import os
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from odradek.storage.checkpoints import read_offset_checkpoint
from odradek.storage.partition import TopicPartition
from tests.support.broker_process import BrokerProcess
from tests.support.interop import consume_partition_zero, produce_acknowledged, wait_until
from tests.support.requirements import require_module
from tests.support.zookeeper import ZooKeeperServer

BROKER_IDS = (1, 2, 3)
TOPIC = "at-ibp-3-0"
#: Generous bounds on a loaded machine: the checks pass as soon as they hold.
PATIENCE_S = 60


@pytest.fixture
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path: Path
) -> Iterator[tuple[dict[int, BrokerProcess], KazooClient, str]]:
    require_module("kafka")
    require_module("confluent_kafka")
    chroot = f"/odradek-{uuid.uuid4().hex[:8]}"
    brokers = {
        node: BrokerProcess(
            tmp_path / f"broker-{node}",
            {
                "node.id": str(node),
                "zookeeper.connect": zookeeper_server.connect_string + chroot,
                "inter.broker.protocol.version": "3.0",
                "zookeeper.session.timeout.ms": "20000",
                "replica.lag.time.max.ms": "3000",
                "replica.fetch.wait.max.ms": "200",
                "replica.fetch.backoff.ms": "200",
                "replica.high.watermark.checkpoint.interval.ms": "300",
                "log.flush.offset.checkpoint.interval.ms": "3600000",
                "default.replication.factor": "3",
                "min.insync.replicas": "2",
                "offsets.topic.replication.factor": "3",
                "offsets.topic.num.partitions": "1",
                "auto.leader.rebalance.enable": "false",
            },
            host=f"127.0.0.{node + 1}",
        )
        for node in BROKER_IDS
    }
    view = KazooClient(hosts=zookeeper_server.connect_string)
    view.start(10)
    try:
        for broker in brokers.values():
            broker.start()
        yield brokers, view, chroot
    finally:
        for broker in brokers.values():
            if broker.process is not None and broker.process.poll() is None:
                os.kill(broker.process.pid, signal.SIGCONT)
            broker.stop()
        view.stop()
        view.close()


def test_a_cluster_at_inter_broker_protocol_3_0_replicates_and_changes_its_isr_for_real_clients(
    cluster: tuple[dict[int, BrokerProcess], KazooClient, str],
) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    brokers, view, chroot = cluster
    bootstrap = ",".join(b.bootstrap for b in brokers.values())

    def state() -> dict[str, Any]:
        path = f"{chroot}/brokers/topics/{TOPIC}/partitions/0/state"
        if not view.exists(path):
            return {"leader": -1, "isr": []}
        found: dict[str, Any] = json.loads(view.get(path)[0])
        return found

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 3)], operation_timeout=15)[TOPIC].result(PATIENCE_S)
    wait_until(
        lambda: state()["leader"] >= 0 and len(state()["isr"]) == 3, PATIENCE_S, "a leader and ISR", 0.1
    )

    assert _produce(bootstrap, [b"first-%d" % i for i in range(50)]) == list(range(50))

    leader = state()["leader"]
    follower = next(n for n in BROKER_IDS if n != leader)
    process = brokers[follower].process
    assert process is not None
    os.kill(process.pid, signal.SIGSTOP)  # cannot fetch: its leader drops it through AlterPartition
    try:
        wait_until(
            lambda: follower not in state()["isr"], PATIENCE_S, f"broker {follower} out of the ISR", 0.1
        )
        assert _produce(bootstrap, [b"second-%d" % i for i in range(20)]) == list(range(50, 70))
    finally:
        os.kill(process.pid, signal.SIGCONT)
    wait_until(lambda: len(state()["isr"]) == 3, PATIENCE_S, f"broker {follower} back in the ISR", 0.1)

    expected = [b"first-%d" % i for i in range(50)] + [b"second-%d" % i for i in range(20)]
    assert _consume(bootstrap, len(expected)) == expected

    tp = TopicPartition(TOPIC, 0)

    def checkpointed_everywhere() -> bool:
        return all(
            read_offset_checkpoint(b.data_dir / "replication-offset-checkpoint").get(tp) == 70
            for b in brokers.values()
        )

    wait_until(checkpointed_everywhere, PATIENCE_S, "every replica's high watermark 70 checkpointed", 0.1)
    for broker in brokers.values():  # no broker refused or failed to read a request of another
        log = broker.log_path.read_text(errors="replace")
        assert "UNSUPPORTED_VERSION" not in log and "CodecError" not in log, log[-3000:]


def _produce(bootstrap: str, values: list[bytes]) -> list[int]:
    return sorted(produce_acknowledged(bootstrap, TOPIC, values, PATIENCE_S))


def _consume(bootstrap: str, expected: int) -> list[bytes]:
    return consume_partition_zero(bootstrap, TOPIC, expected, PATIENCE_S)
