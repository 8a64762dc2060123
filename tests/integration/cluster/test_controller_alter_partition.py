"""AlterPartition on the controller, with a real ZooKeeper and fake brokers: each check's error code,
the compare-and-set of the state znode, and the UpdateMetadata every live broker gets; then elections
over the ISRs that AlterPartition leaves (only ISR members lead, unless unclean election is allowed
by the broker's setting, the topic's, or an ElectLeaders UNCLEAN)."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from odradek.cluster.controller import broker_changes, reassignment
from odradek.cluster.controller.config import ControllerConfig
from odradek.cluster.controller.context import TopicPartition
from odradek.cluster.controller.controller import KafkaController
from odradek.cluster.controller.isr_changes import UNKNOWN_BROKER_EPOCH, IsrChangeRequest
from odradek.cluster.controller.leader_elections import PREFERRED_ELECTION, UNCLEAN_ELECTION
from odradek.cluster.controller.term import ControllerTerm
from odradek.cluster.inter_broker_versions import InterBrokerVersions
from odradek.cluster.zookeeper import brokers, paths, topics
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.cluster.zookeeper.topic_znodes import PartitionStateZnode, TopicAssignmentZnode
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.alter_partition import (
    AlterPartitionRequest,
    BrokerState,
    PartitionData,
    TopicData,
)
from tests.support.fake_broker import FakeBroker
from tests.support.handler_services import HandlerBroker

UM = ApiKey.UPDATE_METADATA


@dataclass
class Setup:
    zk: ZooKeeperClient
    fakes: dict[int, FakeBroker]
    epochs: dict[int, int]
    controller: KafkaController
    topic_id: uuid.UUID
    connect: Callable[[], ZooKeeperClient]

    async def state(self, partition: int = 0) -> tuple[PartitionStateZnode, int]:
        return await self.state_of("t", partition)

    async def state_of(self, topic: str, partition: int = 0) -> tuple[PartitionStateZnode, int]:
        found = await asyncio.to_thread(topics.partition_state, self.zk, topic, partition)
        assert found is not None
        return found

    async def alter(
        self, *changes: IsrChangeRequest, broker_id: int = 1, broker_epoch: int | None = None
    ) -> tuple[ErrorCode, list[ErrorCode]]:
        epoch = self.epochs[broker_id] if broker_epoch is None else broker_epoch
        result = await self.controller.alter_partition(broker_id, epoch, list(changes))
        return result.error, [o.error for o in result.outcomes]


def change(
    isr: tuple[int, ...],
    partition_epoch: int,
    leader_epoch: int = 0,
    partition: int = 0,
    topic: str | None = "t",
) -> IsrChangeRequest:
    return IsrChangeRequest(
        topic=topic,
        topic_id=None,
        partition=partition,
        leader_epoch=leader_epoch,
        new_isr=isr,
        member_epochs=(UNKNOWN_BROKER_EPOCH,) * len(isr),
        leader_recovery_state=0,
        partition_epoch=partition_epoch,
    )


@asynccontextmanager
async def three_brokers(
    connect_zk: Callable[[], ZooKeeperClient], config: ControllerConfig | None = None
) -> AsyncIterator[Setup]:
    """Fake brokers 1-3, the controller on broker 1, topic t with partition 0 on [1, 2, 3] (leader 1)
    and partition 1 on [2, 3] (leader 2)."""
    zk = connect_zk()
    zk.ensure_persistent_paths()
    fakes = {b: await FakeBroker(b).start() for b in (1, 2, 3)}
    controller: KafkaController | None = None
    try:
        epochs = {
            b: await asyncio.to_thread(brokers.register_broker, zk, fake.registration())
            for b, fake in fakes.items()
        }
        controller = KafkaController(connect_zk(), config or ControllerConfig(broker_id=1))
        await controller.start()
        await controller.wait_idle()
        topic_id = uuid.uuid4()
        assignment = TopicAssignmentZnode({0: [1, 2, 3], 1: [2, 3]}, topic_id)
        await asyncio.to_thread(topics.create_topic, zk, "t", assignment, {})
        await _until(lambda: controller is not None and len(controller.context.states) == 2)  # type: ignore[union-attr]
        await controller.wait_idle()
        # the fakes have what the setup sent (LeaderAndIsr, UpdateMetadata): a test that clears them
        # must not get those afterwards
        channel = controller.channel
        assert channel is not None
        await _until(lambda: all(c.idle for c in channel.channels.values()))
        yield Setup(zk, fakes, epochs, controller, topic_id, connect_zk)
    finally:
        if controller is not None:
            await controller.stop()
        for fake in fakes.values():
            await fake.stop()


async def _until(check: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


def run(
    connect_zk: Callable[[], ZooKeeperClient],
    scenario: Callable[[Setup], Awaitable[None]],
    config: ControllerConfig | None = None,
) -> None:
    async def main() -> None:
        async with three_brokers(connect_zk, config) as setup:
            await asyncio.wait_for(scenario(setup), 60)

    asyncio.run(main())


def isr_told(fake: FakeBroker, partition: int) -> list[list[int]]:
    """Every ISR of t-`partition` a broker got in UpdateMetadata, in order."""
    return [
        list(p.isr)
        for r in fake.requests_of(UM)
        for t in r.topic_states
        for p in t.partition_states
        if t.topic_name == "t" and p.partition_index == partition
    ]


def test_a_shrink_then_an_expand_are_written_keep_the_leader_epoch_and_reach_every_broker(
    connect_zk: Callable[[], ZooKeeperClient],
) -> None:
    async def scenario(s: Setup) -> None:
        for fake in s.fakes.values():
            fake.clear()
        result = await s.controller.alter_partition(1, s.epochs[1], [change((1, 2), 0)])
        assert result.error == ErrorCode.NONE
        (outcome,) = result.outcomes
        assert outcome.error == ErrorCode.NONE and outcome.state is not None
        assert (outcome.state.leader, list(outcome.state.isr), outcome.state.znode.leader_epoch) == (
            1,
            [1, 2],
            0,
        )
        assert outcome.state.partition_epoch == 1
        znode, version = await s.state()
        assert (znode.leader, znode.leader_epoch, list(znode.isr), version) == (1, 0, [1, 2], 1)
        assert znode.controller_epoch == s.controller.context.epoch  # type: ignore[union-attr]
        for fake in s.fakes.values():
            await fake.wait_for(lambda f: isr_told(f, 0) == [[1, 2]])

        assert await s.alter(change((1, 2, 3), 1)) == (ErrorCode.NONE, [ErrorCode.NONE])
        znode, version = await s.state()
        assert (list(znode.isr), znode.leader_epoch, version) == ([1, 2, 3], 0, 2)
        for fake in s.fakes.values():
            await fake.wait_for(lambda f: isr_told(f, 0) == [[1, 2], [1, 2, 3]])

    run(connect_zk, scenario)


def test_a_retried_request_repeating_the_current_state_is_answered_with_it(
    connect_zk: Callable[[], ZooKeeperClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    told: list[tuple[str, int]] = []

    async def on_isr_change(term: object, topic: str, partition: int) -> None:
        told.append((topic, partition))

    monkeypatch.setattr(reassignment, "on_isr_change", on_isr_change)

    async def scenario(s: Setup) -> None:
        assert await s.alter(change((1, 3), 0)) == (ErrorCode.NONE, [ErrorCode.NONE])
        # the answer was lost: the leader sends the same proposal, at the partition epoch it had
        result = await s.controller.alter_partition(1, s.epochs[1], [change((1, 3), 0)])
        (outcome,) = result.outcomes
        assert outcome.error == ErrorCode.NONE and outcome.state is not None
        assert (list(outcome.state.isr), outcome.state.partition_epoch) == ([1, 3], 1)
        assert (await s.state())[1] == 1  # nothing written again
        assert await s.alter(change((1, 2), 0)) == (ErrorCode.NONE, [ErrorCode.INVALID_UPDATE_VERSION])
        # reassignment hears of both successful answers, not of the refusal
        assert told == [("t", 0), ("t", 0)]

    run(connect_zk, scenario)


def test_each_refused_change_gets_its_error_code(connect_zk: Callable[[], ZooKeeperClient]) -> None:
    async def scenario(s: Setup) -> None:
        stale = s.epochs[1] - 1
        assert await s.alter(change((1, 2), 0), broker_epoch=stale) == (ErrorCode.STALE_BROKER_EPOCH, [])
        assert await s.alter(change((1, 2), 0), broker_id=9, broker_epoch=1) == (
            ErrorCode.STALE_BROKER_EPOCH,
            [],
        )
        by_id = replace(change((1, 2), 0), topic=None, topic_id=uuid.uuid4())
        cases = [
            (change((1, 2), 0, partition=7), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
            (change((1, 2), 0, topic="nope"), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
            (by_id, ErrorCode.UNKNOWN_TOPIC_ID),
            (change((2, 3), 0, partition=1), ErrorCode.NOT_LEADER_OR_FOLLOWER),  # 2 leads it
            (change((1, 2), 0, leader_epoch=-1), ErrorCode.FENCED_LEADER_EPOCH),
            (change((1, 2), 0, leader_epoch=1), ErrorCode.NOT_CONTROLLER),  # newer than the controller
            (change((1, 2), 5), ErrorCode.NOT_CONTROLLER),
            (change((), 0), ErrorCode.INVALID_REQUEST),
            (change((2, 3), 0), ErrorCode.INVALID_REQUEST),  # without the leader
            (change((1, 2, 2), 0), ErrorCode.INVALID_REQUEST),
            (replace(change((1, 2), 0), leader_recovery_state=1), ErrorCode.INVALID_REQUEST),
            (change((1, 4), 0), ErrorCode.INELIGIBLE_REPLICA),  # not a replica
            (replace(change((1, 2), 0), member_epochs=(-1, s.epochs[2] - 1)), ErrorCode.INELIGIBLE_REPLICA),
        ]
        for asked, expected in cases:
            assert await s.alter(asked) == (ErrorCode.NONE, [expected]), asked
        assert await s.alter(*(c for c, _ in cases)) == (ErrorCode.NONE, [e for _, e in cases])
        by_id = replace(by_id, topic_id=s.topic_id)
        assert await s.alter(by_id) == (ErrorCode.NONE, [ErrorCode.NONE])  # known id: written
        assert await s.alter(change((1, 2, 3), 0)) == (ErrorCode.NONE, [ErrorCode.INVALID_UPDATE_VERSION])
        assert (await s.state())[1] == 1

        # a member gone, or shutting down, may not join
        await asyncio.to_thread(s.zk.kazoo.delete, paths.broker(3))
        await _until(lambda: 3 not in s.controller.context.live_brokers)  # type: ignore[union-attr]
        await s.controller.wait_idle()
        znode, version = await s.state()
        assert await s.alter(change((1, 2, 3), version, znode.leader_epoch)) == (
            ErrorCode.NONE,
            [ErrorCode.INELIGIBLE_REPLICA],
        )
        shutdown = await s.controller.controlled_shutdown(2, s.epochs[2])
        assert shutdown.error == ErrorCode.NONE
        znode, version = await s.state()
        assert list(znode.isr) == [1] and znode.leader == 1
        assert await s.alter(change((1, 2), version, znode.leader_epoch)) == (
            ErrorCode.NONE,
            [ErrorCode.INELIGIBLE_REPLICA],
        )
        # the leader's own epoch moved on with the controller's shrink: the old one is fenced
        assert await s.alter(change((1,), version, znode.leader_epoch - 1)) == (
            ErrorCode.NONE,
            [ErrorCode.FENCED_LEADER_EPOCH],
        )

    run(connect_zk, scenario)


def test_a_member_that_registered_again_before_the_controller_saw_it_bounce_is_refused(
    connect_zk: Callable[[], ZooKeeperClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A broker that restarted (a new registration, maybe without its unflushed tail) while the
    controller still holds its previous registration: an ISR the controller wrote with it would carry a
    mzxid newer than the new registration, and the next controller's check of unseen restarts
    (broker_changes.on_restarts_no_controller_saw) would not see it. The controller's write checks
    that no member registered again since it saw the registrations: one that did is INELIGIBLE_REPLICA
    while its bounce waits (the sender's own registration, read first: STALE_BROKER_EPOCH)."""
    real = broker_changes.on_broker_change
    holding: list[bool] = []
    held: list[object] = []

    async def not_handled_yet(term: ControllerTerm) -> None:
        if holding:
            held.append(term)  # the bounce is on the controller's queue, not handled
        else:
            await real(term)

    monkeypatch.setattr(broker_changes, "on_broker_change", not_handled_yet)  # the controller takes it

    async def scenario(s: Setup) -> None:
        holding.append(True)
        await asyncio.to_thread(s.zk.kazoo.delete, paths.broker(2))
        await asyncio.to_thread(brokers.register_broker, s.zk, s.fakes[2].registration())
        await _until(lambda: len(held) > 0)
        await s.controller.wait_idle()
        assert s.controller.context.live_brokers[2].epoch == s.epochs[2]  # the old registration
        # leader 1 keeps broker 2, which it last saw fetch as its old registration, and drops 3
        kept = replace(change((1, 2), 0), member_epochs=(-1, s.epochs[2]))
        assert await s.alter(kept) == (ErrorCode.NONE, [ErrorCode.INELIGIBLE_REPLICA])
        assert (await s.state())[1] == 0  # nothing written
        # the sender itself: a request its previous registration sent before it died
        await asyncio.to_thread(s.zk.kazoo.delete, paths.broker(1))
        await asyncio.to_thread(brokers.register_broker, s.zk, s.fakes[1].registration())
        assert await s.alter(change((1, 3), 0)) == (ErrorCode.STALE_BROKER_EPOCH, [])
        assert (await s.state())[1] == 0

    run(connect_zk, scenario)


