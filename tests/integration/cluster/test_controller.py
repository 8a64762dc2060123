"""The controller on a real ZooKeeper, talking to fake brokers (tests/support/fake_broker.py)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import pytest

from odradek.cluster.controller import events, isr_changes, requests
from odradek.cluster.controller.channel import ControllerChannelManager
from odradek.cluster.controller.config import ControllerConfig
from odradek.cluster.controller.context import TopicPartition
from odradek.cluster.controller.controller import KafkaController, NotControllerError
from odradek.cluster.controller.leader_elections import PREFERRED_ELECTION
from odradek.cluster.zookeeper import brokers, paths, topics
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.cluster.zookeeper.controller_election import active_controller, elect_controller
from odradek.cluster.zookeeper.topic_znodes import PartitionStateZnode, TopicAssignmentZnode
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages import RESPONSES
from odradek.protocol.messages.stop_replica import StopReplicaRequest
from tests.support.broker_process import free_port
from tests.support.fake_broker import FakeBroker, Received
from tests.support.zookeeper import ZooKeeperServer, expire_session

LAI, UM, SR = ApiKey.LEADER_AND_ISR, ApiKey.UPDATE_METADATA, ApiKey.STOP_REPLICA


@dataclass
class Cluster:
    zk: ZooKeeperClient
    brokers: dict[int, FakeBroker]
    connect: Callable[[], ZooKeeperClient]
    controllers: list[KafkaController]

    async def register(self, broker_id: int) -> int:
        return await asyncio.to_thread(
            brokers.register_broker, self.zk, self.brokers[broker_id].registration()
        )

    async def leave(self, broker_id: int) -> None:
        """The broker's registration goes, as when its session ends."""
        await asyncio.to_thread(self.zk.kazoo.delete, paths.broker(broker_id))

    async def controller(self, broker_id: int, config: ControllerConfig | None = None) -> KafkaController:
        controller = KafkaController(self.connect(), config or ControllerConfig(broker_id=broker_id))
        self.controllers.append(controller)
        await controller.start()
        await controller.wait_idle()
        return controller

    async def create_topic(self, topic: str, assignment: dict[int, list[int]]) -> uuid.UUID:
        topic_id = uuid.uuid4()
        await asyncio.to_thread(
            topics.create_topic, self.zk, topic, TopicAssignmentZnode(assignment, topic_id), {}
        )
        return topic_id

    async def state(self, topic: str, partition: int) -> tuple[PartitionStateZnode, int] | None:
        return await asyncio.to_thread(topics.partition_state, self.zk, topic, partition)

    async def wait_state(
        self, topic: str, partition: int, check: Callable[[PartitionStateZnode], bool], timeout: float = 10.0
    ) -> tuple[PartitionStateZnode, int]:
        deadline = time.monotonic() + timeout
        while True:
            found = await self.state(topic, partition)
            if found is not None and check(found[0]):
                return found
            if time.monotonic() > deadline:
                raise TimeoutError(f"{topic}-{partition} state is {found}")
            await asyncio.sleep(0.05)


def run(
    connect_zk: Callable[[], ZooKeeperClient],
    broker_ids: Sequence[int],
    scenario: Callable[[Cluster], Awaitable[None]],
) -> None:
    async def main() -> None:
        async with cluster(connect_zk, broker_ids) as c:
            await asyncio.wait_for(scenario(c), 60)

    asyncio.run(main())


@asynccontextmanager
async def cluster(
    connect_zk: Callable[[], ZooKeeperClient], broker_ids: Sequence[int]
) -> AsyncIterator[Cluster]:
    zk = connect_zk()
    zk.ensure_persistent_paths()
    fakes = {b: await FakeBroker(b).start() for b in broker_ids}
    c = Cluster(zk, fakes, connect_zk, [])
    for broker_id in broker_ids:
        await c.register(broker_id)
    try:
        yield c
    finally:
        for controller in c.controllers:
            await controller.stop()
        for fake in fakes.values():
            await fake.stop()


def partitions_in(requests: list[object]) -> set[tuple[str, int]]:
    """(topic, partition) of every partition state in LeaderAndIsr or UpdateMetadata requests."""
    return {
        (t.topic_name, p.partition_index)
        for r in requests
        for t in r.topic_states
        for p in t.partition_states
    }  # type: ignore[attr-defined]


def test_two_controllers_racing_one_wins(connect_zk: Callable[[], ZooKeeperClient]) -> None:
    async def scenario(c: Cluster) -> None:
        first, second = await asyncio.gather(c.controller(1), c.controller(2))
        await first.wait_idle()
        await second.wait_idle()
        assert [first.is_active, second.is_active].count(True) == 1
        winner = first if first.is_active else second
        found = await asyncio.to_thread(active_controller, c.zk)
        assert found is not None and found.broker_id == winner.broker_id

        # the winner goes: the other takes over, with the next epoch
        loser = second if winner is first else first
        epoch = winner.fence.epoch  # type: ignore[union-attr]
        await winner.stop()
        winner.zk.close()
        deadline = time.monotonic() + 10
        while not loser.is_active:
            assert time.monotonic() < deadline, "no failover"
            await asyncio.sleep(0.05)
        assert loser.fence is not None and loser.fence.epoch == epoch + 1

    run(connect_zk, [1, 2], scenario)


