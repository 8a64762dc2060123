"""AlterPartition end to end: a real ZooKeeper, brokers 2 and 3 as processes and broker 1 in this
process, whose AlterPartitionManager (the sender its partition leaders use) shrinks and expands the
ISR of a partition it leads through the controller on another broker; every broker's Metadata then
shows the new ISR, and a proposal based on an old partition epoch is refused."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from odradek.cluster.replication.isr_updates import CommittedIsr, IsrUpdateFailed, ProposedIsr
from odradek.cluster.zookeeper import topics
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.cluster.zookeeper.controller_election import active_controller
from odradek.cluster.zookeeper.topic_znodes import TopicAssignmentZnode
from odradek.config.broker import BrokerConfig
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic, MetadataResponse
from odradek.server.broker import Broker
from tests.support.broker_process import BrokerProcess, free_port
from tests.support.raw_client import RawClient
from tests.support.zookeeper import ZooKeeperServer

SESSION_TIMEOUT_MS = "6000"
TOPIC = "isr-changes"


def metadata(host: str, port: int) -> MetadataResponse:
    with RawClient(port, timeout=5, host=host) as client:
        request = MetadataRequest(topics=[MetadataRequestTopic(name=TOPIC)], allow_auto_topic_creation=False)
        response: MetadataResponse = client.request(request, 12)
        return response


async def wait_for_every_broker(
    endpoints: list[tuple[str, int]], check: Callable[[MetadataResponse], bool], what: str
) -> None:
    """Poll each broker's own Metadata (in a thread: broker 1 answers on this loop) until `check`."""
    deadline = time.monotonic() + 60
    last: object = None
    for host, port in endpoints:
        while True:
            try:
                last = answer = await asyncio.to_thread(metadata, host, port)
                if check(answer):
                    break
            except (OSError, ValueError) as error:
                last = error
            assert time.monotonic() < deadline, f"{what}: broker {host}:{port} answered {last}"
            await asyncio.sleep(0.1)


def partition_isr(leader: int, isr: list[int]) -> Callable[[MetadataResponse], bool]:
    def check(answer: MetadataResponse) -> bool:
        found = [p for t in answer.topics if t.name == TOPIC for p in t.partitions]
        return len(found) == 1 and found[0].leader_id == leader and list(found[0].isr_nodes) == isr

    return check


def test_a_leaders_isr_shrink_and_expand_reach_every_broker_and_a_stale_proposal_is_refused(
    zookeeper_server: ZooKeeperServer, tmp_path: Path
) -> None:
    connect = f"{zookeeper_server.connect_string}/odradek-{uuid.uuid4().hex[:8]}"
    common = {
        "zookeeper.connect": connect,
        "zookeeper.session.timeout.ms": SESSION_TIMEOUT_MS,
        "offsets.topic.replication.factor": "1",
        "auto.leader.rebalance.enable": "false",
        "controlled.shutdown.enable": "false",
    }
    others = {
        node: BrokerProcess(
            tmp_path / f"broker-{node}", {**common, "node.id": str(node)}, host=f"127.0.0.{node + 1}"
        )
        for node in (2, 3)
    }
    port = free_port()
    own = BrokerConfig(
        {
            **common,
            "node.id": "1",
            "listeners": f"PLAINTEXT://127.0.0.2:{port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.2:{port}",
            "log.dirs": str(tmp_path / "broker-1"),
        }
    )
    endpoints = [("127.0.0.2", port)] + [(b.host, b.port) for b in others.values()]

    async def scenario(broker: Broker, zk: ZooKeeperClient) -> None:
        assignment = TopicAssignmentZnode({0: [1, 2, 3]}, uuid.uuid4())
        await asyncio.to_thread(topics.create_topic, zk, TOPIC, assignment, {})
        await wait_for_every_broker(endpoints, partition_isr(1, [1, 2, 3]), "the new partition")
        assert broker.member is not None and broker.member.replicas is not None
        replicas = broker.member.replicas
        updater = replicas.isr_updater
        assert updater is not None and updater is broker.member.alter_partition
        assert broker.member.controller is not None and not broker.member.controller.is_active
        hosted = replicas.hosted[(TOPIC, 0)]
        epoch, partition_epoch = hosted.leader_epoch, hosted.partition_epoch

        shrink = ProposedIsr(TOPIC, assignment.topic_id, 0, epoch, (1, 2), partition_epoch)
        shrunk = await asyncio.wait_for(updater.submit(shrink), 60)
        assert shrunk == CommittedIsr(1, epoch, (1, 2), partition_epoch + 1)
        await wait_for_every_broker(endpoints, partition_isr(1, [1, 2]), "the shrunk ISR")

        expand = ProposedIsr(TOPIC, assignment.topic_id, 0, epoch, (1, 2, 3), shrunk.partition_epoch)
        expanded = await asyncio.wait_for(updater.submit(expand), 60)
        assert expanded == CommittedIsr(1, epoch, (1, 2, 3), partition_epoch + 2)
        await wait_for_every_broker(endpoints, partition_isr(1, [1, 2, 3]), "the expanded ISR")

        try:
            await asyncio.wait_for(updater.submit(shrink), 60)  # based on the first partition epoch
        except IsrUpdateFailed as refused:
            assert refused.error_code == ErrorCode.INVALID_UPDATE_VERSION
        else:
            raise AssertionError("a proposal on an old partition epoch was written")
        found = await asyncio.to_thread(topics.partition_state, zk, TOPIC, 0)
        assert found is not None and list(found[0].isr) == [1, 2, 3] and found[1] == partition_epoch + 2

    async def main() -> None:
        broker: Broker | None = None
        zk: ZooKeeperClient | None = None
        try:
            for process in others.values():
                process.start()  # one of them becomes controller before broker 1 starts
            zk = await asyncio.to_thread(
                ZooKeeperClient.connect, connect, session_timeout_ms=6000, connection_timeout_ms=10_000
            )
            await asyncio.to_thread(_wait_for_controller, zk)
            broker = Broker(own)
            await broker.start()
            await wait_for_every_broker(endpoints, lambda answer: len(answer.brokers) == 3, "three brokers")
            await asyncio.wait_for(scenario(broker, zk), 240)
        finally:
            if broker is not None:
                await broker.stop()
            for process in others.values():
                process.stop()
            if zk is not None:
                await asyncio.to_thread(zk.close)

    asyncio.run(main())


def _wait_for_controller(zk: ZooKeeperClient) -> None:
    deadline = time.monotonic() + 60
    while active_controller(zk) is None:
        assert time.monotonic() < deadline, "no controller elected"
        time.sleep(0.1)
