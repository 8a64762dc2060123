"""#25 item 1, end to end: a leader paused past its ZooKeeper session comes back still leading at its
old epoch, and the controller, seeing it register again, sends it UpdateMetadata (naming the new
leader at the next epoch) before the LeaderAndIsr that makes it a follower. A record it accepts in
between must carry the epoch it leads at, so that, following the new leader, it finds where the logs
diverge and drops that record; stamped with the cache's epoch (the new leader's) it kept it, and its
log differed from the leader's for good.

Three broker processes on a real ZooKeeper. The controller reaches each broker through a frame proxy
(its advertised listener), which holds that broker's next LeaderAndIsr when the test asks, so the one
round trip between the two requests lasts as long as the test needs to produce into it.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from odradek.protocol.api_keys import ApiKey
from odradek.protocol.messages.produce import (
    PartitionProduceData,
    ProduceRequest,
    ProduceResponse,
    TopicProduceData,
)
from odradek.protocol.records import RecordBatchBuilder
from tests.support.broker_process import BrokerProcess
from tests.support.frame_proxy import Exchange, FrameProxy
from tests.support.interop import produce_acknowledged, wait_until
from tests.support.ports import free_port
from tests.support.raw_client import RawClient
from tests.support.requirements import require_module
from tests.support.zookeeper import ZooKeeperServer

BROKER_IDS = (1, 2, 3)
SESSION_TIMEOUT_MS = 6000
PATIENCE_S = 60
TOPIC = "stamped"


@dataclass
class LeaderAndIsrGate:
    """A frame proxy's callback: while `holding`, the next LeaderAndIsr request waits for `release`."""

    holding: threading.Event = field(default_factory=threading.Event)
    held: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)

    def __call__(self, exchange: Exchange) -> None:
        if exchange.direction != "request" or exchange.api_key != ApiKey.LEADER_AND_ISR:
            return
        if self.holding.is_set():
            self.holding.clear()
            self.held.set()
            self.release.wait(PATIENCE_S)


@dataclass
class Cluster:
    brokers: dict[int, BrokerProcess]
    gates: dict[int, LeaderAndIsrGate]
    zk: KazooClient
    chroot: str

    def state(self) -> dict[str, Any]:
        path = f"{self.chroot}/brokers/topics/{TOPIC}/partitions/0/state"
        if not self.zk.exists(path):
            return {"leader": -1, "isr": [], "leader_epoch": -1}
        data, _ = self.zk.get(path)
        found: dict[str, Any] = json.loads(data)
        return found

    def registered(self, node: int) -> bool:
        return self.zk.exists(f"{self.chroot}/brokers/ids/{node}") is not None

    def controller(self) -> int:
        data, _ = self.zk.get(f"{self.chroot}/controller")
        return int(json.loads(data)["brokerid"])

    def pause(self, node: int) -> None:
        process = self.brokers[node].process
        assert process is not None
        os.kill(process.pid, signal.SIGSTOP)

    def resume(self, node: int) -> None:
        process = self.brokers[node].process
        if process is not None:
            os.kill(process.pid, signal.SIGCONT)

    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers.values())

    def segments(self, node: int) -> dict[str, bytes]:
        directory = self.brokers[node].data_dir / f"{TOPIC}-0"
        return {p.name: p.read_bytes() for p in sorted(directory.glob("*.log"))}