def test_failover_sends_update_metadata_before_leader_and_isr(
    connect_zk: Callable[[], ZooKeeperClient],
) -> None:
    async def scenario(c: Cluster) -> None:
        # a topic without states: the new controller must elect, but tell every broker first
        await c.create_topic("t", {0: [1, 2], 1: [2, 3], 2: [3, 1]})
        controller = await c.controller(1)
        assert controller.is_active
        for fake in c.brokers.values():
            await fake.wait_for(lambda f: LAI in f.api_keys())
            keys = fake.api_keys()
            assert keys[0] == UM, keys
            assert keys.index(UM) < keys.index(LAI)
            assert all(r.controller_id == 1 for r in fake.requests_of(LAI) + fake.requests_of(UM))

        # a second controller takes over: UpdateMetadata with every partition to every broker first
        standby = await c.controller(2)
        for fake in c.brokers.values():
            fake.clear()
        await controller.stop()
        controller.zk.close()
        for fake in c.brokers.values():
            await fake.wait_for(lambda f: bool(f.received))
            first = fake.received[0]
            assert first.api_key == UM and first.body.controller_id == 2
            assert partitions_in([first.body]) == {("t", 0), ("t", 1), ("t", 2)}
            assert first.body.controller_epoch == standby.fence.epoch  # type: ignore[union-attr]
            assert {b.id for b in first.body.live_brokers} == {1, 2, 3}

    run(connect_zk, [1, 2, 3], scenario)


def test_a_new_controller_tells_every_live_replica_its_partitions_leadership(
    connect_zk: Callable[[], ZooKeeperClient],
) -> None:
    async def scenario(c: Cluster) -> None:
        # The previous controller may stop with decisions written but not delivered (its own
        # controlled shutdown): the next one repeats every leadership to the replicas, after the
        # UpdateMetadata, as Kafka's ReplicaStateMachine.startup.
        await c.create_topic("t", {0: [1, 2], 1: [2, 3], 2: [3, 1]})
        controller = await c.controller(1)
        await c.controller(2)
        for fake in c.brokers.values():
            await fake.wait_for(lambda f: LAI in f.api_keys())
            fake.clear()
        await controller.stop()
        controller.zk.close()
        hosted = {1: {("t", 0), ("t", 2)}, 2: {("t", 0), ("t", 1)}, 3: {("t", 1), ("t", 2)}}
        for broker_id, fake in c.brokers.items():
            wanted = hosted[broker_id]
            await fake.wait_for(lambda f, wanted=wanted: partitions_in(f.requests_of(LAI)) == wanted, 30)
            keys = fake.api_keys()
            assert keys.index(UM) < keys.index(LAI), keys
            assert all(r.controller_id == 2 for r in fake.requests_of(LAI))

    run(connect_zk, [1, 2, 3], scenario)


def test_a_new_topic_gets_partition_states_and_its_replicas_are_told(
    connect_zk: Callable[[], ZooKeeperClient],
) -> None:
    async def scenario(c: Cluster) -> None:
        controller = await c.controller(1)
        epoch = controller.fence.epoch  # type: ignore[union-attr]
        await c.leave(3)  # replicas on a dead broker stay out of the ISR
        await controller.wait_idle()
        c.brokers[3].clear()
        topic_id = await c.create_topic("t", {0: [1, 2], 1: [2, 3], 2: [3, 1]})
        s0, v0 = await c.wait_state("t", 0, lambda s: True)
        s1, _ = await c.wait_state("t", 1, lambda s: True)
        s2, _ = await c.wait_state("t", 2, lambda s: True)
        assert (s0.leader, list(s0.isr), s0.leader_epoch, s0.controller_epoch, v0) == (1, [1, 2], 0, epoch, 0)
        assert (s1.leader, list(s1.isr)) == (2, [2])  # the first live replica leads
        assert (s2.leader, list(s2.isr)) == (1, [1])
        raw = await asyncio.to_thread(c.zk.read, paths.partition_state("t", 0))
        assert raw is not None and raw[0] == (
            b'{"version":1,"leader":1,"leader_epoch":0,"isr":[1,2],"controller_epoch":%d}' % epoch
        )

        await controller.wait_idle()
        one, two, three = c.brokers[1], c.brokers[2], c.brokers[3]
        await one.wait_for(lambda f: ("t", 0) in partitions_in(f.requests_of(LAI)))
        await two.wait_for(lambda f: ("t", 1) in partitions_in(f.requests_of(LAI)))
        assert partitions_in(one.requests_of(LAI)) == {("t", 0), ("t", 2)}
        assert partitions_in(two.requests_of(LAI)) == {("t", 0), ("t", 1)}
        assert not three.received  # gone: nothing more is sent to it
        request = one.requests_of(LAI)[-1]
        assert request.topic_states[0].topic_id == topic_id
        assert all(p.is_new for p in request.topic_states[0].partition_states)
        for fake in (one, two):
            await fake.wait_for(lambda f: ("t", 2) in partitions_in(f.requests_of(UM)))

    run(connect_zk, [1, 2, 3], scenario)


