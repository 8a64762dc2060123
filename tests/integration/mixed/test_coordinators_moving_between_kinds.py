"""Group and transaction coordinators moving between Apache Kafka 3.9 and odradek while groups consume
and transactional producers commit (issue #27), on one Kafka broker (1) and two odradek brokers (2, 3).

The transactional ids and groups of both libraries' load (tests/support/mixed_load.py) are picked so
that Kafka's broker coordinates them all. Then, the load running throughout: Kafka's broker is SIGKILLed
(the coordinators go to odradek), restarted; each odradek coordinator is SIGKILLed (they come back to
Kafka's broker, the next in their partitions' ISR; stopped in a controlled way instead every other round
of `make mixed-long`), restarted; Kafka's broker is
stopped in a controlled way (to odradek again), restarted, and a preferred election of both internal
topics gives it its coordinators back. After each move every client must get further, and at the end the
checks of mixed_load hold (nothing acknowledged or committed lost or duplicated, no aborted record read,
what a group read still there, committed offsets never back) and every replica is alike.
"""

from __future__ import annotations

import os

import pytest

from tests.support.interop import wait_until
from tests.support.mixed_clients import (
    GROUP_KEY,
    TRANSACTION_KEY,
    coordinator_of,
    elect_preferred_leaders,
    group_id_coordinated_by,
    transactional_id_coordinated_by,
)
from tests.support.mixed_cluster import PATIENCE_S, Kind, MixedCluster
from tests.support.mixed_load import LoadIds, MixedLoad, read_by_offset

pytestmark = pytest.mark.timeout(900)

KAFKA = 1
PARTITIONS = 3
ASSIGNMENT = [[1, 2, 3], [2, 3, 1], [3, 1, 2]]
TOPICS = ("coordinated-idempotent", "coordinated-transactional")
INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state")
INTERNAL_PARTITIONS = 3
ROUNDS = int(os.environ.get("ODRADEK_MIXED_KILL_ROUNDS", "1"))
STEP = 50


@pytest.fixture(scope="module")
def cluster(one_kafka_two_odradek: MixedCluster) -> MixedCluster:
    return one_kafka_two_odradek


def coordinators(cluster: MixedCluster, ids: LoadIds) -> dict[str, int]:
    """Each transactional id's and group's coordinator, as the first running broker names it."""
    asked = cluster.running()[0]
    keys = {
        ids.java_transactional_id: TRANSACTION_KEY,
        ids.rdkafka_transactional_id: TRANSACTION_KEY,
        ids.java_group: GROUP_KEY,
        ids.rdkafka_group: GROUP_KEY,
    }
    return {key: coordinator_of(cluster, asked, key, key_type) for key, key_type in keys.items()}


def wait_coordinated_by(cluster: MixedCluster, ids: LoadIds, nodes: set[int]) -> dict[str, int]:
    """Until every coordinator of `ids` is one of `nodes`; returns them."""
    seen: list[dict[str, int]] = []

    def there() -> bool:
        seen.append(coordinators(cluster, ids))
        return set(seen[-1].values()) <= nodes

    try:
        wait_until(there, PATIENCE_S, f"coordinators on {sorted(nodes)}", 0.3)
    except AssertionError as late:
        raise AssertionError(f"{late}: {seen[-1:]}") from None
    return seen[-1]


def crash(cluster: MixedCluster, node: int) -> None:
    """SIGKILL, then until its ZooKeeper session is gone (its partitions move then; Kafka's broker will
    not start again while its old registration is there)."""
    cluster.kill(node)
    wait_until(lambda: node not in cluster.registered(), PATIENCE_S, f"broker {node}'s session gone", 0.2)


def back_in_sync(cluster: MixedCluster, node: int) -> None:
    cluster.start_broker(node)
    cluster.wait_registered()
    for topic in TOPICS:
        cluster.wait_in_sync(topic, PARTITIONS)
    for internal in INTERNAL_TOPICS:
        cluster.wait_in_sync(internal, INTERNAL_PARTITIONS)


def test_group_and_transaction_coordinators_move_between_kinds_while_groups_consume_and_producers_commit(
    cluster: MixedCluster, tmp_path_factory: pytest.TempPathFactory
) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    created = admin.create_topics(
        [
            NewTopic(t, PARTITIONS, replica_assignment=ASSIGNMENT, config={"min.insync.replicas": "2"})
            for t in TOPICS
        ]
    )
    for future in created.values():
        future.result(60)
    # the internal topics made (a coordinator asked for), each partition led by its preferred replica
    transactional_id_coordinated_by(cluster, KAFKA, "warm-up")
    group_id_coordinated_by(cluster, KAFKA, "warm-up")
    for internal in INTERNAL_TOPICS:
        cluster.wait_in_sync(internal, INTERNAL_PARTITIONS)
        elect_preferred_leaders(cluster, internal, INTERNAL_PARTITIONS)
    ids = LoadIds(
        transactional_id_coordinated_by(cluster, KAFKA, "java-txn"),
        transactional_id_coordinated_by(cluster, KAFKA, "rdkafka-txn"),
        group_id_coordinated_by(cluster, KAFKA, "java-group"),
        group_id_coordinated_by(cluster, KAFKA, "rdkafka-group"),
    )
    odradek = set(cluster.of_kind(Kind.ODRADEK))
    load = MixedLoad.start(cluster, tmp_path_factory.mktemp("coordinated"), TOPICS, PARTITIONS, ids)
    try:
        load.wait_progress(STEP, "coordinated by Kafka")
        for round in range(ROUNDS):
            # Kafka -> odradek: the Kafka coordinator crashes
            crash(cluster, KAFKA)
            moved = wait_coordinated_by(cluster, ids, odradek)
            load.wait_progress(STEP, f"coordinated by odradek {moved} after Kafka's SIGKILL")
            back_in_sync(cluster, KAFKA)
            # odradek -> Kafka: each odradek coordinator crashes (a controlled shutdown every other round)
            for node in sorted(set(moved.values())):
                if round % 2 == 0:
                    crash(cluster, node)
                else:
                    cluster.stop_broker(node)
                load.wait_progress(STEP, f"without odradek {node}")
                back_in_sync(cluster, node)
            wait_coordinated_by(cluster, ids, {KAFKA})
            load.wait_progress(STEP, "coordinated by Kafka again after odradek's coordinators went")
            # Kafka -> odradek: a controlled shutdown; odradek -> Kafka: a preferred election
            cluster.stop_broker(KAFKA)
            moved = wait_coordinated_by(cluster, ids, odradek)
            load.wait_progress(STEP, f"coordinated by odradek {moved} after Kafka's controlled shutdown")
            back_in_sync(cluster, KAFKA)
            for internal in INTERNAL_TOPICS:
                elect_preferred_leaders(cluster, internal, INTERNAL_PARTITIONS)
            wait_coordinated_by(cluster, ids, {KAFKA})
            load.wait_progress(STEP, "coordinated by Kafka again after a preferred election")
    finally:
        outcomes = load.stop()
    print("the clients' errors (retried):", outcomes.errors())
    outcomes.check(*(read_by_offset(cluster.bootstrap(), t, PARTITIONS) for t in TOPICS))
    for topic in TOPICS:
        cluster.wait_replicas_agree(topic, PARTITIONS)
