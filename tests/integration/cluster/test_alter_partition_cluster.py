"""AlterPartition end to end: a real ZooKeeper, brokers 2 and 3 as processes and broker 1 in this
process, whose AlterPartitionManager (the sender its partition leaders use) shrinks and expands the
ISR of a partition it leads through the controller on another broker; every broker's Metadata then
shows the new ISR, and a proposal based on an old partition epoch is refused. Then unclean election
turned on at run time (a topic's config, then the controller broker's) by kafka-python's AlterConfigs
brings back partitions whose only in-sync replica died."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from odradek.cluster.zookeeper import paths, topics
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.cluster.zookeeper.configs import set_entity_config
from odradek.cluster.zookeeper.controller_election import active_controller
from odradek.cluster.zookeeper.topic_znodes import TopicAssignmentZnode
from odradek.config.broker import BrokerConfig
from odradek.partition.isr_updates import CommittedIsr, IsrUpdateFailed, IsrUpdater, ProposedIsr
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.metadata import MetadataRequest, MetadataResponse
from odradek.server.broker import Broker
from tests.support.broker_process import BrokerProcess, free_port
from tests.support.raw_client import RawClient
from tests.support.requirements import require_module
from tests.support.zookeeper import ZooKeeperServer

SESSION_TIMEOUT_MS = "6000"
TOPIC = "isr-changes"


def metadata(host: str, port: int) -> MetadataResponse:
    """Broker host:port's own answer about every topic."""
    with RawClient(port, timeout=5, host=host) as client:
        request = MetadataRequest(topics=None, allow_auto_topic_creation=False)
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


def partition_isr(leader: int, isr: list[int], topic: str = TOPIC) -> Callable[[MetadataResponse], bool]:
    def check(answer: MetadataResponse) -> bool:
        found = [p for t in answer.topics if t.name == topic for p in t.partitions]
        return len(found) == 1 and found[0].leader_id == leader and list(found[0].isr_nodes) == isr

    return check


@dataclass
class ThreeBrokers:
    """Broker 1 in this process (its sender and replica manager at hand), 2 and 3 as processes."""

    broker: Broker
    zk: ZooKeeperClient
    processes: dict[int, BrokerProcess]
    #: (host, port) of brokers 1, 2, 3.
    endpoints: list[tuple[str, int]]
    broker_stopped: bool = False

    async def stop_broker_1(self) -> None:
        self.broker_stopped = True
        await self.broker.stop()

    @property
    def updater(self) -> IsrUpdater:
        member = self.broker.member
        assert member is not None and member.replicas is not None
        updater = member.replicas.isr_updater
        assert updater is not None and updater is member.alter_partition
        return updater

    async def create(self, topic: str) -> uuid.UUID:
        """A topic with one partition on [1, 2, 3], led by 1, as every broker's Metadata shows it."""
        assignment = TopicAssignmentZnode({0: [1, 2, 3]}, uuid.uuid4())
        await asyncio.to_thread(topics.create_topic, self.zk, topic, assignment, {})
        await wait_for_every_broker(self.endpoints, partition_isr(1, [1, 2, 3], topic), f"{topic} created")
        assert assignment.topic_id is not None
        return assignment.topic_id

    def epochs(self, topic: str) -> tuple[int, int]:
        """Broker 1's leader epoch and partition epoch of `topic`-0, from its last LeaderAndIsr."""
        member = self.broker.member
        assert member is not None and member.replicas is not None
        hosted = member.replicas.hosted[(topic, 0)]
        return hosted.leader_epoch, hosted.partition_epoch