def test_a_new_controller_takes_brokers_that_died_meanwhile_out_of_every_isr(
    connect_zk: Callable[[], ZooKeeperClient],
) -> None:
    async def scenario(c: Cluster) -> None:
        controller = await c.controller(1)
        await c.create_topic("t", {0: [1, 2, 3], 1: [2, 3, 1]})
        await c.wait_state("t", 1, lambda s: True)
        await controller.wait_idle()
        # broker 1, the controller, dies: nobody is controller when its registration goes
        await controller.stop()
        controller.zk.close()
        await c.leave(1)

        await c.controller(2)
        s0, _ = await c.wait_state("t", 0, lambda s: s.leader_epoch == 1)
        assert (s0.leader, list(s0.isr)) == (2, [2, 3])
        # broker 1 only followed partition 1: it leaves the ISR all the same, or acks=all would wait
        # replica.lag.time.max.ms for it
        s1, _ = await c.wait_state("t", 1, lambda s: s.leader_epoch == 1)
        assert (s1.leader, list(s1.isr)) == (2, [2, 3])

    run(connect_zk, [1, 2, 3], scenario)


def test_a_broker_leaving_moves_leadership_along_the_isr_then_the_partition_goes_offline(
    connect_zk: Callable[[], ZooKeeperClient],
) -> None:
    async def scenario(c: Cluster) -> None:
        controller = await c.controller(1)
        await c.create_topic("t", {0: [1, 2, 3], 1: [2, 1], 2: [3, 2]})
        await c.wait_state("t", 2, lambda s: True)
        await controller.wait_idle()

        await c.leave(1)
        s0, _ = await c.wait_state("t", 0, lambda s: s.leader_epoch == 1)
        assert (s0.leader, list(s0.isr)) == (2, [2, 3])  # next in assignment order, in the ISR
        s1, _ = await c.wait_state("t", 1, lambda s: s.leader_epoch == 1)
        assert (s1.leader, list(s1.isr)) == (2, [2])  # an ISR shrink by the controller bumps the epoch
        s2, v2 = await c.wait_state("t", 2, lambda s: True)
        assert (s2.leader, s2.leader_epoch, v2) == (3, 0, 0)  # untouched
        await controller.wait_idle()
        await c.brokers[3].wait_for(
            lambda f: any(
                p.leader == 2 and p.leader_epoch == 1
                for r in f.requests_of(LAI)
                for t in r.topic_states
                for p in t.partition_states
            )
        )

        await c.leave(2)
        s0, _ = await c.wait_state("t", 0, lambda s: s.leader_epoch == 2)
        assert (s0.leader, list(s0.isr)) == (3, [3])
        # partition 1 had only broker 2 in its ISR: offline, never a stale leader, 2 kept in the ISR
        s1, _ = await c.wait_state("t", 1, lambda s: s.leader_epoch == 2)
        assert (s1.leader, list(s1.isr)) == (-1, [2])

        await c.leave(3)
        s0, _ = await c.wait_state("t", 0, lambda s: s.leader_epoch == 3)
        assert (s0.leader, list(s0.isr)) == (-1, [3])

        # broker 1 comes back: not in partition 1's ISR, so it stays offline (no unclean election)
        c.brokers[1].clear()
        await c.register(1)
        await c.brokers[1].wait_for(lambda f: UM in f.api_keys())
        await controller.wait_idle()
        s1, _ = await c.wait_state("t", 1, lambda s: True)
        assert (s1.leader, list(s1.isr)) == (-1, [2])
        # broker 2 comes back: it is in the ISR, it leads again
        await c.register(2)
        s1, _ = await c.wait_state("t", 1, lambda s: s.leader == 2)
        assert list(s1.isr) == [2] and s1.leader_epoch == 3

    run(connect_zk, [1, 2, 3], scenario)


