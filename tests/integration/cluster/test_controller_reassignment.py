"""Partition reassignment in the controller (KIP-455), on a real ZooKeeper with fake brokers.

The new replicas' catching up is the leader's AlterPartition (replication): here the test writes the
expanded ISR itself, as the controller's AlterPartition handling does, and tells the controller."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from odradek.cluster.controller.context import TopicPartition
from odradek.cluster.controller.controller import KafkaController, NotControllerError
from odradek.cluster.zookeeper import paths, reassign_znode, topics
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.cluster.zookeeper.topic_znodes import PartitionStateZnode, TopicAssignmentZnode
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode
from tests.integration.cluster.test_controller import Cluster, run

LAI, UM, SR = ApiKey.LEADER_AND_ISR, ApiKey.UPDATE_METADATA, ApiKey.STOP_REPLICA
T0 = TopicPartition("t", 0)


async def assignment(c: Cluster, topic: str = "t") -> TopicAssignmentZnode:
    found = await asyncio.to_thread(topics.topic_assignment, c.zk, topic)
    assert found is not None
    return found[0]


async def wait_assignment(
    c: Cluster, check: Callable[[TopicAssignmentZnode], bool], timeout: float = 30.0
) -> TopicAssignmentZnode:
    deadline = time.monotonic() + timeout
    while not check(found := await assignment(c)):
        assert time.monotonic() < deadline, f"assignment is {found}"
        await asyncio.sleep(0.05)
    return found


def lai_states(broker: Any, partition: int = 0) -> list[Any]:
    return [
        p
        for r in broker.requests_of(LAI)
        for t in r.topic_states
        for p in t.partition_states
        if t.topic_name == "t" and p.partition_index == partition
    ]


def stop_replicas(broker: Any) -> list[tuple[str, int, bool]]:
    return [
        (t.topic_name, p.partition_index, p.delete_partition)
        for r in broker.requests_of(SR)
        for t in r.topic_states
        for p in t.partition_states
    ]


async def expand_isr(c: Cluster, controller: KafkaController, partition: int, isr: list[int]) -> None:
    """What AlterPartition does once the new replicas caught up: the state's ISR grows (same leader
    and leader epoch, compare-and-set on the partition epoch), and the controller learns of it."""
    state, version = await c.wait_state("t", partition, lambda s: True)
    grown = PartitionStateZnode(state.leader, state.leader_epoch, isr, state.controller_epoch)
    await asyncio.to_thread(c.zk.kazoo.set, paths.partition_state("t", partition), grown.serialize(), version)
    controller.isr_changed("t", partition)


def test_a_reassignment_adds_the_new_replica_then_completes_once_it_is_in_the_isr(
    connect_zk: Callable[[], ZooKeeperClient],
) -> None:
    async def scenario(c: Cluster) -> None:
        controller = await c.controller(3)
        await c.create_topic("t", {0: [1], 1: [1]})
        await c.wait_state("t", 0, lambda s: True)
        await controller.wait_idle()
        for fake in c.brokers.values():
            fake.clear()

        started = await controller.alter_partition_reassignments({T0: [2]})
        assert started == {T0: started[T0]} and started[T0].code == ErrorCode.NONE
        # RS = target + original, with what is added and removed, where a new controller finds it
        moving = await assignment(c)
        assert moving.partitions == {0: [2, 1], 1: [1]}
        assert (moving.adding_replicas, moving.removing_replicas) == ({0: [2]}, {0: [1]})
        s0, _ = await c.wait_state("t", 0, lambda s: True)
        assert (s0.leader, list(s0.isr), s0.leader_epoch) == (1, [1], 1)  # a new epoch for the new RS
        # the new replica is told it follows 1, as a new replica; the old one learns the RS
        two, one = c.brokers[2], c.brokers[1]
        await two.wait_for(lambda f: bool(lai_states(f)))
        (told,) = lai_states(two)
        assert (told.leader, told.replicas, told.adding_replicas, told.removing_replicas, told.is_new) == (
            1,
            [2, 1],
            [2],
            [1],
            True,
        )
        await one.wait_for(lambda f: bool(lai_states(f)))
        assert [(p.replicas, p.is_new) for p in lai_states(one)] == [([2, 1], False)]
        # every broker's metadata shows the full replica set meanwhile, as Kafka's
        await c.brokers[3].wait_for(lambda f: any(p.replicas == [2, 1] for p in _um_states(f)))

        listed = await controller.list_partition_reassignments(None)
        assert {tp: (m.replicas, m.adding, m.removing) for tp, m in listed.items()} == {
            T0: ((2, 1), (2,), (1,))
        }
        assert await controller.list_partition_reassignments([TopicPartition("t", 1)]) == {}

        # an ISR change that leaves the target out of sync completes nothing
        controller.isr_changed("t", 0)
        await controller.wait_idle()
        assert (await assignment(c)).adding_replicas == {0: [2]}

        await expand_isr(c, controller, 0, [1, 2])
        done = await wait_assignment(c, lambda a: not a.adding_replicas)
        assert (done.partitions, done.removing_replicas) == ({0: [2], 1: [1]}, {})
        s0, _ = await c.wait_state("t", 0, lambda s: s.leader == 2)
        assert list(s0.isr) == [2]
        # the old replica stops and deletes its copy, at the partition's current leader epoch
        await one.wait_for(lambda f: ("t", 0, True) in stop_replicas(f))
        (stop,) = [p for r in one.requests_of(SR) for t in r.topic_states for p in t.partition_states]
        assert stop.leader_epoch >= 2
        assert await controller.list_partition_reassignments(None) == {}
        await two.wait_for(lambda f: any(p.leader == 2 and p.replicas == [2] for p in lai_states(f)))

    run(connect_zk, [1, 2, 3], scenario)


def test_cancelling_a_reassignment_restores_the_original_replicas_and_deletes_the_new_ones(
    connect_zk: Callable[[], ZooKeeperClient],
) -> None:
    async def scenario(c: Cluster) -> None:
        controller = await c.controller(3)
        await c.create_topic("t", {0: [1]})
        await c.wait_state("t", 0, lambda s: True)
        await controller.wait_idle()
        started = await controller.alter_partition_reassignments({T0: [2, 3]})
        assert started[T0].code == ErrorCode.NONE
        assert (await assignment(c)).partitions == {0: [2, 3, 1]}

        cancelled = await controller.alter_partition_reassignments({T0: None})
        assert cancelled[T0].code == ErrorCode.NONE
        back = await assignment(c)
        assert (back.partitions, back.adding_replicas, back.removing_replicas) == ({0: [1]}, {}, {})
        s0, _ = await c.wait_state("t", 0, lambda s: True)
        assert (s0.leader, list(s0.isr)) == (1, [1])
        for added in (2, 3):
            await c.brokers[added].wait_for(lambda f: ("t", 0, True) in stop_replicas(f))
        assert await controller.list_partition_reassignments(None) == {}
        again = await controller.alter_partition_reassignments({T0: None})
        assert again[T0].code == ErrorCode.NO_REASSIGNMENT_IN_PROGRESS

    run(connect_zk, [1, 2, 3], scenario)


def test_a_new_reassignment_replaces_the_one_in_progress(connect_zk: Callable[[], ZooKeeperClient]) -> None:
    async def scenario(c: Cluster) -> None:
        controller = await c.controller(3)
        await c.create_topic("t", {0: [1]})
        await c.wait_state("t", 0, lambda s: True)
        await controller.wait_idle()
        await controller.alter_partition_reassignments({T0: [2]})
        c.brokers[2].clear()
        replaced = await controller.alter_partition_reassignments({T0: [3]})
        assert replaced[T0].code == ErrorCode.NONE
        moving = await assignment(c)
        # the original replicas stay the ones before the first reassignment; 2 is no longer wanted
        assert (moving.partitions, moving.adding_replicas, moving.removing_replicas) == (
            {0: [3, 1]},
            {0: [3]},
            {0: [1]},
        )
        await c.brokers[2].wait_for(lambda f: ("t", 0, True) in stop_replicas(f))

    run(connect_zk, [1, 2, 3], scenario)


def test_reassignments_that_cannot_be_done_are_refused_with_kafkas_errors(
    connect_zk: Callable[[], ZooKeeperClient],
) -> None:
    async def scenario(c: Cluster) -> None:
        controller = await c.controller(3)
        standby = await c.controller(2)
        await c.create_topic("t", {0: [1, 2]})
        await c.wait_state("t", 0, lambda s: True)
        await controller.wait_idle()
        results = await controller.alter_partition_reassignments(
            {
                TopicPartition("t", 0): [],
                TopicPartition("t", 1): [1],  # no such partition
                TopicPartition("u", 0): [1],  # no such topic
                TopicPartition("t", 2): [1, 1],
                TopicPartition("t", 3): [-1],
                TopicPartition("t", 4): [1, 9],  # 9 is not a live broker
                TopicPartition("t", 5): None,
            }
        )
        assert {tp.partition if tp.topic == "t" else -1: r.code for tp, r in results.items()} == {
            0: ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            1: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            -1: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            2: ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            3: ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            4: ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            5: ErrorCode.NO_REASSIGNMENT_IN_PROGRESS,
        }
        assert "not alive" in (results[TopicPartition("t", 4)].message or "")
        # KIP-860: allow_replication_factor_change=false keeps the number of replicas
        refused = await controller.alter_partition_reassignments(
            {T0: [3]}, allow_replication_factor_change=False
        )
        assert refused[T0].code == ErrorCode.INVALID_REPLICA_ASSIGNMENT
        kept = await controller.alter_partition_reassignments(
            {T0: [3, 2]}, allow_replication_factor_change=False
        )
        assert kept[T0].code == ErrorCode.NONE
        with pytest.raises(NotControllerError):
            await standby.alter_partition_reassignments({T0: [1]})
        with pytest.raises(NotControllerError):
            await standby.list_partition_reassignments(None)

    run(connect_zk, [1, 2, 3], scenario)


def test_a_new_controller_resumes_a_reassignment_and_completes_it(
    connect_zk: Callable[[], ZooKeeperClient],
) -> None:
    async def scenario(c: Cluster) -> None:
        first = await c.controller(1)
        await c.create_topic("t", {0: [1]})
        await c.wait_state("t", 0, lambda s: True)
        await first.wait_idle()
        await first.alter_partition_reassignments({T0: [2]})
        second = await c.controller(2)
        await first.stop()
        first.zk.close()
        deadline = time.monotonic() + 30
        while not second.is_active:
            assert time.monotonic() < deadline, "no failover"
            await asyncio.sleep(0.05)
        await second.wait_idle()
        listed = await second.list_partition_reassignments(None)
        assert {tp: m.adding for tp, m in listed.items()} == {T0: (2,)}
        await expand_isr(c, second, 0, [1, 2])
        done = await wait_assignment(c, lambda a: not a.adding_replicas)
        assert done.partitions == {0: [2]}

    run(connect_zk, [1, 2, 3], scenario)


def _um_states(broker: Any) -> list[Any]:
    return [p for r in broker.requests_of(UM) for t in r.topic_states for p in t.partition_states]


def test_a_topic_being_reassigned_is_deleted_once_its_reassignment_ends(
    connect_zk: Callable[[], ZooKeeperClient],
) -> None:
    async def scenario(c: Cluster) -> None:
        controller = await c.controller(3)
        await c.create_topic("t", {0: [1]})
        await c.wait_state("t", 0, lambda s: True)
        await controller.wait_idle()
        await controller.alter_partition_reassignments({T0: [2]})
        await asyncio.to_thread(topics.mark_topic_for_deletion, c.zk, "t")
        await controller.wait_idle()
        # as Kafka: ineligible for deletion while a reassignment is in progress
        assert await asyncio.to_thread(topics.topic_assignment, c.zk, "t") is not None
        assert "t" in await asyncio.to_thread(topics.topics_marked_for_deletion, c.zk)
        assert (await controller.list_partition_reassignments(None)).keys() == {T0}

        cancelled = await controller.alter_partition_reassignments({T0: None})
        assert cancelled[T0].code == ErrorCode.NONE
        deadline = time.monotonic() + 30
        while await asyncio.to_thread(topics.topic_assignment, c.zk, "t") is not None:
            assert time.monotonic() < deadline, "the topic was not deleted"
            await asyncio.sleep(0.05)
        assert await asyncio.to_thread(topics.topics_marked_for_deletion, c.zk) == []

    run(connect_zk, [1, 2, 3], scenario)


@pytest.mark.parametrize("write_delay", [0.0, 0.3], ids=["zookeeper", "slow-zookeeper-writes"])
def test_a_plan_in_admin_reassign_partitions_is_started_and_removed_as_partitions_complete(
    connect_zk: Callable[[], ZooKeeperClient], monkeypatch: pytest.MonkeyPatch, write_delay: float
) -> None:
    # Slow writes, as on a loaded machine, widen the windows between the controller's steps.
    for module, name in ((topics, "set_topic_assignment"), (reassign_znode, "write_plan")):
        monkeypatch.setattr(module, name, _delayed(getattr(module, name), write_delay))

    async def scenario(c: Cluster) -> None:
        controller = await c.controller(3)
        await c.create_topic("t", {0: [1], 1: [1]})
        await c.wait_state("t", 1, lambda s: True)
        await controller.wait_idle()
        plan = {
            "version": 1,
            "partitions": [
                {"topic": "t", "partition": 0, "replicas": [2]},
                {"topic": "t", "partition": 1, "replicas": [3]},
                {"topic": "absent", "partition": 0, "replicas": [1]},
            ],
        }
        # as kafka-reassign-partitions wrote it before KIP-455
        await asyncio.to_thread(c.zk.kazoo.create, paths.REASSIGN_PARTITIONS, json.dumps(plan).encode())
        # As Kafka's controller: each partition starts with a write of its own (the first can be seen
        # alone), and the partitions that cannot be reassigned leave the plan after the others started.
        moving = await wait_assignment(c, lambda a: a.adding_replicas.keys() == {0, 1})
        assert (moving.partitions, moving.adding_replicas) == ({0: [2, 1], 1: [3, 1]}, {0: [2], 1: [3]})
        # what cannot be reassigned leaves the plan; the rest stays until it completes
        assert await wait_plan(c, lambda p: ("absent", 0) not in p) == {("t", 0), ("t", 1)}

        await expand_isr(c, controller, 0, [1, 2])
        # a completed partition leaves the plan after its final assignment is written
        assert await wait_plan(c, lambda p: ("t", 0) not in p) == {("t", 1)}
        assert (await assignment(c)).partitions[0] == [2]
        # the API's reassignment replaces the plan's: the znode goes with its last partition
        await controller.alter_partition_reassignments({TopicPartition("t", 1): None})
        assert await asyncio.to_thread(c.zk.read, paths.REASSIGN_PARTITIONS) is None
        done = await assignment(c)
        assert (done.partitions, done.adding_replicas) == ({0: [2], 1: [1]}, {})

    run(connect_zk, [1, 2, 3], scenario)


async def wait_plan(
    c: Cluster, check: Callable[[set[tuple[str, int]]], bool], timeout: float = 30.0
) -> set[tuple[str, int]]:
    """The partitions of /admin/reassign_partitions once `check` holds for them."""
    deadline = time.monotonic() + timeout
    while not check(found := _plan(await asyncio.to_thread(c.zk.read, paths.REASSIGN_PARTITIONS))):
        assert time.monotonic() < deadline, f"the plan holds {sorted(found)}"
        await asyncio.sleep(0.05)
    return found


def _delayed(write: Callable[..., Any], seconds: float) -> Callable[..., Any]:
    def delayed(*args: Any, **kwargs: Any) -> Any:
        time.sleep(seconds)  # in the controller's worker thread, as a slow ZooKeeper round trip
        return write(*args, **kwargs)

    return delayed


def _plan(found: tuple[bytes, Any] | None) -> set[tuple[str, int]]:
    assert found is not None
    return {(p["topic"], p["partition"]) for p in json.loads(found[0])["partitions"]}


def test_the_leaders_alter_partition_that_puts_the_target_in_the_isr_completes_the_reassignment(
    connect_zk: Callable[[], ZooKeeperClient],
) -> None:
    from odradek.cluster.controller.isr_changes import UNKNOWN_BROKER_EPOCH, IsrChangeRequest

    async def scenario(c: Cluster) -> None:
        controller = await c.controller(3)
        await c.create_topic("t", {0: [1]})
        await c.wait_state("t", 0, lambda s: True)
        await controller.wait_idle()
        await controller.alter_partition_reassignments({T0: [2]})
        state, partition_epoch = await c.wait_state("t", 0, lambda s: True)
        # the leader, 1, found 2 caught up: AlterPartition (key 56), through the controller's queue
        epoch = controller.context.live_brokers[1].epoch  # type: ignore[union-attr]
        expanded = IsrChangeRequest(
            topic="t",
            topic_id=None,
            partition=0,
            leader_epoch=state.leader_epoch,
            new_isr=(1, 2),
            member_epochs=(UNKNOWN_BROKER_EPOCH, UNKNOWN_BROKER_EPOCH),
            leader_recovery_state=0,
            partition_epoch=partition_epoch,
        )
        answer = await controller.alter_partition(1, epoch, [expanded])
        assert (answer.error, [o.error for o in answer.outcomes]) == (ErrorCode.NONE, [ErrorCode.NONE])
        done = await wait_assignment(c, lambda a: not a.adding_replicas)
        assert done.partitions == {0: [2]}
        s0, _ = await c.wait_state("t", 0, lambda s: s.leader == 2)
        assert list(s0.isr) == [2]
        await c.brokers[1].wait_for(lambda f: ("t", 0, True) in stop_replicas(f))

    run(connect_zk, [1, 2, 3], scenario)