def run_three_brokers(
    zookeeper_server: ZooKeeperServer,
    tmp_path: Path,
    scenario: Callable[[ThreeBrokers], Awaitable[None]],
    cluster_default: Mapping[str, str] | None = None,
) -> None:
    """`cluster_default`: dynamic broker configs written to /config/brokers/<default> before any broker
    starts (as kafka-configs --entity-type brokers --entity-default does)."""
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

    async def main() -> None:
        broker: Broker | None = None
        zk: ZooKeeperClient | None = None
        brokers: ThreeBrokers | None = None
        try:
            zk = await asyncio.to_thread(
                ZooKeeperClient.connect, connect, session_timeout_ms=6000, connection_timeout_ms=10_000
            )
            if cluster_default is not None:
                await asyncio.to_thread(
                    set_entity_config, zk, paths.BROKER_CONFIG, paths.DEFAULT_ENTITY, cluster_default
                )
            for process in others.values():
                process.start()  # one of them becomes controller before broker 1 starts
            await asyncio.to_thread(_wait_for_controller, zk)
            broker = Broker(own)
            await broker.start()
            await wait_for_every_broker(endpoints, lambda answer: len(answer.brokers) == 3, "three brokers")
            assert broker.member is not None and broker.member.controller is not None
            assert not broker.member.controller.is_active  # the controller is another process
            brokers = ThreeBrokers(broker, zk, others, endpoints)
            await asyncio.wait_for(scenario(brokers), 240)
        finally:
            if broker is not None and (brokers is None or not brokers.broker_stopped):
                await broker.stop()
            for process in others.values():
                process.stop()
            if zk is not None:
                await asyncio.to_thread(zk.close)

    asyncio.run(main())


def test_a_leaders_isr_shrink_and_expand_reach_every_broker_and_a_stale_proposal_is_refused(
    zookeeper_server: ZooKeeperServer, tmp_path: Path
) -> None:
    async def scenario(c: ThreeBrokers) -> None:
        topic_id = await c.create(TOPIC)
        epoch, partition_epoch = c.epochs(TOPIC)

        shrink = ProposedIsr(TOPIC, topic_id, 0, epoch, (1, 2), partition_epoch)
        shrunk = await asyncio.wait_for(c.updater.submit(shrink), 60)
        assert shrunk == CommittedIsr(1, epoch, (1, 2), partition_epoch + 1)
        await wait_for_every_broker(c.endpoints, partition_isr(1, [1, 2]), "the shrunk ISR")

        expand = ProposedIsr(TOPIC, topic_id, 0, epoch, (1, 2, 3), shrunk.partition_epoch)
        expanded = await asyncio.wait_for(c.updater.submit(expand), 60)
        assert expanded == CommittedIsr(1, epoch, (1, 2, 3), partition_epoch + 2)
        await wait_for_every_broker(c.endpoints, partition_isr(1, [1, 2, 3]), "the expanded ISR")

        try:
            await asyncio.wait_for(c.updater.submit(shrink), 60)  # based on the first partition epoch
        except IsrUpdateFailed as refused:
            assert refused.error_code == ErrorCode.INVALID_UPDATE_VERSION
        else:
            raise AssertionError("a proposal on an old partition epoch was written")
        found = await asyncio.to_thread(topics.partition_state, c.zk, TOPIC, 0)
        assert found is not None and list(found[0].isr) == [1, 2, 3] and found[1] == partition_epoch + 2

    run_three_brokers(zookeeper_server, tmp_path, scenario)


def test_turning_unclean_election_on_for_a_topic_then_for_the_broker_brings_offline_partitions_back(
    zookeeper_server: ZooKeeperServer, tmp_path: Path
) -> None:
    require_module("kafka")

    async def scenario(c: ThreeBrokers) -> None:
        for topic in ("by-topic", "by-broker"):
            topic_id = await c.create(topic)
            epoch, partition_epoch = c.epochs(topic)
            await asyncio.wait_for(
                c.updater.submit(ProposedIsr(topic, topic_id, 0, epoch, (1,), partition_epoch)), 60
            )
        await wait_for_every_broker(
            c.endpoints[1:], partition_isr(1, [1], "by-broker"), "ISRs of broker 1 only"
        )
        await (
            c.stop_broker_1()
        )  # the only in-sync replica goes: both partitions go offline, 1 kept in the ISR
        others = c.endpoints[1:]
        for topic in ("by-topic", "by-broker"):
            await wait_for_every_broker(others, partition_isr(-1, [1], topic), f"{topic} offline")

        await asyncio.to_thread(alter_configs, c.endpoints[1], 2, "by-topic", {UNCLEAN: "true"})
        leader = await wait_for_new_leader(others, "by-topic")
        assert leader in (2, 3)
        states = [await asyncio.to_thread(metadata, *e) for e in others]
        assert all(partition_isr(-1, [1], "by-broker")(s) for s in states)  # its topic did not allow it

        controller = int((await asyncio.to_thread(metadata, *others[0])).controller_id)
        assert controller in (2, 3)
        await asyncio.to_thread(
            alter_configs, c.endpoints[controller - 1], 4, str(controller), {UNCLEAN: "true"}
        )
        assert await wait_for_new_leader(others, "by-broker") in (2, 3)
        logs = c.processes[controller].log_text()
        assert "unclean leader election" in logs and "by-topic-0" in logs and "by-broker-0" in logs

    run_three_brokers(zookeeper_server, tmp_path, scenario)