def test_a_bounced_broker_is_a_failure_then_a_join(connect_zk: Callable[[], ZooKeeperClient]) -> None:
    async def scenario(c: Cluster) -> None:
        controller = await c.controller(1)
        await c.create_topic("t", {0: [2, 3], 1: [3, 2]})
        await c.wait_state("t", 1, lambda s: True)
        await controller.wait_idle()
        old_epoch = controller.context.live_brokers[2].epoch  # type: ignore[union-attr]
        c.brokers[2].clear()

        # broker 2 restarts faster than the controller notices: same id, new registration
        await asyncio.to_thread(c.zk.kazoo.delete, paths.broker(2))
        new_epoch = await c.register(2)
        assert new_epoch > old_epoch
        s0, _ = await c.wait_state("t", 0, lambda s: s.leader_epoch >= 1)
        assert (s0.leader, list(s0.isr)) == (3, [3])  # its leadership moved, it left the ISR
        s1, _ = await c.wait_state("t", 1, lambda s: s.leader_epoch >= 1)
        assert (s1.leader, list(s1.isr)) == (3, [3])
        await c.brokers[2].wait_for(lambda f: ("t", 0) in partitions_in(f.requests_of(LAI)))
        await controller.wait_idle()
        # its new incarnation is addressed with its new epoch, and learns its replicas
        sent = c.brokers[2].requests_of(LAI) + c.brokers[2].requests_of(UM)
        assert sent and all(r.broker_epoch == new_epoch for r in sent)
        assert partitions_in(c.brokers[2].requests_of(LAI)) == {("t", 0), ("t", 1)}

    run(connect_zk, [1, 2, 3], scenario)


def test_topic_deletion_stops_the_replicas_then_removes_the_znodes(
    connect_zk: Callable[[], ZooKeeperClient],
) -> None:
    async def scenario(c: Cluster) -> None:
        controller = await c.controller(1)
        await c.create_topic("gone", {0: [1, 2], 1: [2, 3]})
        await c.create_topic("kept", {0: [3]})
        await c.wait_state("gone", 1, lambda s: True)
        await c.wait_state("kept", 0, lambda s: True)
        await controller.wait_idle()
        for fake in c.brokers.values():
            fake.clear()

        await asyncio.to_thread(topics.mark_topic_for_deletion, c.zk, "gone")
        deadline = time.monotonic() + 10
        while await asyncio.to_thread(c.zk.read, paths.delete_topic_marker("gone")) is not None:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.05)
        assert await asyncio.to_thread(c.zk.read, paths.topic("gone")) is None
        assert await asyncio.to_thread(c.zk.read, paths.config_entity("topics", "gone")) is None
        assert await asyncio.to_thread(c.zk.read, paths.topic("kept")) is not None

        expected = {1: {("gone", 0)}, 2: {("gone", 0), ("gone", 1)}, 3: {("gone", 1)}}
        for broker_id, fake in c.brokers.items():
            await fake.wait_for(lambda f: SR in f.api_keys())
            (stop,) = fake.requests_of(SR)
            states = [(t.topic_name, p) for t in stop.topic_states for p in t.partition_states]
            assert {(t, p.partition_index) for t, p in states} == expected[broker_id]
            assert all(p.delete_partition and p.leader_epoch == -2 for _, p in states)
            # brokers forget it first (UpdateMetadata, leader -2), as Kafka's TopicDeletionManager
            keys = fake.api_keys()
            assert keys.index(UM) < keys.index(SR)
            forget = fake.requests_of(UM)[0]
            assert {p.leader for t in forget.topic_states for p in t.partition_states} == {-2}

    run(connect_zk, [1, 2, 3], scenario)


def test_a_stale_controller_cannot_write_and_sends_nothing_more(
    connect_zk: Callable[[], ZooKeeperClient], zookeeper_server: ZooKeeperServer
) -> None:
    async def scenario(c: Cluster) -> None:
        stale = await c.controller(1)
        await c.create_topic("before", {0: [1, 2]})
        await c.wait_state("before", 0, lambda s: True)
        await stale.wait_idle()
        assert stale.is_active

        # Everything below runs without yielding to the loop, as if the controller were paused: its
        # session expires, another broker is elected, a topic is created, and the stale controller
        # handles that topic before it hears of any of it.
        expire_session(stale.zk.kazoo, zookeeper_server.connect_string)
        other = c.connect()
        fresh = elect_controller(other, 2)
        topics.create_topic(c.zk, "after", TopicAssignmentZnode({0: [1, 2]}, uuid.uuid4()), {})
        for fake in c.brokers.values():
            fake.clear()
        stale.events.put(events.TopicChange())

        await stale.wait_idle()
        assert not stale.is_active and stale.context is None and stale.channel is None
        assert await c.state("after", 0) is None  # its write failed on the epoch check
        epoch = await asyncio.to_thread(lambda: c.zk.read(paths.CONTROLLER_EPOCH))
        assert epoch is not None and int(epoch[0] or b"0") == fresh.epoch
        found = await asyncio.to_thread(active_controller, c.zk)
        assert found is not None and found.broker_id == 2
        await asyncio.sleep(0.5)
        for fake in c.brokers.values():
            assert not fake.received, fake.api_keys()

    run(connect_zk, [1, 2], scenario)


