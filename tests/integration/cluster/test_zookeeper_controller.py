"""Controller election and epoch-fenced writes in a real ZooKeeper, as Kafka 3.9 does them."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

import pytest

from odradek.cluster.zookeeper import paths, topics
from odradek.cluster.zookeeper.broker_znode import BrokerRegistration, ListenerEndpoint
from odradek.cluster.zookeeper.brokers import register_broker, registrations_version
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.cluster.zookeeper.cluster_znodes import ControllerZnode
from odradek.cluster.zookeeper.controller_election import (
    active_controller,
    elect_controller,
    read_controller_epoch,
)
from odradek.cluster.zookeeper.controller_fence import ControllerFence
from odradek.cluster.zookeeper.errors import ControllerMovedError, ZnodeVersionMovedError
from odradek.cluster.zookeeper.topic_znodes import PartitionStateZnode, TopicAssignmentZnode
from tests.support.zookeeper import ZooKeeperServer, expire_session


def race(clients: list[ZooKeeperClient]) -> dict[int, ControllerFence | Exception]:
    """Every client tries to become controller at the same moment; what each got, by broker id."""
    outcomes: dict[int, ControllerFence | Exception] = {}
    start = threading.Barrier(len(clients))

    def run(broker_id: int, client: ZooKeeperClient) -> None:
        start.wait()
        try:
            outcomes[broker_id] = elect_controller(client, broker_id)
        except ControllerMovedError as error:
            outcomes[broker_id] = error

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(clients, start=1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return outcomes


def test_of_brokers_racing_exactly_one_becomes_controller_with_the_next_epoch(
    connect_zk: Callable[[], ZooKeeperClient],
) -> None:
    clients = [connect_zk() for _ in range(3)]
    for round_number in range(1, 4):
        outcomes = race(clients)
        winners = {b: o for b, o in outcomes.items() if isinstance(o, ControllerFence)}
        assert len(outcomes) == 3 and len(winners) == 1, outcomes
        ((winner_id, fence),) = winners.items()
        assert fence.epoch == round_number  # /controller_epoch created at 0, each election +1
        controller = active_controller(clients[0])
        assert controller is not None and controller.broker_id == winner_id
        epoch = read_controller_epoch(clients[0])
        assert epoch is not None and (epoch.epoch, epoch.epoch_zk_version) == (
            round_number,
            fence.epoch_zk_version,
        )
        clients[0].kazoo.delete(paths.CONTROLLER)  # the controller goes: the next round elects again


def test_a_stale_controller_cannot_write(
    connect_zk: Callable[[], ZooKeeperClient], zookeeper_server: ZooKeeperServer
) -> None:
    """Controller 1 pauses past its session; 2 is elected; 1's writes fail on the epoch and change nothing."""
    first, second = connect_zk(), connect_zk()
    first.ensure_persistent_paths()
    topics.create_topic_assignment(first, "t", TopicAssignmentZnode({0: [1, 2]}))
    stale = elect_controller(first, 1)
    topics.create_partition_states(stale, "t", {0: PartitionStateZnode(1, 0, [1, 2], stale.epoch)})
    with pytest.raises(ControllerMovedError):
        elect_controller(second, 2)  # 1 is controller

    expire_session(first.kazoo, zookeeper_server.connect_string)
    assert active_controller(second) is None  # /controller was ephemeral
    fresh = elect_controller(second, 2)
    assert fresh.epoch == stale.epoch + 1

    before = topics.partition_state(second, "t", 0)
    with pytest.raises(ControllerMovedError, match=r"controller epoch 1 is over"):
        topics.update_partition_state(
            stale, "t", 0, PartitionStateZnode(2, 1, [2], stale.epoch), 0, registrations_version(second)
        )
    with pytest.raises(ControllerMovedError):
        topics.create_partition_states(stale, "t", {1: PartitionStateZnode(1, 0, [1], stale.epoch)})
    with pytest.raises(ControllerMovedError):
        topics.delete_topic_znodes(stale, "t")
    assert topics.partition_state(second, "t", 0) == before
    assert topics.partition_state(second, "t", 1) is None
    # the new controller writes
    written = PartitionStateZnode(2, 1, [2], fresh.epoch)
    assert topics.update_partition_state(fresh, "t", 0, written, 0, registrations_version(second)) == 1


