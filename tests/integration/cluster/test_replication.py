"""Replication, end to end: a real ZooKeeper, three broker processes, RF=3, min.insync.replicas=2,
driven by kafka-python and confluent-kafka.

Leaders change the ISR through AlterPartition to the controller. One cluster for the module; the
tests that stop or kill brokers leave three live brokers behind them. Followers are paused with
SIGSTOP (a broker that cannot fetch), for less than the ZooKeeper session, so that only the leader's
own ISR decisions act on them.
"""

from __future__ import annotations

import json
import os
import signal
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from odradek.protocol.messages.list_offsets import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopic,
)
from odradek.protocol.messages.metadata import MetadataRequest, MetadataResponse
from tests.support.broker_process import BrokerProcess
from tests.support.interop import consume_partition_zero, produce_acknowledged, wait_until
from tests.support.raw_client import RawClient
from tests.support.requirements import require_module
from tests.support.zookeeper import ZooKeeperServer

BROKER_IDS = (1, 2, 3)
#: Long enough that a paused follower is dropped by its leader (replica.lag.time.max.ms) well before
#: ZooKeeper would expire its session and the controller act.
SESSION_TIMEOUT_MS = 20_000
LAG_TIME_MAX_MS = 3000
#: Below the lag time: a commit whose followers are paused times out before they leave the ISR.
COMMIT_TIMEOUT_MS = 1500
#: Bounds of the waits on a loaded machine: the checks pass as soon as they hold.
PATIENCE_S = 60


class Cluster:
    def __init__(self, base: Path, connect: str, chroot: str) -> None:
        self.chroot = chroot
        self.brokers = {
            node: BrokerProcess(
                base / f"broker-{node}",
                {
                    "node.id": str(node),
                    "zookeeper.connect": connect,
                    "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
                    "replica.lag.time.max.ms": str(LAG_TIME_MAX_MS),
                    "replica.fetch.wait.max.ms": "200",
                    "replica.fetch.backoff.ms": "200",
                    "default.replication.factor": "3",
                    "min.insync.replicas": "2",
                    "offsets.topic.replication.factor": "3",
                    "offsets.topic.num.partitions": "3",
                    "num.partitions": "1",
                    "controlled.shutdown.retry.backoff.ms": "500",
                    "group.initial.rebalance.delay.ms": "0",
                    "auto.leader.rebalance.enable": "false",
                    "unclean.leader.election.enable": "false",
                    "offsets.commit.timeout.ms": str(COMMIT_TIMEOUT_MS),
                },
                host=f"127.0.0.{node + 1}",
            )
            for node in BROKER_IDS
        }

    def bootstrap(self, *nodes: int) -> str:
        nodes = nodes or tuple(self.running())
        return ",".join(self.brokers[n].bootstrap for n in nodes)

    def running(self) -> list[int]:
        return [n for n, b in self.brokers.items() if b.process is not None and b.process.poll() is None]

    def pause(self, node: int) -> None:
        process = self.brokers[node].process
        assert process is not None
        os.kill(process.pid, signal.SIGSTOP)

    def resume(self, node: int) -> None:
        process = self.brokers[node].process
        if process is not None:
            os.kill(process.pid, signal.SIGCONT)

    def partition_dir(self, node: int, topic: str, partition: int = 0) -> Path:
        return self.brokers[node].data_dir / f"{topic}-{partition}"

    def segment_bytes(self, node: int, topic: str) -> dict[str, bytes]:
        directory = self.partition_dir(node, topic)
        return {p.name: p.read_bytes() for p in sorted(directory.glob("*.log"))}

    def create(self, topic: str, led_by_controller: bool = True) -> None:
        """One partition, three replicas, led by the controller (the followers a test pauses are then
        never the controller, which must stay up to write their ISR changes), or else followed by it
        (pausing the followers then freezes the ISR)."""
        require_module("confluent_kafka")
        from confluent_kafka.admin import AdminClient, NewTopic

        controller = self.controller()
        others = [n for n in BROKER_IDS if n != controller]
        replicas = [controller, *others] if led_by_controller else [*others, controller]
        admin = AdminClient({"bootstrap.servers": self.bootstrap()})
        futures = admin.create_topics(
            [NewTopic(topic, 1, replica_assignment=[replicas])], operation_timeout=15
        )
        futures[topic].result(30)
        wait_until(lambda: self.state(topic)["leader"] >= 0, PATIENCE_S, f"a leader for {topic}", 0.1)
        # CreateTopics answers once the broker asked knows the leader; a client asking another broker
        # first could find no topic, and kafka-python's group leader then assigns nothing until its next
        # metadata refresh (metadata.max.age.ms, 5 minutes)
        wait_until(lambda: self.known_everywhere(topic), PATIENCE_S, f"{topic} in all metadata", 0.1)

    def known_everywhere(self, topic: str) -> bool:
        from odradek.protocol.messages.metadata import MetadataRequestTopic

        request = MetadataRequest(topics=[MetadataRequestTopic(name=topic)], allow_auto_topic_creation=False)
        for node in self.running():
            broker = self.brokers[node]
            with RawClient(broker.port, timeout=5, host=broker.host) as client:
                response: MetadataResponse = client.request(request, 12)
            [found] = response.topics
            if found.error_code != 0 or any(p.leader_id < 0 for p in found.partitions):
                return False
        return True

    def brokers_known_everywhere(self) -> bool:
        """Each running broker's Metadata lists every running broker: a broker validates a manual
        replica assignment against the brokers its metadata holds, which trails ZooKeeper's."""
        running = self.running()
        for node in running:
            response = self._cluster_metadata(node)
            if response is None or sorted(b.node_id for b in response.brokers) != sorted(running):
                return False
        return True

    def controller(self) -> int:
        """The active controller, as a running broker's Metadata names it."""
        found = -1

        def known() -> bool:
            nonlocal found
            response = self._cluster_metadata(self.running()[0])
            if response is None:
                return False
            found = int(response.controller_id)
            return found in self.running()

        wait_until(known, PATIENCE_S, "an active controller", 0.1)
        return found

    def _cluster_metadata(self, node: int) -> MetadataResponse | None:
        """The broker's Metadata (no topics); None while it does not answer."""
        broker = self.brokers[node]
        try:
            with RawClient(broker.port, timeout=5, host=broker.host) as client:
                response: MetadataResponse = client.request(
                    MetadataRequest(topics=[], allow_auto_topic_creation=False), 12
                )
        except OSError:
            return None
        return response


