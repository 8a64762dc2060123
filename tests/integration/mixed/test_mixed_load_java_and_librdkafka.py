"""Two Apache Kafka 3.9 brokers (1, 2) and one odradek broker (3) under load from Kafka's Java clients
and librdkafka at once (issue #27): in each library an idempotent acks=all producer, a transactional
producer (every third transaction aborted on purpose) and a read_committed consumer in a group
(tests/support/mixed_load.py). The leader of the most partitions of each kind is SIGKILLed and
restarted, then each kind is stopped in a controlled way (SIGTERM, its exit awaited) and restarted,
every client carrying on meanwhile. After each: every acknowledged idempotent record once and in order,
every committed transactional record once and no aborted one, what a group read still where it read it,
committed offsets never going back, and every replica alike. Topics at RF=3 with min.insync.replicas=2,
the internal topics at RF=3; `make mixed-long` repeats each disruption ODRADEK_MIXED_KILL_ROUNDS times.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterator

import pytest

from tests.support.interop import wait_until
from tests.support.mixed_clients import elect_preferred_leaders
from tests.support.mixed_cluster import PATIENCE_S, Kind, MixedCluster, running_mixed_cluster
from tests.support.mixed_load import LoadIds, MixedLoad, read_by_offset
from tests.support.zookeeper import ZooKeeperServer

pytestmark = pytest.mark.timeout(900)

KAFKA_CONTROLLER = 1
PARTITIONS = 3
#: Preferred leaders 1, 2, 3: a leader of each kind, followers of both.
ASSIGNMENT = [[1, 2, 3], [2, 3, 1], [3, 1, 2]]
INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state")
INTERNAL_PARTITIONS = 3
ROUNDS = int(os.environ.get("ODRADEK_MIXED_KILL_ROUNDS", "1"))
#: ODRADEK_MIXED_REFERENCE=kafka runs the same schedule on three Kafka 3.9 brokers, to tell what the
#: clients or Kafka itself do from what odradek does (docs/testing.md).
KINDS = {1: Kind.KAFKA, 2: Kind.KAFKA, 3: Kind.ODRADEK}
if os.environ.get("ODRADEK_MIXED_REFERENCE") == "kafka":
    KINDS[3] = Kind.KAFKA
#: Whose busiest leader is disrupted, in turn: odradek's broker, then one of Kafka's.
VICTIMS = ([3], [1, 2])
#: Records every client gets further between two steps of a disruption.
STEP = 50


@pytest.fixture(scope="module")
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[MixedCluster]:
    with running_mixed_cluster(tmp_path_factory, zookeeper_server, KINDS, KAFKA_CONTROLLER) as cluster:
        yield cluster


def create_topics(cluster: MixedCluster, *topics: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    new = [
        NewTopic(t, PARTITIONS, replica_assignment=ASSIGNMENT, config={"min.insync.replicas": "2"})
        for t in topics
    ]
    for future in admin.create_topics(new).values():
        future.result(60)
    for topic in topics:
        cluster.wait_in_sync(topic, PARTITIONS)


def busiest_leader(cluster: MixedCluster, among: list[int], topics: tuple[str, ...]) -> int:
    """The broker of `among` leading the most partitions of `topics` (on a tie, one not controller)."""
    led = Counter(v.leader for t in topics for v in cluster.wait_in_sync(t, PARTITIONS).values())
    controller = cluster.controller()
    return max(among, key=lambda n: (led[n], n != controller, n))


def restore(cluster: MixedCluster, node: int, topics: tuple[str, ...]) -> None:
    """Broker `node` started again, back in every ISR and leading what it prefers to lead."""
    cluster.start_broker(node)
    cluster.wait_registered()
    for topic in topics:
        cluster.wait_in_sync(topic, PARTITIONS)
        elect_preferred_leaders(cluster, topic, PARTITIONS)
    for internal in INTERNAL_TOPICS:
        cluster.wait_in_sync(internal, INTERNAL_PARTITIONS)
        elect_preferred_leaders(cluster, internal, INTERNAL_PARTITIONS)


def run_disruptions(
    cluster: MixedCluster, tmp_path_factory: pytest.TempPathFactory, name: str, disrupt: Callable[[int], None]
) -> None:
    """Both libraries' load on two new topics while the busiest leader of odradek's kind, then of
    Kafka's, is disrupted (`disrupt`) and restored, ROUNDS times; then every check."""
    topics = (f"{name}-idempotent", f"{name}-transactional")
    create_topics(cluster, *topics)
    ids = LoadIds(f"{name}-java-txn", f"{name}-rdkafka-txn", f"{name}-java-group", f"{name}-rdkafka-group")
    load = MixedLoad.start(cluster, tmp_path_factory.mktemp(name), topics, PARTITIONS, ids)
    try:
        load.wait_progress(STEP, "at the start")
        for _ in range(ROUNDS):
            for among in VICTIMS:
                victim = busiest_leader(cluster, among, topics)
                kind = cluster.kinds[victim].value
                disrupt(victim)
                load.wait_progress(STEP, f"without {kind} broker {victim}")
                restore(cluster, victim, topics)
                load.wait_progress(STEP, f"with {kind} broker {victim} back")
    finally:
        outcomes = load.stop()
    print("the clients' errors (retried):", outcomes.errors())
    outcomes.check(*(read_by_offset(cluster.bootstrap(), t, PARTITIONS) for t in topics))
    for topic in topics:
        cluster.wait_replicas_agree(topic, PARTITIONS)


def test_java_and_librdkafka_loads_lose_nothing_when_the_busiest_leader_of_each_kind_is_sigkilled(
    cluster: MixedCluster, tmp_path_factory: pytest.TempPathFactory
) -> None:
    def crash(node: int) -> None:
        cluster.kill(node)
        # its partitions move once its ZooKeeper session expires; Kafka's broker will not start again
        # while its old registration is there (NodeExists), so both kinds wait it out
        wait_until(lambda: node not in cluster.registered(), PATIENCE_S, f"broker {node}'s session gone", 0.2)

    run_disruptions(cluster, tmp_path_factory, "killed", crash)


def test_java_and_librdkafka_loads_lose_nothing_when_each_kind_shuts_down_in_a_controlled_way(
    cluster: MixedCluster, tmp_path_factory: pytest.TempPathFactory
) -> None:
    def controlled_shutdown(node: int) -> None:
        cluster.stop_broker(node)  # SIGTERM; returns once the broker exited

    run_disruptions(cluster, tmp_path_factory, "stopped", controlled_shutdown)