def test_partition_state_is_compare_and_set_on_the_partition_epoch(zk: ZooKeeperClient) -> None:
    fence = elect_controller(zk, 1)
    topics.create_topic_assignment(zk, "t", TopicAssignmentZnode({0: [1, 2, 3]}))
    topics.create_partition_states(fence, "t", {0: PartitionStateZnode(1, 0, [1, 2, 3], fence.epoch)})
    assert topics.partition_state(zk, "t", 0) == (PartitionStateZnode(1, 0, [1, 2, 3], 1), 0)
    shrunk = PartitionStateZnode(1, 0, [1, 2], fence.epoch)
    version = registrations_version(zk)
    assert topics.update_partition_state(fence, "t", 0, shrunk, 0, version) == 1
    # a write based on the state read before that one loses, and changes nothing
    assert topics.update_partition_state(fence, "t", 0, PartitionStateZnode(3, 1, [3], 1), 0, version) is None
    assert topics.partition_state(zk, "t", 0) == (shrunk, 1)


def test_a_partition_state_write_fails_whole_once_a_broker_registered_after_the_version_read(
    zk: ZooKeeperClient,
) -> None:
    """A re-created /brokers/ids/<id> starts at data version 0 again; the parent's version tells a new
    registration from the old one, so the controller's state write can check it in the same multi."""
    fence = elect_controller(zk, 1)
    topics.create_topic_assignment(zk, "t", TopicAssignmentZnode({0: [1, 2]}))
    topics.create_partition_states(fence, "t", {0: PartitionStateZnode(1, 0, [1, 2], fence.epoch)})
    registration = BrokerRegistration(2, (ListenerEndpoint("PLAINTEXT", "127.0.0.1", 9092, "PLAINTEXT"),), 0)
    register_broker(zk, registration)
    version = registrations_version(zk)
    zk.kazoo.delete(paths.broker(2))  # broker 2 goes (its session expired) ...
    register_broker(zk, registration)  # ... and registers again
    assert registrations_version(zk) > version
    with pytest.raises(ZnodeVersionMovedError):
        topics.update_partition_state(fence, "t", 0, PartitionStateZnode(1, 0, [1], fence.epoch), 0, version)
    assert topics.partition_state(zk, "t", 0) == (PartitionStateZnode(1, 0, [1, 2], fence.epoch), 0)
    moved = registrations_version(zk)
    assert topics.update_partition_state(fence, "t", 0, PartitionStateZnode(1, 0, [1], 1), 0, moved) == 1


def test_brokers_see_the_controller_come_and_go_on_their_event_loop(
    connect_zk: Callable[[], ZooKeeperClient], zookeeper_server: ZooKeeperServer
) -> None:
    watcher, controller = connect_zk(), connect_zk()

    async def main() -> list[int | None]:
        loop = asyncio.get_running_loop()
        seen: list[int | None] = []
        changed = asyncio.Queue[None]()

        def on_change(data: bytes | None) -> None:
            assert asyncio.get_running_loop() is loop
            seen.append(None if data is None else ControllerZnode.parse(data).broker_id)
            changed.put_nowait(None)

        watcher.watch_data(paths.CONTROLLER, on_change, loop)
        await asyncio.wait_for(changed.get(), 10)  # at once: no controller yet
        await asyncio.to_thread(elect_controller, controller, 7)
        await asyncio.wait_for(changed.get(), 10)
        await asyncio.to_thread(expire_session, controller.kazoo, zookeeper_server.connect_string)
        await asyncio.wait_for(changed.get(), 10)
        return seen

    assert asyncio.run(main()) == [None, 7, None]