@pytest.fixture
def cluster(zookeeper_server: ZooKeeperServer, tmp_path: Path) -> Iterator[Cluster]:
    require_module("confluent_kafka")
    chroot = f"/odradek-{uuid.uuid4().hex[:8]}"
    zk = KazooClient(hosts=zookeeper_server.connect_string)
    zk.start(10)
    gates = {node: LeaderAndIsrGate() for node in BROKER_IDS}
    proxies: list[FrameProxy] = []
    brokers: dict[int, BrokerProcess] = {}
    try:
        for node in BROKER_IDS:
            host, port = f"127.0.0.{node + 1}", free_port()
            proxy = FrameProxy(port, gates[node], upstream_host=host).start()
            proxies.append(proxy)
            brokers[node] = BrokerProcess(
                tmp_path / f"broker-{node}",
                {
                    "node.id": str(node),
                    "zookeeper.connect": zookeeper_server.connect_string + chroot,
                    "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
                    # everyone, the controller too, reaches this broker through its proxy
                    "advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy.port}",
                    "replica.lag.time.max.ms": "3000",
                    "replica.fetch.wait.max.ms": "200",
                    "replica.fetch.backoff.ms": "200",
                    "min.insync.replicas": "2",
                    "offsets.topic.replication.factor": "3",
                    "auto.leader.rebalance.enable": "false",
                    "unclean.leader.election.enable": "false",
                },
                port=port,
                host=host,
            )
        for broker in brokers.values():
            broker.start()
        made = Cluster(brokers, gates, zk, chroot)
        wait_until(lambda: all(made.registered(n) for n in BROKER_IDS), PATIENCE_S, "three brokers", 0.1)
        yield made
    finally:
        for gate in gates.values():
            gate.release.set()
        for broker in brokers.values():
            if broker.process is not None:
                os.kill(broker.process.pid, signal.SIGCONT)
            broker.stop()
        for proxy in proxies:
            proxy.stop()
        zk.stop()
        zk.close()


def _produce_acks_1(broker: BrokerProcess, value: bytes) -> tuple[int, int]:
    builder = RecordBatchBuilder(0)
    builder.append(1_700_000_000_000, None, value)
    request = ProduceRequest(
        acks=1,
        timeout_ms=5000,
        topic_data=[
            TopicProduceData(
                name=TOPIC, partition_data=[PartitionProduceData(index=0, records=builder.build())]
            )
        ],
    )
    with RawClient(broker.port, timeout=10, host=broker.host) as client:
        response: ProduceResponse = client.request(request, 9)
    answer = response.responses[0].partition_responses[0]
    return int(answer.error_code), int(answer.base_offset)


def test_a_leader_back_from_a_pause_stamps_its_own_epoch_and_drops_what_the_new_leader_never_had(
    cluster: Cluster,
) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    controller = cluster.controller()
    old, new, other = [n for n in BROKER_IDS if n != controller] + [controller]
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    admin.create_topics([NewTopic(TOPIC, 1, replica_assignment=[[old, new, other]])])[TOPIC].result(30)
    wait_until(lambda: cluster.state()["isr"] == [old, new, other], PATIENCE_S, "the whole ISR", 0.1)
    produce_acknowledged(cluster.bootstrap(), TOPIC, [b"before-%d" % i for i in range(5)], PATIENCE_S)
    epoch = int(cluster.state()["leader_epoch"])

    # The leader pauses past its session: the controller elects the next replica at the next epoch
    cluster.pause(old)
    try:
        wait_until(lambda: cluster.state()["leader"] == new, PATIENCE_S, "the new leader", 0.1)
        assert cluster.state()["leader_epoch"] == epoch + 1
        # the new leader's own records, past the offset the old one will write at
        produce_acknowledged(cluster.bootstrap(), TOPIC, [b"after-%d" % i for i in range(3)], PATIENCE_S)
        cluster.gates[old].holding.set()
    finally:
        cluster.resume(old)

    # Back, it registers again; UpdateMetadata reaches it, its LeaderAndIsr is held
    assert cluster.gates[old].held.wait(PATIENCE_S), "no LeaderAndIsr for the returning broker"
    code, offset = _produce_acks_1(cluster.brokers[old], b"never the leader's")
    assert (code, offset) == (0, 5)  # it still leads, at its old epoch, as far as it knows
    cluster.gates[old].release.set()

    # A follower now: it finds where its log leaves the leader's and takes the leader's records
    wait_until(
        lambda: cluster.segments(old) == cluster.segments(new),
        PATIENCE_S,
        "the returning broker's log the same as the new leader's",
        0.2,
    )
    assert all(b"never the leader's" not in data for data in cluster.segments(new).values())