def test_a_state_changed_behind_the_controllers_back_refuses_the_proposal_and_is_read_again(
    connect_zk: Callable[[], ZooKeeperClient],
) -> None:
    async def scenario(s: Setup) -> None:
        znode, version = await s.state()
        moved = PartitionStateZnode(znode.leader, znode.leader_epoch, [1, 3], znode.controller_epoch)
        await asyncio.to_thread(s.zk.kazoo.set, paths.partition_state("t", 0), moved.serialize(), version)
        # the controller's context still says partition epoch 0: the compare-and-set fails
        assert await s.alter(change((1, 2), 0)) == (ErrorCode.NONE, [ErrorCode.INVALID_UPDATE_VERSION])
        znode, version = await s.state()
        assert (list(znode.isr), version) == ([1, 3], 1)
        state = s.controller.context.states[("t", 0)]  # type: ignore[union-attr, index]
        assert (list(state.isr), state.partition_epoch) == ([1, 3], 1)
        assert await s.alter(change((1, 2, 3), 1)) == (ErrorCode.NONE, [ErrorCode.NONE])

    run(connect_zk, scenario)


def test_a_controller_that_is_not_or_lost_its_epoch_answers_not_controller(
    connect_zk: Callable[[], ZooKeeperClient],
) -> None:
    async def scenario(s: Setup) -> None:
        standby = KafkaController(s.connect(), ControllerConfig(broker_id=2))
        await standby.start()
        try:
            await standby.wait_idle()
            result = await standby.alter_partition(1, s.epochs[1], [change((1, 2), 0)])
            assert (result.error, result.outcomes) == (ErrorCode.NOT_CONTROLLER, [])
        finally:
            await standby.stop()

        # another controller was elected behind the active one's back (as after a long pause): the
        # controller epoch moved on, its fenced write fails, it answers NOT_CONTROLLER and resigns
        epoch = s.controller.context.epoch  # type: ignore[union-attr]
        await asyncio.to_thread(s.zk.kazoo.set, paths.CONTROLLER_EPOCH, str(epoch + 1).encode())
        result = await s.controller.alter_partition(1, s.epochs[1], [change((1, 2), 0)])
        assert (result.error, result.outcomes) == (ErrorCode.NOT_CONTROLLER, [])
        await _until(lambda: not s.controller.is_active)
        znode, version = await s.state()
        assert (list(znode.isr), version) == ([1, 2, 3], 0)

    run(connect_zk, scenario)