@pytest.fixture(scope="module")
def zk_view(zookeeper_server: ZooKeeperServer) -> Iterator[KazooClient]:
    client = KazooClient(hosts=zookeeper_server.connect_string)
    client.start(10)
    yield client
    client.stop()
    client.close()


@pytest.fixture(scope="module")
def cluster(
    zookeeper_server: ZooKeeperServer, zk_view: KazooClient, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    require_module("kafka")
    require_module("confluent_kafka")
    chroot = f"/odradek-{uuid.uuid4().hex[:8]}"
    made = Cluster(tmp_path_factory.mktemp("replication"), zookeeper_server.connect_string + chroot, chroot)

    def state(topic: str, partition: int = 0) -> dict[str, Any]:
        """The partition's state znode as it is in ZooKeeper (what the controller elects from)."""
        path = f"{chroot}/brokers/topics/{topic}/partitions/{partition}/state"
        if not zk_view.exists(path):
            return {"leader": -1, "isr": [], "leader_epoch": -1}
        data, _ = zk_view.get(path)
        parsed: dict[str, Any] = json.loads(data)
        return parsed

    made.state = state  # type: ignore[attr-defined]
    try:
        for broker in made.brokers.values():
            broker.start()
        wait_until(
            lambda: (
                len(zk_view.get_children(f"{chroot}/brokers/ids")) == 3
                if zk_view.exists(f"{chroot}/brokers/ids")
                else False
            ),
            PATIENCE_S,
            "three registered brokers",
            0.1,
        )
        wait_until(made.brokers_known_everywhere, PATIENCE_S, "every broker in every broker's metadata", 0.1)
        yield made
    finally:
        for broker in made.brokers.values():
            made.resume(next(n for n, b in made.brokers.items() if b is broker))
            broker.stop()


# ----- helpers -----------------------------------------------------------------------------------------


def _state(cluster: Cluster, topic: str) -> dict[str, Any]:
    found: dict[str, Any] = cluster.state(topic)  # type: ignore[attr-defined]
    return found


def _produce_all(cluster: Cluster, topic: str, values: list[bytes], **settings: Any) -> list[int]:
    return produce_acknowledged(cluster.bootstrap(), topic, values, PATIENCE_S, **settings)


def _consume_all(cluster: Cluster, topic: str, expected: int) -> list[bytes]:
    return consume_partition_zero(cluster.bootstrap(), topic, expected, PATIENCE_S)


def _latest_offset(cluster: Cluster, node: int, topic: str) -> int:
    """ListOffsets LATEST as a consumer sees it: the high watermark."""
    broker = cluster.brokers[node]
    with RawClient(broker.port, timeout=5, host=broker.host) as client:
        request = ListOffsetsRequest(
            replica_id=-1,
            isolation_level=0,
            topics=[
                ListOffsetsTopic(
                    name=topic, partitions=[ListOffsetsPartition(partition_index=0, timestamp=-1)]
                )
            ],
        )
        response: ListOffsetsResponse = client.request(request, 7)
    (partition,) = response.topics[0].partitions
    assert partition.error_code == 0, partition.error_code
    return int(partition.offset)


def _same_logs(cluster: Cluster, topic: str) -> Callable[[], bool]:
    def check() -> bool:
        logs = [cluster.segment_bytes(node, topic) for node in cluster.running()]
        return all(log == logs[0] for log in logs) and bool(logs[0])

    return check


def _followers(cluster: Cluster, topic: str) -> list[int]:
    leader = int(_state(cluster, topic)["leader"])
    return [n for n in BROKER_IDS if n != leader]


# ----- the tests, in order -----------------------------------------------------------------------------


def test_acks_all_records_land_byte_identical_on_every_replica(cluster: Cluster) -> None:
    cluster.create("copies")
    values = [f"copy-{i}".encode() for i in range(300)]
    offsets = _produce_all(cluster, "copies", values, **{"linger.ms": 5})
    assert sorted(offsets) == list(range(300))
    wait_until(_same_logs(cluster, "copies"), PATIENCE_S, "the same segment bytes on the three brokers", 0.2)
    assert sorted(_state(cluster, "copies")["isr"]) == [1, 2, 3]
    assert _consume_all(cluster, "copies", 300) == values


def test_batches_the_leader_recompressed_are_what_every_replica_stores(cluster: Cluster) -> None:
    """compression.type other than producer: the leader rewrites a batch in the topic's codec as it
    appends it, and followers copy the leader's bytes (they never rewrite)."""
    require_module("confluent_kafka")
    from confluent_kafka.admin import AdminClient, NewTopic

    from odradek.protocol.records import Compression, iter_record_batches

    topic = "recompressed-copies"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    created = admin.create_topics(
        [NewTopic(topic, 1, replica_assignment=[list(BROKER_IDS)], config={"compression.type": "zstd"})],
        operation_timeout=15,
    )
    created[topic].result(30)
    wait_until(lambda: cluster.known_everywhere(topic), PATIENCE_S, f"{topic} in all metadata", 0.1)
    values = [f"recompressed-{i} ".encode() * 20 for i in range(300)]
    offsets = _produce_all(cluster, topic, values, **{"linger.ms": 5, "compression.type": "lz4"})
    assert sorted(offsets) == list(range(300))
    wait_until(_same_logs(cluster, topic), PATIENCE_S, "the same segment bytes on the three brokers", 0.2)
    stored = b"".join(cluster.segment_bytes(1, topic).values())
    assert {b.compression for b in iter_record_batches(stored)} == {Compression.ZSTD}
    assert _consume_all(cluster, topic, 300) == values


def test_consumers_see_a_record_only_once_the_followers_have_it(cluster: Cluster) -> None:
    import confluent_kafka

    cluster.create("visible")
    leader = int(_state(cluster, "visible")["leader"])
    _produce_all(cluster, "visible", [b"first"])
    wait_until(lambda: _latest_offset(cluster, leader, "visible") == 1, PATIENCE_S, "the HW at 1", 0.1)
    followers = _followers(cluster, "visible")
    for node in followers:
        cluster.pause(node)
    try:
        producer = confluent_kafka.Producer(
            {"bootstrap.servers": cluster.brokers[leader].bootstrap, "acks": 1}
        )
        producer.produce("visible", b"second", partition=0)
        assert producer.flush(PATIENCE_S) == 0
        time.sleep(1.0)  # the leader has it; nobody else does
        assert _latest_offset(cluster, leader, "visible") == 1
    finally:
        for node in followers:
            cluster.resume(node)
    wait_until(lambda: _latest_offset(cluster, leader, "visible") == 2, PATIENCE_S, "the HW at 2", 0.1)


def test_a_paused_follower_leaves_the_isr_and_acks_all_goes_on_then_it_rejoins(cluster: Cluster) -> None:
    cluster.create("lagging")
    _produce_all(cluster, "lagging", [b"before"])
    wait_until(lambda: len(_state(cluster, "lagging")["isr"]) == 3, PATIENCE_S, "a full ISR", 0.1)
    follower = _followers(cluster, "lagging")[0]
    cluster.pause(follower)
    try:
        wait_until(
            lambda: follower not in _state(cluster, "lagging")["isr"],
            PATIENCE_S,
            f"broker {follower} out of the ISR",
            0.1,
        )
        offsets = _produce_all(cluster, "lagging", [b"while-paused"])
        assert offsets == [1]
    finally:
        cluster.resume(follower)
    wait_until(
        lambda: follower in _state(cluster, "lagging")["isr"], PATIENCE_S, f"broker {follower} back", 0.1
    )
    wait_until(_same_logs(cluster, "lagging"), PATIENCE_S, "the same segment bytes", 0.2)


def test_with_one_replica_in_sync_acks_all_is_refused_with_not_enough_replicas(cluster: Cluster) -> None:
    import confluent_kafka

    cluster.create("alone")
    _produce_all(cluster, "alone", [b"kept"])
    followers = _followers(cluster, "alone")
    for node in followers:
        cluster.pause(node)
    try:
        wait_until(lambda: len(_state(cluster, "alone")["isr"]) == 1, PATIENCE_S, "the leader alone", 0.1)
        producer = confluent_kafka.Producer(
            {"bootstrap.servers": cluster.bootstrap(), "acks": "all", "retries": 0, "linger.ms": 0}
        )
        outcome: list[Any] = []
        producer.produce("alone", b"refused", partition=0, on_delivery=lambda e, m: outcome.append(e))
        producer.flush(PATIENCE_S)
        assert outcome and outcome[0] is not None
        assert outcome[0].code() == confluent_kafka.KafkaError.NOT_ENOUGH_REPLICAS
    finally:
        for node in followers:
            cluster.resume(node)
    wait_until(lambda: len(_state(cluster, "alone")["isr"]) == 3, PATIENCE_S, "the ISR full again", 0.1)
    assert _consume_all(cluster, "alone", 1) == [b"kept"]


def test_the_new_leader_has_every_acknowledged_record_after_a_sigkill(cluster: Cluster) -> None:
    cluster.create("failover")
    acknowledged = [f"ack-{i}".encode() for i in range(200)]
    _produce_all(cluster, "failover", acknowledged)
    old_leader = int(_state(cluster, "failover")["leader"])
    cluster.brokers[old_leader].kill()
    try:
        wait_until(
            lambda: _state(cluster, "failover")["leader"] not in (-1, old_leader),
            PATIENCE_S,
            "a new leader",
            0.1,
        )
        more = [f"after-{i}".encode() for i in range(50)]
        _produce_all(cluster, "failover", more)
        assert _consume_all(cluster, "failover", 250) == acknowledged + more
    finally:
        cluster.brokers[old_leader].start()
    wait_until(lambda: len(_state(cluster, "failover")["isr"]) == 3, PATIENCE_S, "the ISR full again", 0.1)
    wait_until(_same_logs(cluster, "failover"), PATIENCE_S, "the same segment bytes", 0.2)


def test_a_divergent_tail_is_truncated_when_its_broker_rejoins(cluster: Cluster) -> None:
    import confluent_kafka

    # Led elsewhere than the controller: pausing the followers pauses the controller too, so the ISR
    # cannot shrink to the leader alone before it dies (a follower must be electable afterwards).
    cluster.create("diverge", led_by_controller=False)
    _produce_all(cluster, "diverge", [b"agreed-0", b"agreed-1"])
    wait_until(_same_logs(cluster, "diverge"), PATIENCE_S, "the same segment bytes", 0.2)
    old_leader = int(_state(cluster, "diverge")["leader"])
    followers = _followers(cluster, "diverge")
    for node in followers:
        cluster.pause(node)
    # A follower's fetch already waiting at the leader would still be answered with what comes next
    # (into the paused process's socket); past replica.fetch.wait.max.ms none is left waiting.
    time.sleep(1.0)
    try:
        # acks=1: the leader appends records nobody else will ever have, then dies
        producer = confluent_kafka.Producer(
            {"bootstrap.servers": cluster.brokers[old_leader].bootstrap, "acks": 1}
        )
        for i in range(5):
            producer.produce("diverge", f"lost-{i}".encode(), partition=0)
        assert producer.flush(PATIENCE_S) == 0
        cluster.brokers[old_leader].kill()
    finally:
        for node in followers:
            cluster.resume(node)
    wait_until(
        lambda: _state(cluster, "diverge")["leader"] in followers,
        PATIENCE_S,
        "a leader among the others",
        0.1,
    )
    _produce_all(cluster, "diverge", [b"new-epoch-0", b"new-epoch-1", b"new-epoch-2"])
    cluster.brokers[old_leader].start()
    wait_until(lambda: len(_state(cluster, "diverge")["isr"]) == 3, PATIENCE_S, "the old leader in sync", 0.1)
    wait_until(_same_logs(cluster, "diverge"), PATIENCE_S, "the divergent tail gone", 0.2)
    assert _consume_all(cluster, "diverge", 5) == [
        b"agreed-0",
        b"agreed-1",
        b"new-epoch-0",
        b"new-epoch-1",
        b"new-epoch-2",
    ]


def test_a_restarted_broker_gets_its_preferred_leadership_back(cluster: Cluster) -> None:
    from confluent_kafka import ElectionType, TopicPartition
    from confluent_kafka.admin import AdminClient

    cluster.create("preferred")
    _produce_all(cluster, "preferred", [b"one"])
    preferred = int(_state(cluster, "preferred")["leader"])
    cluster.brokers[preferred].kill()
    wait_until(
        lambda: _state(cluster, "preferred")["leader"] not in (-1, preferred), PATIENCE_S, "a new leader", 0.1
    )
    _produce_all(cluster, "preferred", [b"two"])
    cluster.brokers[preferred].start()
    wait_until(
        lambda: preferred in _state(cluster, "preferred")["isr"],
        PATIENCE_S,
        "the restarted broker in sync",
        0.1,
    )
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    future = admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition("preferred", 0)])
    future.result(30)
    wait_until(
        lambda: _state(cluster, "preferred")["leader"] == preferred, PATIENCE_S, "leadership back", 0.1
    )
    assert _produce_all(cluster, "preferred", [b"three"]) == [2]
    assert _consume_all(cluster, "preferred", 3) == [b"one", b"two", b"three"]