def test_partitions_added_to_a_topic_get_states_and_their_replicas_are_told(
    connect_zk: Callable[[], ZooKeeperClient],
) -> None:
    async def scenario(c: Cluster) -> None:
        controller = await c.controller(1)
        topic_id = await c.create_topic("t", {0: [1, 2]})
        await c.wait_state("t", 0, lambda s: True)
        await controller.wait_idle()
        for fake in c.brokers.values():
            fake.clear()

        # CreatePartitions rewrites the assignment with the new partitions (the old ones unchanged)
        grown = TopicAssignmentZnode({0: [1, 2], 1: [2, 1], 2: [1, 2]}, topic_id)
        await asyncio.to_thread(c.zk.kazoo.set, paths.topic("t"), grown.serialize())
        s1, _ = await c.wait_state("t", 1, lambda s: True)
        s2, _ = await c.wait_state("t", 2, lambda s: True)
        assert (s1.leader, list(s1.isr), s1.leader_epoch) == (2, [2, 1], 0)
        assert (s2.leader, list(s2.isr), s2.leader_epoch) == (1, [1, 2], 0)
        s0, v0 = await c.wait_state("t", 0, lambda s: True)
        assert (s0.leader_epoch, v0) == (0, 0)  # untouched
        await controller.wait_idle()
        for fake in c.brokers.values():
            await fake.wait_for(lambda f: partitions_in(f.requests_of(LAI)) == {("t", 1), ("t", 2)})
            assert all(
                p.is_new for r in fake.requests_of(LAI) for t in r.topic_states for p in t.partition_states
            )

    run(connect_zk, [1, 2], scenario)


def test_the_channel_queues_while_a_broker_is_unreachable_and_sends_in_order() -> None:
    async def main() -> None:
        fake = FakeBroker(7)
        fake.port = free_port()  # nothing listens there yet
        channel = ControllerChannelManager(controller_id=1)
        channel.add_broker(7, fake.host, fake.port)
        for epoch in range(3):
            channel.send(
                7, requests.BrokerRequest(StopReplicaRequest(controller_id=1, controller_epoch=epoch), 4)
            )
        await asyncio.sleep(0.3)  # a few failed connection attempts
        await fake.start()
        try:
            await fake.wait_for(lambda f: len(f.received) == 3)
            assert [r.body.controller_epoch for r in fake.received] == [0, 1, 2]
            assert {r.header.client_id for r in fake.received} == {"controller-1"}
            # a broker that left: what was queued for it is dropped, nothing more is sent
            channel.remove_broker(7)
            channel.send(
                7, requests.BrokerRequest(StopReplicaRequest(controller_id=1, controller_epoch=9), 4)
            )
            await asyncio.sleep(0.2)
            assert len(fake.received) == 3
        finally:
            await channel.close()
            await fake.stop()

    asyncio.run(main())


def test_a_controller_stopping_delivers_what_it_queued_for_other_brokers_first(
    connect_zk: Callable[[], ZooKeeperClient],
) -> None:
    async def scenario(c: Cluster) -> None:
        # Its own controlled shutdown's ISR changes are the last thing a controller decides: the other
        # brokers should have them before the channels close, not only when the next controller repeats
        # them (meanwhile a leader and its follower disagree on the epoch and the follower backs off).
        await c.create_topic("t", {0: [1, 2, 3]})
        controller = await c.controller(1)
        await controller.wait_idle()
        await c.brokers[2].wait_for(lambda f: LAI in f.api_keys())
        c.brokers[2].clear()

        async def slowly(received: Received) -> Any:  # a broker slow to answer
            await asyncio.sleep(0.3)
            return RESPONSES[received.header.request_api_key](error_code=0)

        c.brokers[2].responder = slowly
        assert controller.term is not None
        for epoch in range(3):
            request = StopReplicaRequest(controller_id=1, controller_epoch=epoch)
            controller.term.send(2, requests.BrokerRequest(request, 4))
        await controller.stop()
        assert [r.controller_epoch for r in c.brokers[2].requests_of(SR)] == [0, 1, 2]

    run(connect_zk, [1, 2], scenario)


