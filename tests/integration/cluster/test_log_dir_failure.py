"""#29's acceptance for a failed log dir (JBOD): three odradek brokers, one of them with two log dirs,
topics at RF=3 under acks=all producers; one of its dirs fails under it.

The failure is a real one at the OS level, unprivileged: the directory is renamed away and a file put
in its place, so every file made or written there by path (a new segment, a checkpoint) fails with
ENOTDIR, as on a disk that went away, while descriptors already open still write (as a failing disk
lets some writes through). The broker must take the dir offline, write /log_dir_event_notification
as Kafka 3.9 does, keep serving its other dir, and the controller must move the leaderships away;
no acknowledged record may be lost.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.describe_log_dirs import DescribeLogDirsRequest, DescribeLogDirsResponse
from tests.support.broker_process import BrokerProcess
from tests.support.interop import wait_until
from tests.support.mixed_clients import ProducerUnderLoad
from tests.support.raw_client import RawClient
from tests.support.requirements import require_module
from tests.support.txn_reader import read_committed_values
from tests.support.zookeeper import ZooKeeperServer

BROKER_IDS = (1, 2, 3)
#: The broker with two log dirs.
JBOD = 1
PARTITIONS = 6
PATIENCE_S = 60


class JbodCluster:
    def __init__(self, base: Path, connect: str, chroot: str, zk: KazooClient) -> None:
        self.chroot = chroot
        self.zk = zk
        self.dirs = [base / "broker-1-a", base / "broker-1-b"]
        self.brokers = {
            node: BrokerProcess(
                base / f"broker-{node}",
                {
                    "node.id": str(node),
                    "zookeeper.connect": connect,
                    "zookeeper.session.timeout.ms": "10000",
                    "replica.lag.time.max.ms": "5000",
                    "replica.fetch.wait.max.ms": "200",
                    "default.replication.factor": "3",
                    "min.insync.replicas": "2",
                    "offsets.topic.replication.factor": "3",
                    "offsets.topic.num.partitions": "1",
                    "auto.leader.rebalance.enable": "false",
                    # the checkpoints find a failed dir soon (Kafka's would too, at its own pace)
                    "replica.high.watermark.checkpoint.interval.ms": "500",
                    "log.flush.offset.checkpoint.interval.ms": "1000",
                    **({"log.dirs": ",".join(str(d) for d in self.dirs)} if node == JBOD else {}),
                },
                host=f"127.0.0.{node + 1}",
            )
            for node in BROKER_IDS
        }

    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers.values() if b.process is not None)

    def state(self, topic: str, partition: int) -> dict[str, Any]:
        data, _ = self.zk.get(f"{self.chroot}/brokers/topics/{topic}/partitions/{partition}/state")
        parsed: dict[str, Any] = json.loads(data)
        return parsed

    def describe_log_dirs(self, node: int) -> DescribeLogDirsResponse:
        broker = self.brokers[node]
        with RawClient(broker.port, timeout=5, host=broker.host) as client:
            response: DescribeLogDirsResponse = client.request(DescribeLogDirsRequest(topics=None), 4)
        return response


@pytest.fixture
def cluster(zookeeper_server: ZooKeeperServer, tmp_path: Path) -> Iterator[JbodCluster]:
    require_module("confluent_kafka")
    chroot = f"/odradek-{uuid.uuid4().hex[:8]}"
    zk = KazooClient(hosts=zookeeper_server.connect_string)
    zk.start(10)
    made = JbodCluster(tmp_path, zookeeper_server.connect_string + chroot, chroot, zk)
    try:
        for broker in made.brokers.values():
            broker.start()
        ids = f"{chroot}/brokers/ids"
        wait_until(
            lambda: zk.exists(ids) is not None and len(zk.get_children(ids)) == 3,
            PATIENCE_S,
            "three registered brokers",
            0.1,
        )
        yield made
    finally:
        for broker in made.brokers.values():
            broker.kill()
        zk.stop()
        zk.close()


def _create(cluster: JbodCluster, topic: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    # broker 1 is the preferred leader of the first half, which its dirs share (each new partition goes
    # to the dir holding fewer)
    assignment = [[JBOD, 2, 3] if p < PARTITIONS // 2 else [2, 3, JBOD] for p in range(PARTITIONS)]
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    admin.create_topics([NewTopic(topic, PARTITIONS, replica_assignment=assignment)])[topic].result(30)
    wait_until(
        lambda: all(len(cluster.state(topic, p)["isr"]) == 3 for p in range(PARTITIONS)),
        PATIENCE_S,
        f"{topic} in sync",
        0.2,
    )


def _partitions_in(log_dir: Path, topic: str) -> set[int]:
    return {int(d.name.rsplit("-", 1)[1]) for d in log_dir.iterdir() if d.name.startswith(f"{topic}-")}


def test_a_failed_log_dir_goes_offline_its_leaders_move_away_and_nothing_acknowledged_is_lost(
    cluster: JbodCluster,
) -> None:
    topic = "jbod"
    _create(cluster, topic)
    failing, surviving = cluster.dirs
    lost = _partitions_in(failing, topic)
    kept = _partitions_in(surviving, topic)
    assert lost and kept and lost | kept == set(range(PARTITIONS))
    led_kept = {p for p in kept if cluster.state(topic, p)["leader"] == JBOD}
    assert led_kept and any(cluster.state(topic, p)["leader"] == JBOD for p in lost)

    load = ProducerUnderLoad(cluster.bootstrap(), topic, PARTITIONS, "jbod").start()
    try:
        load.wait_acknowledged(300)
        failing.rename(failing.with_name(failing.name + ".gone"))
        failing.write_bytes(b"")  # the disk is gone

        def dir_offline() -> bool:
            results = {r.log_dir: r.error_code for r in cluster.describe_log_dirs(JBOD).results}
            return results.get(str(failing)) == ErrorCode.KAFKA_STORAGE_ERROR

        wait_until(dir_offline, PATIENCE_S, "DescribeLogDirs to show the failed dir offline", 0.2)

        def moved_away() -> bool:
            return all(
                cluster.state(topic, p)["leader"] not in (JBOD, -1)
                and JBOD not in cluster.state(topic, p)["isr"]
                for p in lost
            )

        wait_until(moved_away, PATIENCE_S, "the failed dir's partitions led elsewhere, out of the ISR", 0.2)
        load.wait_acknowledged(load.acknowledged.count + 300)  # served by the new leaders and broker 1
    finally:
        acknowledged = load.stop()

    assert cluster.brokers[JBOD].process is not None and cluster.brokers[JBOD].process.poll() is None
    # broker 1 still leads, and is in sync for, the partitions of its other dir
    for p in led_kept:
        state = cluster.state(topic, p)
        assert state["leader"] == JBOD and JBOD in state["isr"], (p, state)
    described = {r.log_dir: r for r in cluster.describe_log_dirs(JBOD).results}
    healthy = described[str(surviving)]
    assert healthy.error_code == ErrorCode.NONE
    assert {p.partition_index for t in healthy.topics if t.name == topic for p in t.partitions} == kept
    assert described[str(failing)].topics == []
    assert acknowledged.errors == []
    read = read_committed_values(cluster.bootstrap(), topic, PARTITIONS, timeout_s=PATIENCE_S)
    for partition, values in acknowledged.values.items():
        stored = Counter(read[partition])
        assert not [v for v in values if v not in stored], f"acknowledged and lost in {partition}"
