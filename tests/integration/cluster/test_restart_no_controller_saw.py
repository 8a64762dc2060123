"""#17: a leader that crashed, lost its unflushed tail and registered again while no controller
watched must not lead with that shorter log.

Found by the fault harness (170 acknowledged values lost): a broker that was the controller and led
partitions was killed, lost its tail, and registered again before the next controller read
/brokers/ids. That controller found it live and named in the partition state as leader, sent it the
same leader epoch, and the followers truncated to its shorter log. Here the gap between controllers
is made on purpose: /controller is taken by a broker id that does not exist while the leader dies and
comes back, then given up.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from odradek.storage.files import CLEAN_SHUTDOWN_MARKER
from tests.support.broker_process import BrokerProcess
from tests.support.interop import consume_partition_zero, produce_acknowledged, wait_until
from tests.support.requirements import require_module
from tests.support.zookeeper import ZooKeeperServer

BROKER_IDS = (1, 2, 3)
PATIENCE_S = 60
TOPIC = "unseen-restart"
#: /controller while no broker may be the controller.
NOBODY = 99


class Cluster:
    def __init__(self, base: Path, zk: KazooClient, connect: str, chroot: str) -> None:
        self.zk = zk
        self.chroot = chroot
        self.brokers = {
            node: BrokerProcess(
                base / f"broker-{node}",
                {
                    "node.id": str(node),
                    "zookeeper.connect": connect,
                    "zookeeper.session.timeout.ms": "6000",
                    "replica.lag.time.max.ms": "3000",
                    "replica.fetch.wait.max.ms": "200",
                    "replica.fetch.backoff.ms": "200",
                    "default.replication.factor": "3",
                    "min.insync.replicas": "2",
                    "offsets.topic.replication.factor": "3",
                    "offsets.topic.num.partitions": "1",
                    "auto.leader.rebalance.enable": "false",
                    "unclean.leader.election.enable": "false",
                },
                host=f"127.0.0.{node + 1}",
            )
            for node in BROKER_IDS
        }

    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers.values() if b.process is not None)

    def state(self) -> dict[str, Any]:
        path = f"{self.chroot}/brokers/topics/{TOPIC}/partitions/0/state"
        if not self.zk.exists(path):
            return {"leader": -1, "isr": [], "leader_epoch": -1}
        data, _ = self.zk.get(path)
        parsed: dict[str, Any] = json.loads(data)
        return parsed

    def controller(self) -> int:
        path = f"{self.chroot}/controller"
        if not self.zk.exists(path):
            return -1
        data, _ = self.zk.get(path)
        return int(json.loads(data)["brokerid"])

    def registered(self, node: int) -> bool:
        return self.zk.exists(f"{self.chroot}/brokers/ids/{node}") is not None

    def segment(self, node: int) -> Path:
        [newest, *_] = sorted((self.brokers[node].data_dir / f"{TOPIC}-0").glob("*.log"), reverse=True)
        return newest


@pytest.fixture
def cluster(zookeeper_server: ZooKeeperServer, tmp_path: Path) -> Iterator[Cluster]:
    require_module("confluent_kafka")
    require_module("kafka")
    chroot = f"/odradek-{uuid.uuid4().hex[:8]}"
    zk = KazooClient(hosts=zookeeper_server.connect_string)
    zk.start(10)
    made = Cluster(tmp_path, zk, zookeeper_server.connect_string + chroot, chroot)
    try:
        for broker in made.brokers.values():
            broker.start()
        wait_until(lambda: all(made.registered(n) for n in BROKER_IDS), PATIENCE_S, "three brokers", 0.1)
        wait_until(lambda: made.controller() in BROKER_IDS, PATIENCE_S, "a controller", 0.1)
        yield made
    finally:
        for broker in made.brokers.values():
            broker.stop()
        zk.stop()
        zk.close()


def test_a_leader_that_lost_its_tail_and_returned_between_controllers_does_not_lead_again(
    cluster: Cluster,
) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    controller = cluster.controller()
    leader = next(n for n in BROKER_IDS if n != controller)
    replicas = [leader, *(n for n in BROKER_IDS if n != leader)]
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    admin.create_topics([NewTopic(TOPIC, 1, replica_assignment=[replicas])])[TOPIC].result(30)
    wait_until(lambda: cluster.state()["isr"] == replicas, PATIENCE_S, "the whole ISR", 0.1)

    acknowledged = [f"acked-{i}".encode() for i in range(300)]
    for chunk in range(0, len(acknowledged), 100):  # a few batches: the cut below takes some of them
        produce_acknowledged(cluster.bootstrap(), TOPIC, acknowledged[chunk : chunk + 100], PATIENCE_S)
    assert cluster.state()["leader"] == leader

    # No controller from here: the leader's death and return go unseen
    controller_path = f"{cluster.chroot}/controller"
    nobody = json.dumps({"version": 1, "brokerid": NOBODY, "timestamp": "0"}).encode()
    transaction = cluster.zk.transaction()
    transaction.delete(controller_path)
    transaction.create(controller_path, nobody)
    transaction.commit()

    # The leader crashes and loses the newest half of its segment (never flushed)
    cluster.brokers[leader].kill()
    segment = cluster.segment(leader)
    with open(segment, "r+b") as log:
        log.truncate(segment.stat().st_size // 2)
    (cluster.brokers[leader].data_dir / CLEAN_SHUTDOWN_MARKER).unlink(missing_ok=True)
    # its session's end, as ZooKeeper would at expiry, and its return
    cluster.zk.delete(f"{cluster.chroot}/brokers/ids/{leader}")
    cluster.brokers[leader].start()
    wait_until(lambda: cluster.registered(leader), PATIENCE_S, "the leader registered again", 0.1)

    # A controller again: it finds the returned broker live and named leader in the partition state
    cluster.zk.delete(controller_path)
    wait_until(lambda: cluster.controller() in BROKER_IDS, PATIENCE_S, "a new controller", 0.1)
    more = [f"after-{i}".encode() for i in range(20)]
    produce_acknowledged(cluster.bootstrap(), TOPIC, more, PATIENCE_S)
    read = consume_partition_zero(cluster.bootstrap(), TOPIC, len(acknowledged) + len(more), PATIENCE_S)
    present = set(read)
    lost = [v for v in acknowledged if v not in present]
    assert not lost, f"{len(lost)} acknowledged values lost, from {lost[0]!r}"
    assert read == acknowledged + more
    assert cluster.state()["leader"] != leader
    # the returned broker follows, with nothing it should not have, and rejoins the ISR
    wait_until(lambda: len(cluster.state()["isr"]) == 3, PATIENCE_S, "it back in sync", 0.1)