# ----- elections over the ISR ------------------------------------------------------------------------


async def wait_state(
    s: Setup, check: Callable[[PartitionStateZnode], bool], topic: str = "t"
) -> PartitionStateZnode:
    deadline = time.monotonic() + 30
    while True:
        found = await asyncio.to_thread(topics.partition_state, s.zk, topic, 0)
        if found is not None and check(found[0]):
            return found[0]
        assert time.monotonic() < deadline, f"{topic}-0 state is {found}"
        await asyncio.sleep(0.05)


async def leave(s: Setup, broker_id: int) -> None:
    await asyncio.to_thread(s.zk.kazoo.delete, paths.broker(broker_id))
    await _until(lambda: broker_id not in s.controller.context.live_brokers)  # type: ignore[union-attr]
    await s.controller.wait_idle()


def unclean_warnings(caplog: pytest.LogCaptureFixture, topic: str) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING
        and "unclean leader election" in r.getMessage()
        and f" {topic}-0 " in r.getMessage()
    ]


def test_only_isr_members_are_elected_and_the_last_one_stays_in_the_isr_when_it_dies(
    connect_zk: Callable[[], ZooKeeperClient], caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario(s: Setup) -> None:
        assert await s.alter(change((1, 3), 0)) == (ErrorCode.NONE, [ErrorCode.NONE])
        await leave(s, 1)
        # 2 comes first in the assignment, but only 3 is in sync
        znode = await wait_state(s, lambda z: z.leader_epoch == 1)
        assert (znode.leader, list(znode.isr)) == (3, [3])
        # the preferred replica (1) comes back, out of sync: no preferred election
        await asyncio.to_thread(brokers.register_broker, s.zk, s.fakes[1].registration())
        await _until(lambda: 1 in s.controller.context.live_brokers)  # type: ignore[union-attr]
        await s.controller.wait_idle()
        elected = await s.controller.elect_leaders(PREFERRED_ELECTION, [TopicPartition("t", 0)])
        assert elected == {TopicPartition("t", 0): ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE}

        await leave(s, 3)
        znode = await wait_state(s, lambda z: z.leader_epoch == 2)
        assert (znode.leader, list(znode.isr)) == (-1, [3])  # offline; 1 and 2 are live but out of sync
        assert not unclean_warnings(caplog, "t")

        elected = await s.controller.elect_leaders(UNCLEAN_ELECTION, [TopicPartition("t", 0)])
        assert elected == {TopicPartition("t", 0): ErrorCode.NONE}
        znode = await wait_state(s, lambda z: z.leader_epoch == 3)
        assert (znode.leader, list(znode.isr)) == (1, [1])  # the first live replica in assignment order
        (warning,) = unclean_warnings(caplog, "t")
        assert "ElectLeaders UNCLEAN" in warning and "broker 1" in warning

    caplog.set_level(logging.INFO)
    run(connect_zk, scenario)


def test_controlled_shutdown_keeps_a_leadership_no_in_sync_replica_can_take(
    connect_zk: Callable[[], ZooKeeperClient],
) -> None:
    async def scenario(s: Setup) -> None:
        assert await s.alter(change((2,), 0, partition=1), broker_id=2) == (ErrorCode.NONE, [ErrorCode.NONE])
        result = await s.controller.controlled_shutdown(2, s.epochs[2])
        # t-1: 3 is out of sync, so 2 keeps leading it; t-0: 2 leaves the ISR
        assert (result.error, result.remaining) == (ErrorCode.NONE, [TopicPartition("t", 1)])
        found = await asyncio.to_thread(topics.partition_state, s.zk, "t", 1)
        assert found is not None and (found[0].leader, list(found[0].isr)) == (2, [2])
        znode = await wait_state(s, lambda z: z.leader_epoch == 1)
        assert (znode.leader, list(znode.isr)) == (1, [1, 3])

    run(connect_zk, scenario)


def test_a_topic_enabling_unclean_election_gets_an_out_of_sync_leader_with_a_warning(
    connect_zk: Callable[[], ZooKeeperClient], caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario(s: Setup) -> None:
        await create(s, "dirty", {"unclean.leader.election.enable": "true"})
        for topic in ("t", "dirty"):
            shrink = replace(change((1,), 0), topic=topic)
            assert await s.alter(shrink) == (ErrorCode.NONE, [ErrorCode.NONE])
        await leave(s, 1)
        dirty = await wait_state(s, lambda z: z.leader_epoch == 1, "dirty")
        assert (dirty.leader, list(dirty.isr)) == (2, [2])
        (warning,) = unclean_warnings(caplog, "dirty")
        assert "broker 2" in warning and "[1]" in warning
        clean = await wait_state(s, lambda z: z.leader_epoch == 1)
        assert (clean.leader, list(clean.isr)) == (-1, [1])  # the broker's default: off
        assert not unclean_warnings(caplog, "t")

    caplog.set_level(logging.INFO)
    run(connect_zk, scenario)


def test_the_brokers_unclean_default_applies_unless_the_topic_disables_it(
    connect_zk: Callable[[], ZooKeeperClient], caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario(s: Setup) -> None:
        await create(s, "careful", {"unclean.leader.election.enable": "false"})
        for topic in ("t", "careful"):
            shrink = replace(change((1,), 0), topic=topic)
            assert await s.alter(shrink) == (ErrorCode.NONE, [ErrorCode.NONE])
        await leave(s, 1)
        znode = await wait_state(s, lambda z: z.leader_epoch == 1)
        assert (znode.leader, list(znode.isr)) == (2, [2])
        assert len(unclean_warnings(caplog, "t")) == 1
        careful = await wait_state(s, lambda z: z.leader_epoch == 1, "careful")
        assert (careful.leader, list(careful.isr)) == (-1, [1])

    caplog.set_level(logging.INFO)
    run(connect_zk, scenario, ControllerConfig(broker_id=1, unclean_leader_election_enable=True))


async def create(s: Setup, topic: str, config: dict[str, str]) -> None:
    assignment = TopicAssignmentZnode({0: [1, 2]}, uuid.uuid4())
    await asyncio.to_thread(topics.create_topic, s.zk, topic, assignment, config)
    await _until(lambda: TopicPartition(topic, 0) in s.controller.context.states)  # type: ignore[union-attr]
    await s.controller.wait_idle()


def test_the_handler_answers_by_topic_id_from_v2_and_by_name_before(
    connect_zk: Callable[[], ZooKeeperClient], tmp_path: Path
) -> None:
    async def scenario(s: Setup) -> None:
        broker = HandlerBroker(tmp_path, node_id=1, zookeeper_mode=True)
        broker.services.controller = s.controller
        try:
            members = [BrokerState(broker_id=1, broker_epoch=-1), BrokerState(broker_id=2, broker_epoch=-1)]
            by_id = [
                TopicData(
                    topic_id=topic_id,
                    partitions=[
                        PartitionData(
                            partition_index=0, leader_epoch=0, new_isr_with_epochs=members, partition_epoch=0
                        )
                    ],
                )
                for topic_id in (s.topic_id, uuid.uuid4())
            ]
            request = AlterPartitionRequest(broker_id=1, broker_epoch=s.epochs[1], topics=by_id)
            response = await broker.call_over_wire(request, 3)
            assert response.error_code == ErrorCode.NONE
            known, unknown = sorted(response.topics, key=lambda t: t.topic_id != s.topic_id)
            assert known.topic_id == s.topic_id
            ((p,),) = [known.partitions]
            assert (p.error_code, p.leader_id, p.leader_epoch, p.isr, p.partition_epoch) == (
                0,
                1,
                0,
                [1, 2],
                1,
            )
            assert [q.error_code for q in unknown.partitions] == [ErrorCode.UNKNOWN_TOPIC_ID]

            def by_name(isr: list[int]) -> AlterPartitionRequest:
                partition = PartitionData(partition_index=0, leader_epoch=0, new_isr=isr, partition_epoch=1)
                return AlterPartitionRequest(
                    broker_id=1,
                    broker_epoch=s.epochs[1],
                    topics=[TopicData(topic_name="t", partitions=[partition])],
                )

            # v1 has no INELIGIBLE_REPLICA (KIP-841 came with v2): Kafka answers OPERATION_NOT_ATTEMPTED
            response = await broker.call_over_wire(by_name([1, 4]), 1)
            ((topic,),) = [response.topics]
            assert (topic.topic_name, topic.partitions[0].error_code) == (
                "t",
                ErrorCode.OPERATION_NOT_ATTEMPTED,
            )
            response = await broker.call_over_wire(by_name([1, 2, 3]), 1)
            assert (
                response.topics[0].partitions[0].isr,
                response.topics[0].partitions[0].partition_epoch,
            ) == (
                [1, 2, 3],
                2,
            )
            stale = AlterPartitionRequest(broker_id=1, broker_epoch=s.epochs[1] - 1, topics=by_id)
            response = await broker.call_over_wire(stale, 3)
            assert (response.error_code, response.topics) == (ErrorCode.STALE_BROKER_EPOCH, [])
        finally:
            broker.close()

    run(connect_zk, scenario)


def test_with_unclean_election_a_partition_whose_isr_is_gone_comes_back_with_the_first_replica_to_return(
    connect_zk: Callable[[], ZooKeeperClient], caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario(s: Setup) -> None:
        await create(s, "dirty", {"unclean.leader.election.enable": "true"})
        assert await s.alter(replace(change((1,), 0), topic="dirty")) == (ErrorCode.NONE, [ErrorCode.NONE])
        await leave(s, 2)
        await leave(s, 1)
        dirty = await wait_state(s, lambda z: z.leader == -1, "dirty")
        assert list(dirty.isr) == [1]
        assert not unclean_warnings(caplog, "dirty")

        await asyncio.to_thread(brokers.register_broker, s.zk, s.fakes[2].registration())
        dirty = await wait_state(s, lambda z: z.leader == 2, "dirty")
        assert list(dirty.isr) == [2]
        (warning,) = unclean_warnings(caplog, "dirty")
        assert "broker 2" in warning and "[1]" in warning

    caplog.set_level(logging.INFO)
    run(connect_zk, scenario)


@pytest.mark.parametrize(("ibp", "recovering"), [("3.9-IV0", True), ("3.2-IV0", True), ("3.1", False)])
def test_an_unclean_leader_is_recovering_from_inter_broker_protocol_3_2_until_its_alter_partition(
    connect_zk: Callable[[], ZooKeeperClient], ibp: str, recovering: bool
) -> None:
    """KIP-704, as Kafka's ZooKeeper controller (Election.leaderForOffline): from 3.2-IV0 a leader
    elected from outside the ISR is written and told RECOVERING; its first AlterPartition (RECOVERED)
    ends it, and a recovered partition never goes back. Before 3.2-IV0 nothing is marked."""
    LAI = ApiKey.LEADER_AND_ISR

    async def scenario(s: Setup) -> None:
        await create(s, "dirty", {"unclean.leader.election.enable": "true"})
        assert await s.alter(replace(change((1,), 0), topic="dirty")) == (ErrorCode.NONE, [ErrorCode.NONE])
        s.fakes[2].clear()
        await leave(s, 1)
        dirty = await wait_state(s, lambda z: z.leader == 2, "dirty")
        assert dirty.leader_recovery_state == (1 if recovering else 0)
        raw, _ = await asyncio.to_thread(s.zk.kazoo.get, paths.partition_state("dirty", 0))
        assert ('"leader_recovery_state"' in raw.decode()) is recovering
        await s.fakes[2].wait_for(
            lambda f: any(t.topic_name == "dirty" for r in f.requests_of(LAI) for t in r.topic_states)
        )
        told = [
            p.leader_recovery_state
            for r in s.fakes[2].requests_of(LAI)
            for t in r.topic_states
            if t.topic_name == "dirty"
            for p in t.partition_states
        ]
        assert told[-1] == (1 if recovering else 0)
        _, partition_epoch = await s.state_of("dirty")
        if recovering:  # a recovering leader may not add followers while it says it is recovering
            still = replace(
                change((2, 1), partition_epoch, leader_epoch=1), topic="dirty", leader_recovery_state=1
            )
            assert await s.alter(still, broker_id=2) == (ErrorCode.NONE, [ErrorCode.INVALID_REQUEST])
        recovered = replace(
            change((2,), partition_epoch, leader_epoch=1), topic="dirty", leader_recovery_state=0
        )
        assert (await s.alter(recovered, broker_id=2))[1] == [ErrorCode.NONE]
        dirty = await wait_state(s, lambda z: z.leader_recovery_state == 0, "dirty")
        _, partition_epoch = await s.state_of("dirty")
        back = replace(change((2,), partition_epoch, leader_epoch=1), topic="dirty", leader_recovery_state=1)
        assert await s.alter(back, broker_id=2) == (ErrorCode.NONE, [ErrorCode.INVALID_REQUEST])

    config = ControllerConfig(broker_id=1, inter_broker_versions=InterBrokerVersions.at(ibp))
    run(connect_zk, scenario, config)