def test_controlled_shutdown_moves_leaderships_away_and_leaves_the_isrs(
    connect_zk: Callable[[], ZooKeeperClient],
) -> None:
    async def scenario(c: Cluster) -> None:
        controller = await c.controller(1)
        await c.create_topic("t", {0: [2, 3], 1: [3, 2], 2: [2]})
        await c.wait_state("t", 2, lambda s: True)
        await controller.wait_idle()
        epoch = controller.context.live_brokers[2].epoch  # type: ignore[union-attr]

        stale = await controller.controlled_shutdown(2, epoch - 1)
        assert stale.error == ErrorCode.STALE_BROKER_EPOCH
        unknown = await controller.controlled_shutdown(9, -1)
        assert unknown.error == ErrorCode.BROKER_NOT_AVAILABLE
        for fake in c.brokers.values():
            fake.clear()

        result = await controller.controlled_shutdown(2, epoch)
        # a single replica has nowhere to go: still led by 2, but not "remaining" (Kafka's
        # replicatedPartitionsBrokerLeads), or a broker with one would retry until it gives up
        assert result.error == ErrorCode.NONE and result.remaining == []
        s0, _ = await c.wait_state("t", 0, lambda s: True)
        assert (s0.leader, list(s0.isr), s0.leader_epoch) == (3, [3], 1)  # led: moved, 2 out of the ISR
        s1, _ = await c.wait_state("t", 1, lambda s: True)
        assert (s1.leader, list(s1.isr), s1.leader_epoch) == (3, [3], 1)  # followed: 2 out of the ISR
        s2, _ = await c.wait_state("t", 2, lambda s: True)
        assert (s2.leader, s2.leader_epoch) == (2, 0)
        two, three = c.brokers[2], c.brokers[3]
        await two.wait_for(lambda f: SR in f.api_keys())
        (stop,) = two.requests_of(SR)
        assert [
            (t.topic_name, p.partition_index, p.delete_partition)
            for t in stop.topic_states
            for p in t.partition_states
        ] == [("t", 1, False)]
        await three.wait_for(lambda f: partitions_in(f.requests_of(LAI)) == {("t", 0), ("t", 1)})
        # broker 2, shutting down, is told it follows partition 0 now, but not about the ISR it left
        await two.wait_for(lambda f: ("t", 0) in partitions_in(f.requests_of(LAI)))
        assert ("t", 1) not in partitions_in(two.requests_of(LAI))

        # a broker shutting down is never elected: 3 goes, partition 0 goes offline rather than to 2
        await c.leave(3)
        s0, _ = await c.wait_state("t", 0, lambda s: s.leader_epoch == 2)
        assert (s0.leader, list(s0.isr)) == (-1, [3])

    run(connect_zk, [1, 2, 3], scenario)


def test_a_broker_that_shut_down_and_registered_again_unnoticed_is_no_longer_shutting_down(
    connect_zk: Callable[[], ZooKeeperClient],
) -> None:
    """A bounce (the controller finds a new registration where it knew the old one) is a failure, then
    a start-up (Kafka's processBrokerChange): the failure forgets that the broker was shutting down
    (onBrokerFailure), else its new incarnation could never rejoin an ISR or be elected."""

    async def scenario(c: Cluster) -> None:
        controller = await c.controller(1)
        await c.create_topic("t", {0: [2, 3]})
        await c.wait_state("t", 0, lambda s: True)
        await controller.wait_idle()
        context = controller.context
        assert context is not None
        assert (
            await controller.controlled_shutdown(2, context.live_brokers[2].epoch)
        ).error == ErrorCode.NONE
        assert 2 in context.shutting_down
        # it stops and is back before the controller looks: one change of /brokers/ids
        transaction = c.zk.kazoo.transaction()
        transaction.delete(paths.broker(2))
        transaction.create(paths.broker(2), c.brokers[2].registration().serialize(), ephemeral=True)
        await asyncio.to_thread(transaction.commit)
        new_epoch = await asyncio.to_thread(brokers.broker_epoch, c.zk, 2)
        deadline = time.monotonic() + 10
        while context.live_brokers[2].epoch != new_epoch:
            assert time.monotonic() < deadline, "the bounce was not handled"
            await asyncio.sleep(0.02)
        await controller.wait_idle()
        assert 2 not in context.shutting_down
        # its leader may take it back into the ISR
        znode, version = await c.wait_state("t", 0, lambda s: s.leader == 3)
        back = isr_changes.IsrChangeRequest(
            topic="t",
            topic_id=None,
            partition=0,
            leader_epoch=znode.leader_epoch,
            new_isr=(3, 2),
            member_epochs=(-1, new_epoch),
            leader_recovery_state=0,
            partition_epoch=version,
        )
        result = await controller.alter_partition(3, context.live_brokers[3].epoch, [back])
        assert [o.error for o in result.outcomes] == [ErrorCode.NONE]

    run(connect_zk, [1, 2, 3], scenario)


def test_a_controller_that_is_not_answers_not_controller(connect_zk: Callable[[], ZooKeeperClient]) -> None:
    async def scenario(c: Cluster) -> None:
        active = await c.controller(1)
        standby = await c.controller(2)
        assert active.is_active and not standby.is_active
        result = await standby.controlled_shutdown(1, -1)
        assert result.error == ErrorCode.NOT_CONTROLLER
        with pytest.raises(NotControllerError):
            await standby.elect_leaders(PREFERRED_ELECTION, None)

    run(connect_zk, [1, 2], scenario)


