"""Partition reassignment driven by a real client (kafka-python's KafkaAdminClient, which sends
AlterPartitionReassignments and ListPartitionReassignments to the controller), on a real ZooKeeper
and three broker processes. confluent-kafka 2.16 has no reassignment calls, hence kafka-python.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.alter_partition_reassignments import (
    AlterPartitionReassignmentsRequest,
    ReassignablePartition,
    ReassignableTopic,
)
from tests.integration.cluster.test_three_brokers import BROKER_IDS, Cluster, running_cluster
from tests.support.interop import wait_until
from tests.support.raw_client import RawClient
from tests.support.zookeeper import ZooKeeperServer

TOPIC = "moving"


@pytest.fixture(scope="module")
def cluster(zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(zookeeper_server, tmp_path_factory.mktemp("reassignment")) as made:
        yield made


def _admin(cluster: Cluster, node: int) -> Any:
    from kafka.admin import KafkaAdminClient

    return KafkaAdminClient(bootstrap_servers=cluster.bootstrap(node), request_timeout_ms=30_000)


def _create(cluster: Cluster, topic: str, assignment: dict[int, list[int]]) -> None:
    from kafka.admin import NewTopic

    admin = _admin(cluster, 1)
    try:
        new = NewTopic(topic, -1, -1, replica_assignments=assignment)
        admin.create_topics([new], timeout_ms=30_000)
    finally:
        admin.close()
    wait_until(
        lambda: all(_leaders_known(cluster, topic, node, len(assignment)) for node in BROKER_IDS),
        60,
        f"leaders for {topic}",
        interval=0.1,
    )


def _leaders_known(cluster: Cluster, topic: str, node: int, partitions: int) -> bool:
    try:
        leaders = cluster.leaders(topic, node)
    except Exception:
        return False
    return len(leaders) == partitions and all(leader >= 0 for leader in leaders.values())


def _replicas(cluster: Cluster, topic: str, node: int) -> dict[int, list[int]]:
    (described,) = cluster.metadata(node, [topic]).topics
    return {p.partition_index: list(p.replica_nodes) for p in described.partitions}


@contextmanager
def _paused(cluster: Cluster, node: int) -> Iterator[None]:
    """Broker `node` stopped (SIGSTOP) for a few seconds, well inside its ZooKeeper session: a
    reassignment onto it stays in progress, since its new replica cannot fetch (with replication, an
    empty partition's new replica would catch up at once and the reassignment complete)."""
    process = cluster.brokers[node].process
    assert process is not None
    os.kill(process.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(process.pid, signal.SIGCONT)


def _target_and_bootstrap(cluster: Cluster, source: int) -> tuple[int, int]:
    """A broker to move a replica of `source` onto, and one to ask: neither is the controller, which must
    keep working while the target is paused."""
    controller = cluster.controller(asked=source)
    target = next(n for n in BROKER_IDS if n not in (source, controller))
    return target, next(n for n in BROKER_IDS if n != target)


def test_a_reassignment_is_started_listed_shown_in_metadata_and_cancelled(cluster: Cluster) -> None:
    from kafka import TopicPartition

    _create(cluster, TOPIC, {0: [1], 1: [3]})
    tp = TopicPartition(TOPIC, 0)
    target, asked = _target_and_bootstrap(cluster, 1)
    others = [n for n in BROKER_IDS if n != target]
    admin = _admin(cluster, asked)  # any bootstrap broker: the client sends these to the controller
    # the client finds the controller first (its Metadata may go to any broker: not the paused one)
    assert admin.list_partition_reassignments() == {}
    with _paused(cluster, target):
        _started_listed_shown_and_cancelled(cluster, admin, tp, target, others)
    wait_until(
        lambda: all(_replicas(cluster, TOPIC, n)[0] == [1] for n in BROKER_IDS),
        60,
        "the original replicas in every broker's metadata once the target runs again",
        interval=0.1,
    )


def _started_listed_shown_and_cancelled(
    cluster: Cluster, admin: Any, tp: Any, target: int, others: list[int]
) -> None:
    from kafka import TopicPartition

    try:
        assert admin.alter_partition_reassignments({tp: [target]}) == {tp: None}
        assert admin.list_partition_reassignments() == {
            tp: {"replicas": [target, 1], "adding_replicas": [target], "removing_replicas": [1]}
        }
        assert admin.list_partition_reassignments([TopicPartition(TOPIC, 1)]) == {}
        # as Kafka: no new partitions while one of the topic's moves
        from kafka.admin import NewPartitions
        from kafka.errors import ReassignmentInProgressError

        with pytest.raises(ReassignmentInProgressError):
            admin.create_partitions({TOPIC: NewPartitions(3)})
        # while it moves, every (running) broker's Metadata shows the full replica set, as Kafka's
        wait_until(
            lambda: all(_replicas(cluster, TOPIC, n)[0] == [target, 1] for n in others),
            4,
            "RS in every running broker's metadata",
            interval=0.1,
        )

        assert admin.alter_partition_reassignments({tp: None}) == {tp: None}
        assert admin.list_partition_reassignments() == {}
        wait_until(
            lambda: all(_replicas(cluster, TOPIC, n)[0] == [1] for n in others),
            4,
            "the original replicas back in every running broker's metadata",
            interval=0.1,
        )
        assert cluster.leaders(TOPIC, others[-1])[0] == 1
    finally:
        admin.close()


def test_reassignments_that_cannot_be_done_get_kafkas_errors(cluster: Cluster) -> None:
    from kafka import TopicPartition
    from kafka.errors import (
        InvalidReplicationAssignmentError,
        NoReassignmentInProgressError,
        UnknownTopicOrPartitionError,
    )

    admin = _admin(cluster, 2)
    try:
        dead = TopicPartition(TOPIC, 1)
        unknown = TopicPartition("no-such-topic", 0)
        idle = TopicPartition(TOPIC, 0)
        answered = admin.alter_partition_reassignments({dead: [3, 9], unknown: [1], idle: None})
        assert answered == {
            dead: InvalidReplicationAssignmentError,
            unknown: UnknownTopicOrPartitionError,
            idle: NoReassignmentInProgressError,
        }
    finally:
        admin.close()


def test_a_broker_that_is_not_controller_answers_not_controller(cluster: Cluster) -> None:
    controller = cluster.controller(asked=1)
    other = next(n for n in BROKER_IDS if n != controller)
    broker = cluster.brokers[other]
    request = AlterPartitionReassignmentsRequest(
        timeout_ms=10_000,
        allow_replication_factor_change=True,
        topics=[
            ReassignableTopic(name=TOPIC, partitions=[ReassignablePartition(partition_index=0, replicas=[2])])
        ],
    )
    with RawClient(broker.port, timeout=30, host=broker.host) as client:
        for version in (0, 1):
            response = client.request(request, version)
            assert (response.error_code, response.responses) == (ErrorCode.NOT_CONTROLLER, [])


def test_the_reassign_command_executes_lists_verifies_and_cancels_a_plan(
    cluster: Cluster, tmp_path: Path
) -> None:

    _create(cluster, "planned", {0: [1]})
    target, asked = _target_and_bootstrap(cluster, 1)
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps({"version": 1, "partitions": [{"topic": "planned", "partition": 0, "replicas": [target]}]})
    )
    with _paused(cluster, target):  # the new replica cannot catch up: the plan stays in progress
        _execute_list_verify_cancel(plan, cluster.bootstrap(asked), target)


def _execute_list_verify_cancel(plan: Path, other: str, target: int) -> None:
    from tests.compat.cli.cli_support import odradek

    executed = odradek("reassign", "--execute", "--reassignment-json-file", str(plan), bootstrap=other)
    assert executed.code == 0, executed.stderr
    rollback = json.loads(executed.lines()[2])
    assert rollback == {"version": 1, "partitions": [{"topic": "planned", "partition": 0, "replicas": [1]}]}
    assert "Successfully started partition reassignment for planned-0" in executed.stdout
    listed = odradek("reassign", "--list", bootstrap=other)
    assert f"planned-0: replicas: {target},1. adding: {target}. removing: 1." in listed.stdout
    verified = odradek("reassign", "--verify", "--reassignment-json-file", str(plan), bootstrap=other)
    assert (
        verified.code == 1 and "Reassignment of partition planned-0 is still in progress." in verified.stdout
    )

    cancelled = odradek("reassign", "--cancel", "--reassignment-json-file", str(plan), bootstrap=other)
    assert (
        cancelled.code == 0
        and "Successfully cancelled partition reassignment for planned-0" in cancelled.stdout
    )
    assert "No partition reassignments found." in odradek("reassign", "--list", bootstrap=other).stdout
    again = odradek("reassign", "--cancel", "--reassignment-json-file", str(plan), bootstrap=other)
    assert again.code != 0 and "NO_REASSIGNMENT_IN_PROGRESS" in again.stdout


def test_a_reassignment_completes_once_the_new_replica_caught_up(cluster: Cluster) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    topic = "moved"
    _create(cluster, topic, {0: [1]})
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap(), acks="all")
    values = [b"record-%d" % i for i in range(100)]
    for value in values:
        producer.send(topic, value, partition=0)
    producer.flush(60)
    producer.close()
    tp = TopicPartition(topic, 0)
    admin = _admin(cluster, 1)
    try:
        assert admin.alter_partition_reassignments({tp: [2]}) == {tp: None}
        wait_until(
            lambda: admin.list_partition_reassignments() == {}, 60, "the reassignment complete", interval=0.5
        )
    finally:
        admin.close()
    wait_until(
        lambda: all(_replicas(cluster, topic, n)[0] == [2] for n in BROKER_IDS),
        60,
        "the target replicas in every broker's metadata",
        interval=0.1,
    )
    assert cluster.leaders(topic, 3)[0] == 2
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap(), auto_offset_reset="earliest")
    try:
        consumer.assign([tp])
        got: list[bytes] = []
        wait_until(
            lambda: (
                bool(got.extend(r.value for rs in consumer.poll(1000).values() for r in rs))
                or len(got) >= 100
            ),
            60,
            "every record from the new replica",
        )
        assert got == values
    finally:
        consumer.close()