def test_committed_offsets_survive_the_loss_of_the_group_coordinator(cluster: Cluster) -> None:
    from kafka import KafkaConsumer, TopicPartition

    cluster.create("grouped")
    _produce_all(cluster, "grouped", [f"g-{i}".encode() for i in range(10)])
    consumer = KafkaConsumer(
        "grouped",
        bootstrap_servers=cluster.bootstrap(),
        group_id="survivors",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        consumer_timeout_ms=5000,
    )
    read = [next(consumer).value for _ in range(6)]
    consumer.commit()
    coordinator = consumer._coordinator.coordinator_id  # which broker to kill
    consumer.close()
    assert read == [f"g-{i}".encode() for i in range(6)]
    assert coordinator is not None
    cluster.brokers[_node_of(coordinator)].kill()
    try:
        again = KafkaConsumer(
            bootstrap_servers=cluster.bootstrap(),
            group_id="survivors",
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            consumer_timeout_ms=5000,
        )
        try:
            tp = TopicPartition("grouped", 0)
            deadline = time.monotonic() + PATIENCE_S
            committed = None
            while time.monotonic() < deadline:
                try:
                    committed = again.committed(tp)
                except Exception:
                    committed = None
                if committed is not None:
                    break
                time.sleep(0.5)
            assert committed == 6
        finally:
            again.close()
    finally:
        cluster.brokers[_node_of(coordinator)].start()


