"""acks=all across a new leader epoch that keeps the leader: a real ZooKeeper, three broker processes.

A follower's broker dies while a produce waits for it; once its ZooKeeper session expires the controller
takes it out of the ISR with a LeaderAndIsr at a new leader epoch, the same leader. The waiting produce
is then acknowledged (the remaining in-sync follower has the record), not answered
NOT_LEADER_OR_FOLLOWER: a producer that is not idempotent would write the batch a second time on that
retriable error. `replica.lag.time.max.ms` (30 s by default) is far above the ZooKeeper session
(3 s), so it is the controller, not the leader's own ISR shrink, that moves the partition on.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.cluster.test_three_brokers import BROKER_IDS, Cluster, running_cluster
from tests.support.interop import wait_until
from tests.support.requirements import require_module
from tests.support.zookeeper import ZooKeeperServer

PATIENCE_S = 60


@pytest.fixture(scope="module")
def cluster(zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    require_module("confluent_kafka")
    with running_cluster(zookeeper_server, tmp_path_factory.mktemp("epochs"), wait_s=PATIENCE_S) as made:
        yield made


def _partition(cluster: Cluster, topic: str, asked: int) -> Any:
    (described,) = cluster.metadata(asked, [topic]).topics
    (partition,) = described.partitions
    return partition


def test_an_acks_all_produce_waiting_on_a_dead_follower_is_acknowledged_when_the_controller_drops_it(
    cluster: Cluster,
) -> None:
    import confluent_kafka
    from confluent_kafka.admin import AdminClient, NewTopic

    controller = cluster.controller(BROKER_IDS[0])
    # led by the controller (it stays up to write the ISR change), followed by the other two
    followers = [n for n in BROKER_IDS if n != controller]
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    topic = "kept-leader"
    created = admin.create_topics([NewTopic(topic, 1, replica_assignment=[[controller, *followers]])])
    created[topic].result(30)
    wait_until(
        lambda: sorted(_partition(cluster, topic, controller).isr_nodes) == sorted(BROKER_IDS),
        PATIENCE_S,
        "a full ISR",
        0.2,
    )
    epoch_before = _partition(cluster, topic, controller).leader_epoch
    dead = followers[0]
    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": cluster.brokers[controller].bootstrap,
            "acks": "all",
            "enable.idempotence": False,
            "retries": 0,  # the error, if any, reaches the application: nothing hides it
            "request.timeout.ms": 30_000,
            "message.timeout.ms": 60_000,
            "linger.ms": 0,
        }
    )
    outcome: list[Any] = []
    cluster.brokers[dead].kill()
    try:
        producer.produce(topic, b"once", partition=0, on_delivery=lambda e, m: outcome.append((e, m)))
        deadline = time.monotonic() + PATIENCE_S
        while not outcome and time.monotonic() < deadline:
            producer.poll(0.2)
        assert outcome, "no answer to the produce"
        error, message = outcome[0]
        assert error is None, error  # acknowledged, not NOT_LEADER_OR_FOLLOWER
        # written once: answered NOT_LEADER_OR_FOLLOWER (before the fix), librdkafka was seen to send
        # the batch again even with retries=0, and it landed a second time, at offset 1
        assert message.offset() == 0
        after = _partition(cluster, topic, controller)
        assert after.leader_id == controller and after.leader_epoch > epoch_before
        assert dead not in after.isr_nodes
    finally:
        cluster.brokers[dead].start()
    wait_until(
        lambda: sorted(_partition(cluster, topic, controller).isr_nodes) == sorted(BROKER_IDS),
        PATIENCE_S,
        "the ISR full again",
        0.2,
    )