def test_preferred_election_on_request_and_automatic(connect_zk: Callable[[], ZooKeeperClient]) -> None:
    async def scenario(c: Cluster) -> None:
        # states a previous controller left: broker 2 leads partitions that prefer 1, 1 is in sync
        await c.create_topic("t", {0: [1, 2], 1: [1, 2], 2: [2, 1], 3: [1, 2]})
        left = {
            0: PartitionStateZnode(2, 4, [2, 1], 1),
            1: PartitionStateZnode(2, 4, [2, 1], 1),
            2: PartitionStateZnode(2, 4, [2, 1], 1),
            3: PartitionStateZnode(2, 4, [2], 1),
        }
        previous = await asyncio.to_thread(elect_controller, c.connect(), 9)
        await asyncio.to_thread(topics.create_partition_states, previous, "t", left)
        await asyncio.to_thread(c.zk.kazoo.delete, paths.CONTROLLER)
        config = ControllerConfig(
            broker_id=3, leader_imbalance_check_interval_seconds=0.5, leader_imbalance_per_broker_percentage=0
        )
        controller = await c.controller(3, config)
        elected = await controller.elect_leaders(
            PREFERRED_ELECTION,
            [TopicPartition("t", 0), TopicPartition("t", 2), TopicPartition("t", 3), TopicPartition("x", 0)],
        )
        assert elected == {
            ("t", 0): ErrorCode.NONE,
            ("t", 2): ErrorCode.ELECTION_NOT_NEEDED,
            ("t", 3): ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,  # 1 is not in the ISR
            ("x", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        }
        s0, v0 = await c.wait_state("t", 0, lambda s: True)
        assert (s0.leader, list(s0.isr), s0.leader_epoch, v0) == (1, [2, 1], 5, 1)
        await c.brokers[2].wait_for(
            lambda f: any(
                p.partition_index == 0 and p.leader == 1
                for r in f.requests_of(LAI)
                for t in r.topic_states
                for p in t.partition_states
            )
        )
        # partition 1 is left to the automatic rebalance (imbalance above 0%); 3 cannot move
        s1, _ = await c.wait_state("t", 1, lambda s: s.leader == 1)
        assert s1.leader_epoch == 5
        await asyncio.sleep(1.0)
        s3, v3 = await c.wait_state("t", 3, lambda s: True)
        assert (s3.leader, v3) == (2, 0)

    run(connect_zk, [1, 2, 3], scenario)


def test_a_state_changed_behind_the_controllers_back_is_read_again_before_deciding(
    connect_zk: Callable[[], ZooKeeperClient],
) -> None:
    async def scenario(c: Cluster) -> None:
        controller = await c.controller(3)
        await c.create_topic("t", {0: [2, 1]})
        await c.leave(1)
        await c.wait_state("t", 0, lambda s: list(s.isr) == [2])
        await c.register(1)
        await controller.wait_idle()
        # the leader takes 1 back into the ISR (as AlterPartition will): the controller does not know
        state, version = await c.wait_state("t", 0, lambda s: True)
        caught_up = PartitionStateZnode(2, state.leader_epoch, [2, 1], state.controller_epoch)
        await asyncio.to_thread(c.zk.kazoo.set, paths.partition_state("t", 0), caught_up.serialize(), version)
        # 2 goes: from what it knew the partition goes offline, but its compare-and-set fails on the
        # partition epoch; it reads again, and 1, in the ISR, leads
        await c.leave(2)
        s0, _ = await c.wait_state("t", 0, lambda s: s.leader != 2)
        assert (s0.leader, list(s0.isr), s0.leader_epoch) == (1, [1], state.leader_epoch + 1)

    run(connect_zk, [1, 2, 3], scenario)


def test_a_registration_rewritten_in_place_reaches_every_broker(
    connect_zk: Callable[[], ZooKeeperClient],
) -> None:
    async def scenario(c: Cluster) -> None:
        controller = await c.controller(1)
        await controller.wait_idle()
        moved = await FakeBroker(2).start()  # broker 2, now listening elsewhere
        try:
            c.brokers[1].clear()
            await asyncio.to_thread(c.zk.kazoo.set, paths.broker(2), moved.registration().serialize())
            await moved.wait_for(lambda f: UM in f.api_keys())  # the channel follows the new endpoint

            def knows_new_port(fake: FakeBroker) -> bool:
                return any(
                    b.id == 2 and [e.port for e in b.endpoints] == [moved.port]
                    for r in fake.requests_of(UM)
                    for b in r.live_brokers
                )

            await c.brokers[1].wait_for(knows_new_port)
        finally:
            await moved.stop()

    run(connect_zk, [1, 2], scenario)


def test_a_controller_whose_session_expired_resigns_and_is_elected_again(
    connect_zk: Callable[[], ZooKeeperClient], zookeeper_server: ZooKeeperServer
) -> None:
    async def scenario(c: Cluster) -> None:
        controller = await c.controller(1)
        first_epoch = controller.fence.epoch  # type: ignore[union-attr]
        c.brokers[2].clear()
        await asyncio.to_thread(expire_session, controller.zk.kazoo, zookeeper_server.connect_string)
        deadline = time.monotonic() + 15
        while controller.fence is None or controller.fence.epoch == first_epoch:
            assert time.monotonic() < deadline, "not elected again"
            await asyncio.sleep(0.05)
        assert controller.fence.epoch == first_epoch + 1
        await c.brokers[2].wait_for(
            lambda f: any(r.controller_epoch == first_epoch + 1 for r in f.requests_of(UM))
        )

    run(connect_zk, [1, 2], scenario)


def test_a_topic_with_a_replica_down_is_deleted_once_that_broker_is_back(
    connect_zk: Callable[[], ZooKeeperClient],
) -> None:
    async def scenario(c: Cluster) -> None:
        controller = await c.controller(1)
        await c.create_topic("gone", {0: [2, 3]})
        await c.wait_state("gone", 0, lambda s: True)
        await c.leave(3)
        await c.wait_state("gone", 0, lambda s: s.leader_epoch == 1)
        await controller.wait_idle()

        await asyncio.to_thread(topics.mark_topic_for_deletion, c.zk, "gone")
        await c.brokers[2].wait_for(lambda f: SR in f.api_keys())
        await controller.wait_idle()
        # broker 3 still has its copy: the topic and its marker stay
        assert await asyncio.to_thread(c.zk.read, paths.topic("gone")) is not None
        assert await asyncio.to_thread(c.zk.read, paths.delete_topic_marker("gone")) is not None

        c.brokers[3].clear()
        await c.register(3)
        await c.brokers[3].wait_for(lambda f: SR in f.api_keys())
        (stop,) = c.brokers[3].requests_of(SR)
        assert [
            (t.topic_name, [p.delete_partition for p in t.partition_states]) for t in stop.topic_states
        ] == [("gone", [True])]
        # a topic being deleted gets no LeaderAndIsr on the broker's return
        assert ("gone", 0) not in partitions_in(c.brokers[3].requests_of(LAI))
        deadline = time.monotonic() + 10
        # the marker goes last
        while await asyncio.to_thread(c.zk.read, paths.delete_topic_marker("gone")) is not None:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.05)
        assert await asyncio.to_thread(c.zk.read, paths.topic("gone")) is None

    run(connect_zk, [1, 2, 3], scenario)