def _node_of(coordinator: object) -> int:
    """kafka-python names a group coordinator's connection `coordinator-<broker id>`."""
    return int(str(coordinator).rsplit("-", 1)[-1])


def test_an_offset_commit_waits_for_the_in_sync_replicas_of_its_offsets_partition(cluster: Cluster) -> None:
    from odradek.coordinator.partitioning import partition_for

    cluster.create("committed")
    _ensure_offsets_topic(cluster)  # made by a FindCoordinator, not by this module's earlier tests
    group = "waits-for-replicas"
    offsets_state = f"__consumer_offsets-{partition_for(group, 3)}"
    topic, partition = offsets_state.rsplit("-", 1)
    wait_until(
        lambda: len(_state_of(cluster, topic, int(partition))["isr"]) == 3, PATIENCE_S, "offsets ISR", 0.1
    )
    coordinator = int(_state_of(cluster, topic, int(partition))["leader"])
    followers = [n for n in BROKER_IDS if n != coordinator]

    def commit(offset: int) -> int:
        return _commit_raw(cluster.brokers[coordinator], group, "committed", offset)

    deadline = time.monotonic() + PATIENCE_S
    while commit(1) != 0 and time.monotonic() < deadline:  # the coordinator may still be loading
        time.sleep(0.5)
    for node in followers:
        cluster.pause(node)
    try:
        assert commit(2) == 7  # REQUEST_TIMED_OUT: not replicated within the timeout
    finally:
        for node in followers:
            cluster.resume(node)
    wait_until(lambda: commit(3) == 0, PATIENCE_S, "a replicated commit", 0.2)


