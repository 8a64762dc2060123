"""A throttled reassignment, as `kafka-reassign-partitions --throttle` sets it up, on a real ZooKeeper and
three broker processes: the topic's leader.replication.throttled.replicas names the partition's current
replica, its follower.replication.throttled.replicas the replica being added, and every broker's
leader/follower.replication.throttled.rate is set (dynamic, per broker, in /config/brokers/<id>). The new
replica's catch-up of N bytes at rate R cannot finish in less than about N/R (asserted: not under half
of it, generous slack for the burst before the rate is over the bound), while a partition of the same
leader moved at the same time without throttled replicas catches up first. Both then hold the same
records as their leader."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek.protocol.messages.alter_partition_reassignments import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    ReassignablePartition,
    ReassignableTopic,
)
from odradek.protocol.messages.describe_configs import DescribeConfigsRequest, DescribeConfigsResource
from odradek.protocol.messages.incremental_alter_configs import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from tests.integration.cluster.test_three_brokers import BROKER_IDS, Cluster, running_cluster
from tests.support.interop import wait_until
from tests.support.raw_client import RawClient
from tests.support.requirements import require_module
from tests.support.zookeeper import ZooKeeperServer

TOPIC = "throttled-move"
TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4
SET = 0
#: Bytes to replicate per partition, and the throttle: N / R = 8 s.
RECORD_BYTES = 8 * 1024
RECORDS = 512
N_BYTES = RECORD_BYTES * RECORDS
RATE = N_BYTES // 8
RATES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")


@pytest.fixture(scope="module")
def cluster(zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(zookeeper_server, tmp_path_factory.mktemp("throttle")) as made:
        yield made


def test_a_throttled_catch_up_is_bounded_by_the_rate_and_an_unthrottled_one_is_not_slowed(
    cluster: Cluster,
) -> None:
    _create_on_broker_1(cluster)
    _produce(cluster)
    _throttle(cluster)
    started = time.monotonic()
    _reassign(cluster, {0: [1, 2], 1: [1, 3]})
    in_sync_at: dict[int, float] = {}

    def caught_up() -> bool:
        isr = _isrs(cluster)
        for partition, joining in ((0, 2), (1, 3)):
            if partition not in in_sync_at and joining in isr.get(partition, []):
                in_sync_at[partition] = time.monotonic() - started
        return len(in_sync_at) == 2

    wait_until(caught_up, 120, "both new replicas in the ISR", interval=0.05)
    throttled, unthrottled = in_sync_at[0], in_sync_at[1]
    assert throttled >= 0.5 * N_BYTES / RATE, in_sync_at
    assert unthrottled < throttled, in_sync_at
    for partition, replica in ((0, 2), (1, 3)):
        leader_log = cluster.brokers[1].data_dir / f"{TOPIC}-{partition}"
        replica_log = cluster.brokers[replica].data_dir / f"{TOPIC}-{partition}"
        wait_until(
            lambda leader=leader_log, follower=replica_log: (
                _segment_bytes(follower) == _segment_bytes(leader)
            ),
            30,
            f"{TOPIC}-{partition} on broker {replica} equal to its leader's",
            interval=0.1,
        )


def _create_on_broker_1(cluster: Cluster) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap(1), request_timeout_ms=30_000)
    try:
        new = NewTopic(TOPIC, -1, -1, replica_assignments={0: [1], 1: [1]})
        admin.create_topics([new], timeout_ms=30_000)
    finally:
        admin.close()
    wait_until(lambda: all(_has_leaders(cluster, node) for node in BROKER_IDS), 60, "leaders", interval=0.1)


def _has_leaders(cluster: Cluster, node: int) -> bool:
    try:
        return cluster.leaders(TOPIC, node) == {0: 1, 1: 1}
    except Exception:
        return False


def _produce(cluster: Cluster) -> None:
    confluent = require_module("confluent_kafka")
    producer = confluent.Producer(
        {"bootstrap.servers": cluster.bootstrap(1), "acks": "1", "compression.type": "none"}
    )
    for partition in (0, 1):
        for _ in range(RECORDS):
            producer.produce(TOPIC, os.urandom(RECORD_BYTES), partition=partition)
            producer.poll(0)
    assert producer.flush(60) == 0


def _throttle(cluster: Cluster) -> None:
    """As kafka-reassign-partitions --throttle does for moving partition 0 from [1] to [1, 2]."""
    topic_configs = {
        "leader.replication.throttled.replicas": "0:1",
        "follower.replication.throttled.replicas": "0:2",
    }
    _alter(cluster, 1, TOPIC_RESOURCE, TOPIC, topic_configs)
    for node in BROKER_IDS:
        _alter(cluster, node, BROKER_RESOURCE, str(node), dict.fromkeys(RATES, str(RATE)))
    # every broker has applied its rates (the /config/changes notification) and the topic's lists
    wait_until(
        lambda: (
            all(
                _described(cluster, node, BROKER_RESOURCE, str(node), name) == str(RATE)
                for node in BROKER_IDS
                for name in RATES
            )
            and all(
                _described(cluster, node, TOPIC_RESOURCE, TOPIC, name) == value
                for node in BROKER_IDS
                for name, value in topic_configs.items()
            )
        ),
        30,
        "the throttles on every broker",
        interval=0.1,
    )


def _alter(cluster: Cluster, node: int, resource_type: int, name: str, configs: dict[str, str]) -> None:
    broker = cluster.brokers[node]
    request = IncrementalAlterConfigsRequest(
        resources=[
            AlterConfigsResource(
                resource_type=resource_type,
                resource_name=name,
                configs=[AlterableConfig(name=k, config_operation=SET, value=v) for k, v in configs.items()],
            )
        ],
        validate_only=False,
    )
    with RawClient(broker.port, timeout=10, host=broker.host) as client:
        (answer,) = client.request(request, 1).responses
    assert answer.error_code == 0, answer


def _described(cluster: Cluster, node: int, resource_type: int, name: str, config: str) -> str | None:
    broker = cluster.brokers[node]
    request = DescribeConfigsRequest(
        resources=[
            DescribeConfigsResource(
                resource_type=resource_type, resource_name=name, configuration_keys=[config]
            )
        ]
    )
    with RawClient(broker.port, timeout=5, host=broker.host) as client:
        (result,) = client.request(request, 1).results
    return next((c.value for c in result.configs if c.name == config), None)


def _reassign(cluster: Cluster, targets: dict[int, list[int]]) -> None:
    controller = cluster.brokers[cluster.controller(asked=1)]
    request = AlterPartitionReassignmentsRequest(
        topics=[
            ReassignableTopic(
                name=TOPIC,
                partitions=[
                    ReassignablePartition(partition_index=p, replicas=replicas)
                    for p, replicas in targets.items()
                ],
            )
        ]
    )
    with RawClient(controller.port, timeout=30, host=controller.host) as client:
        answer: AlterPartitionReassignmentsResponse = client.request(request, 0)
    assert answer.error_code == 0, answer
    assert all(p.error_code == 0 for t in answer.responses for p in t.partitions), answer


def _isrs(cluster: Cluster) -> dict[int, list[int]]:
    (described,) = cluster.metadata(1, [TOPIC]).topics
    return {p.partition_index: list(p.isr_nodes) for p in described.partitions}


def _segment_bytes(directory: Path) -> bytes | None:
    """The partition's records as its segment files hold them; None while it has no log here."""
    if not directory.is_dir():
        return None
    return b"".join(p.read_bytes() for p in sorted(directory.glob("*.log")))