def test_an_election_for_a_topic_being_deleted_is_refused_as_an_invalid_topic_not_an_unknown_one(
    connect_zk: Callable[[], ZooKeeperClient],
) -> None:
    """KafkaController.processReplicaLeaderElection: a topic queued for deletion is INVALID_TOPIC_EXCEPTION
    ("The topic is being deleted"); it had been UNKNOWN_TOPIC_OR_PARTITION, as if it did not exist."""

    async def scenario(c: Cluster) -> None:
        controller = await c.controller(1)
        await c.create_topic("going", {0: [2, 3]})
        await c.wait_state("going", 0, lambda s: True)
        await c.leave(3)  # broker 3 keeps its copy: the deletion waits for it
        await c.wait_state("going", 0, lambda s: s.leader_epoch == 1)
        await asyncio.to_thread(topics.mark_topic_for_deletion, c.zk, "going")
        await c.brokers[2].wait_for(lambda f: SR in f.api_keys())
        await controller.wait_idle()
        elected = await controller.elect_leaders(PREFERRED_ELECTION, [TopicPartition("going", 0)])
        assert elected == {("going", 0): ErrorCode.INVALID_TOPIC_EXCEPTION}

    run(connect_zk, [1, 2, 3], scenario)


def test_a_new_controller_takes_the_replicas_of_brokers_that_died_with_the_old_one_out_of_the_isrs(
    connect_zk: Callable[[], ZooKeeperClient],
) -> None:
    async def scenario(c: Cluster) -> None:
        await c.create_topic("t", {0: [1, 2, 3], 1: [3, 1, 2]})
        old = await c.controller(3)
        await c.wait_state("t", 0, lambda s: s.leader == 1 and s.isr == [1, 2, 3])
        await c.wait_state("t", 1, lambda s: s.leader == 3)
        # Broker 3 dies with its controller: the next controller finds it gone from the start, as
        # Kafka's replica state machine does on failover (OfflineReplica): out of every ISR, so no
        # leader waits for it, and leadership moves where it led.
        await old.stop()
        old.zk.close()
        await c.leave(3)
        await c.controller(2)
        await c.wait_state("t", 0, lambda s: s.leader == 1 and s.isr == [1, 2])
        await c.wait_state("t", 1, lambda s: s.leader in (1, 2) and 3 not in s.isr)

    run(connect_zk, [1, 2, 3], scenario)