def _state_of(cluster: Cluster, topic: str, partition: int) -> dict[str, Any]:
    found: dict[str, Any] = cluster.state(topic, partition)  # type: ignore[attr-defined]
    return found


def test_a_follower_stops_cleanly_while_fetching_and_catches_up_after_its_restart(cluster: Cluster) -> None:
    cluster.create("restarted")
    _produce_all(cluster, "restarted", [b"before"])
    follower = _followers(cluster, "restarted")[0]
    broker = cluster.brokers[follower]
    assert broker.stop() == 0  # SIGTERM: its fetchers end with it, nothing hangs
    assert "broker stopped" in broker.log_text()
    try:
        _produce_all(cluster, "restarted", [f"while-down-{i}".encode() for i in range(100)])
    finally:
        broker.start()
    wait_until(
        lambda: len(_state(cluster, "restarted")["isr"]) == 3, PATIENCE_S, "the follower back in sync", 0.1
    )
    wait_until(_same_logs(cluster, "restarted"), PATIENCE_S, "the same segment bytes", 0.2)


def test_an_offset_commit_answered_with_an_error_is_not_returned_by_offset_fetch(cluster: Cluster) -> None:
    from odradek.coordinator.partitioning import partition_for
    from odradek.protocol.messages.offset_fetch import (
        OffsetFetchRequest,
        OffsetFetchRequestTopic,
        OffsetFetchResponse,
    )

    cluster.create("uncommitted")
    controller = cluster.controller()
    _ensure_offsets_topic(cluster)
    # a group coordinated by the controller: its ISR can then shrink to the coordinator alone (the
    # controller writes the change) while both followers are paused
    groups = (f"fails-{i}" for i in range(1000))
    group = next(
        g
        for g in groups
        if _state_of(cluster, "__consumer_offsets", partition_for(g, 3))["leader"] == controller
    )
    partition = partition_for(group, 3)
    wait_until(
        lambda: len(_state_of(cluster, "__consumer_offsets", partition)["isr"]) == 3,
        PATIENCE_S,
        "offsets ISR",
        0.1,
    )
    coordinator = cluster.brokers[controller]

    def commit(offset: int) -> int:
        return _commit_raw(coordinator, group, "uncommitted", offset)

    def fetch() -> int:
        request = OffsetFetchRequest(
            group_id=group, topics=[OffsetFetchRequestTopic(name="uncommitted", partition_indexes=[0])]
        )
        with RawClient(coordinator.port, timeout=30, host=coordinator.host) as client:
            response: OffsetFetchResponse = client.request(request, 1)
        (answer,) = response.topics[0].partitions
        assert answer.error_code == 0, answer.error_code
        return int(answer.committed_offset)

    wait_until(lambda: commit(1) == 0, PATIENCE_S, "a first commit", 0.5)
    followers = [n for n in BROKER_IDS if n != controller]
    for node in followers:
        cluster.pause(node)
    try:
        assert commit(2) == 7  # REQUEST_TIMED_OUT: the followers do not have it
        assert fetch() == 1  # nor does the coordinator's memory: a failover now would not have it
        wait_until(
            lambda: _state_of(cluster, "__consumer_offsets", partition)["isr"] == [controller],
            PATIENCE_S,
            "the coordinator alone in the ISR",
            0.1,
        )
        # COORDINATOR_NOT_AVAILABLE: under min.insync.replicas, not appended. The coordinator learns its
        # ISR from the controller's AlterPartition answer, which may come just after ZooKeeper shows it:
        # a commit before that times out (REQUEST_TIMED_OUT, an error too, and not returned either).
        wait_until(lambda: commit(3) == 15, PATIENCE_S, "a commit refused under min.insync.replicas", 0.2)
        assert fetch() == 1
    finally:
        for node in followers:
            cluster.resume(node)
    wait_until(lambda: commit(4) == 0, PATIENCE_S, "a replicated commit", 0.2)
    assert fetch() == 4