UNCLEAN = "unclean.leader.election.enable"


def test_unclean_election_set_at_the_cluster_default_before_start_is_the_controllers(
    zookeeper_server: ZooKeeperServer, tmp_path: Path
) -> None:
    """As Kafka's controller, whose configuration has /config/brokers applied before it starts: the
    cluster's default unclean.leader.election.enable, written in ZooKeeper while no broker runs (no
    broker's file sets it), lets the controller elect an out-of-sync replica once the only in-sync one
    dies, with no AlterConfigs at run time."""

    async def scenario(c: ThreeBrokers) -> None:
        topic_id = await c.create(TOPIC)
        epoch, partition_epoch = c.epochs(TOPIC)
        await asyncio.wait_for(
            c.updater.submit(ProposedIsr(TOPIC, topic_id, 0, epoch, (1,), partition_epoch)), 60
        )
        others = c.endpoints[1:]
        await wait_for_every_broker(others, partition_isr(1, [1]), "an ISR of broker 1 only")
        await c.stop_broker_1()  # the only in-sync replica goes; 2 and 3 are out of sync

        def led_by_2_or_3(answer: MetadataResponse) -> bool:  # (not yet told of 1's death: still 1)
            found = [p for t in answer.topics if t.name == TOPIC for p in t.partitions]
            return (
                len(found) == 1 and found[0].leader_id in (2, 3) and found[0].leader_id in found[0].isr_nodes
            )

        await wait_for_every_broker(others, led_by_2_or_3, "an out-of-sync replica elected")
        controller = int((await asyncio.to_thread(metadata, *others[0])).controller_id)
        assert controller in (2, 3)
        assert f"unclean leader election ({UNCLEAN})" in c.processes[controller].log_text()

    run_three_brokers(zookeeper_server, tmp_path, scenario, cluster_default={UNCLEAN: "true"})


def alter_configs(endpoint: tuple[str, int], resource_type: int, name: str, configs: dict[str, str]) -> None:
    """AlterConfigs through kafka-python's admin client (2: a topic, 4: a broker)."""
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

    kind = ConfigResourceType.TOPIC if resource_type == 2 else ConfigResourceType.BROKER
    admin = KafkaAdminClient(bootstrap_servers=f"{endpoint[0]}:{endpoint[1]}", request_timeout_ms=10_000)
    try:
        response = admin.alter_configs([ConfigResource(kind, name, configs=configs)])
        outcomes = [outcome for by_name in response.values() for outcome in by_name.values()]
        assert outcomes == ["OK"], response
    finally:
        admin.close()


async def wait_for_new_leader(endpoints: list[tuple[str, int]], topic: str) -> int:
    """The leader every broker names once the partition is back, in its ISR (elected alone in it; the
    other live replica may have caught up from it and rejoined by then)."""
    leaders: set[int] = set()

    def check(answer: MetadataResponse) -> bool:
        found = [p for t in answer.topics if t.name == topic for p in t.partitions]
        if len(found) == 1 and found[0].leader_id >= 0 and found[0].leader_id in found[0].isr_nodes:
            leaders.add(found[0].leader_id)
            return True
        return False

    await wait_for_every_broker(endpoints, check, f"{topic} led again")
    assert len(leaders) == 1, leaders
    return leaders.pop()


def _wait_for_controller(zk: ZooKeeperClient) -> None:
    deadline = time.monotonic() + 60
    while active_controller(zk) is None:
        assert time.monotonic() < deadline, "no controller elected"
        time.sleep(0.1)
