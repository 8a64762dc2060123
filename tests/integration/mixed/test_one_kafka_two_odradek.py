"""One Apache Kafka 3.9 broker (1) and two odradek brokers (2, 3) on one ZooKeeper (issue #27).

Broker 1 starts first and is controller; a topic at RF=3 has a leader of each kind. Then the Kafka
controller is SIGKILLed: an odradek broker takes over, and the restarted Kafka broker must get its
producer ids (AllocateProducerIds) and its transactions' partitions from it. The tests run in order on
one cluster.
"""

from __future__ import annotations

import pytest

from tests.support.mixed_clients import (
    idempotent_producer,
    produce_acknowledged,
    producer_id_from,
    transactional_id_coordinated_by,
)
from tests.support.mixed_cluster import Kind, MixedCluster
from tests.support.txn_cluster import commit_abort_commit, expected_after_rounds
from tests.support.txn_reader import read_committed_values

pytestmark = pytest.mark.timeout(600)

KAFKA = 1
TOPIC = "one-kafka-two-odradek"
PARTITIONS = 3
#: Preferred leaders 1, 2, 3: a leader of each kind, followers of both.
ASSIGNMENT = [[1, 2, 3], [2, 3, 1], [3, 1, 2]]
RECORDS = 300


@pytest.fixture(scope="module")
def cluster(one_kafka_two_odradek: MixedCluster) -> MixedCluster:
    return one_kafka_two_odradek


def test_a_topic_made_through_kafka_is_replicated_alike_on_both_kinds(cluster: MixedCluster) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap(KAFKA)})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, replica_assignment=ASSIGNMENT)])[TOPIC].result(60)
    views = cluster.wait_in_sync(TOPIC, PARTITIONS)
    assert {p: v.leader for p, v in views.items()} == {0: 1, 1: 2, 2: 3}
    producer = idempotent_producer(cluster.bootstrap())
    acknowledged = produce_acknowledged(producer, TOPIC, "first", RECORDS, PARTITIONS)
    assert acknowledged.errors == []
    high_watermarks = cluster.wait_replicas_agree(TOPIC, PARTITIONS)
    assert high_watermarks == {p: RECORDS // PARTITIONS for p in range(PARTITIONS)}


def test_kafka_broker_gets_producer_ids_from_an_odradek_controller(cluster: MixedCluster) -> None:
    assert cluster.controller() == KAFKA
    cluster.kill(KAFKA)
    odradek_controller = cluster.wait_controller(cluster.of_kind(Kind.ODRADEK))
    cluster.start_broker(KAFKA)
    cluster.wait_registered()
    assert cluster.controller() == odradek_controller
    first = producer_id_from(cluster, KAFKA)
    assert producer_id_from(cluster, odradek_controller) != first


def test_transactions_coordinated_by_kafka_under_an_odradek_controller(cluster: MixedCluster) -> None:
    from confluent_kafka import Producer

    cluster.wait_in_sync(TOPIC, PARTITIONS)
    transactional_id = transactional_id_coordinated_by(cluster, KAFKA, "kafka-coordinated")
    producer = Producer({"bootstrap.servers": cluster.bootstrap(), "transactional.id": transactional_id})
    producer.init_transactions(60)
    topic = f"{TOPIC}-txn"
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    admin.create_topics([NewTopic(topic, PARTITIONS, replica_assignment=ASSIGNMENT)])[topic].result(60)
    cluster.wait_in_sync(topic, PARTITIONS)
    commit_abort_commit(producer, topic, PARTITIONS)
    assert read_committed_values(cluster.bootstrap(), topic, PARTITIONS) == expected_after_rounds(PARTITIONS)