def _commit_raw(broker: BrokerProcess, group: str, topic: str, offset: int) -> int:
    """OffsetCommit v2 of partition 0 outside any generation, sent to `broker`: its error code."""
    from odradek.protocol.messages.offset_commit import (
        OffsetCommitRequest,
        OffsetCommitRequestPartition,
        OffsetCommitRequestTopic,
        OffsetCommitResponse,
    )

    request = OffsetCommitRequest(
        group_id=group,
        generation_id_or_member_epoch=-1,
        member_id="",
        topics=[
            OffsetCommitRequestTopic(
                name=topic,
                partitions=[
                    OffsetCommitRequestPartition(
                        partition_index=0, committed_offset=offset, committed_metadata=""
                    )
                ],
            )
        ],
    )
    with RawClient(broker.port, timeout=30, host=broker.host) as client:
        response: OffsetCommitResponse = client.request(request, 2)
    return int(response.topics[0].partitions[0].error_code)


def _ensure_offsets_topic(cluster: Cluster) -> None:
    """`__consumer_offsets` with a leader for each of its three partitions (a FindCoordinator makes
    the controller create it)."""
    from odradek.protocol.messages.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse

    def created() -> bool:
        broker = cluster.brokers[cluster.running()[0]]
        with RawClient(broker.port, timeout=10, host=broker.host) as client:
            _answer: FindCoordinatorResponse = client.request(FindCoordinatorRequest(key="any"), 1)
        return all(_state_of(cluster, "__consumer_offsets", p)["leader"] >= 0 for p in range(3))

    wait_until(created, PATIENCE_S, "__consumer_offsets", 0.5)
