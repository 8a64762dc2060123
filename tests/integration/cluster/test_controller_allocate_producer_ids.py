"""AllocateProducerIds on the controller (what Kafka 3.x brokers ask it for), with a real ZooKeeper and
fake brokers: the block comes from the /latest_producer_id_block odradek's brokers claim theirs from,
so blocks never overlap between the kinds; Kafka's refusals for an unknown broker, a stale broker epoch
and a broker that is not the controller."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

from odradek.cluster.controller.config import ControllerConfig
from odradek.cluster.controller.controller import KafkaController
from odradek.cluster.zookeeper import brokers, paths
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.cluster.zookeeper.producer_id_znode import ProducerIdBlock
from odradek.cluster.zookeeper.producer_ids import allocate_producer_id_block
from odradek.protocol.error_codes import ErrorCode
from tests.support.fake_broker import FakeBroker


@dataclass
class Setup:
    zk: ZooKeeperClient
    epochs: dict[int, int]
    controller: KafkaController
    other: KafkaController


@asynccontextmanager
async def two_brokers(connect_zk: Callable[[], ZooKeeperClient]) -> AsyncIterator[Setup]:
    """Fake brokers 1 and 2 registered; broker 1's controller is active, broker 2's is not."""
    zk = connect_zk()
    zk.ensure_persistent_paths()
    fakes = {b: await FakeBroker(b).start() for b in (1, 2)}
    controllers: list[KafkaController] = []
    try:
        epochs = {
            b: await asyncio.to_thread(brokers.register_broker, zk, fake.registration())
            for b, fake in fakes.items()
        }
        for broker_id in (1, 2):
            controller = KafkaController(connect_zk(), ControllerConfig(broker_id=broker_id))
            controllers.append(controller)
            await controller.start()
            await controller.wait_idle()
        first, other = controllers
        assert first.is_active and not other.is_active
        while set(first.context.live_brokers) != {1, 2}:  # type: ignore[union-attr]
            await asyncio.sleep(0.02)
        yield Setup(zk, epochs, first, other)
    finally:
        for controller in reversed(controllers):
            await controller.stop()
        for fake in fakes.values():
            await fake.stop()


def run(connect_zk: Callable[[], ZooKeeperClient], scenario: Callable[[Setup], object]) -> None:
    async def main() -> None:
        async with two_brokers(connect_zk) as setup:
            await asyncio.wait_for(scenario(setup), 60)  # type: ignore[arg-type]

    asyncio.run(main())


def test_controller_hands_out_the_block_after_those_odradek_brokers_claimed_themselves(
    connect_zk: Callable[[], ZooKeeperClient],
) -> None:
    async def scenario(s: Setup) -> None:
        claimed = await asyncio.to_thread(allocate_producer_id_block, s.zk, 1)  # an odradek broker's own
        assert claimed == ProducerIdBlock(1, 0)
        given = await s.controller.allocate_producer_ids(2, s.epochs[2])  # a Kafka broker asks
        assert (given.error, given.block) == (ErrorCode.NONE, ProducerIdBlock(2, 1000))
        found = await asyncio.to_thread(s.zk.read, paths.LATEST_PRODUCER_ID_BLOCK)
        assert found is not None and json.loads(found[0] or b"") == {
            "version": 1,
            "broker": 2,
            "block_start": "1000",
            "block_end": "1999",
        }
        after = await asyncio.to_thread(allocate_producer_id_block, s.zk, 1)
        assert after == ProducerIdBlock(1, 2000)

    run(connect_zk, scenario)


def test_allocate_producer_ids_refuses_an_unknown_broker_a_stale_epoch_and_a_broker_not_controller(
    connect_zk: Callable[[], ZooKeeperClient],
) -> None:
    async def scenario(s: Setup) -> None:
        unknown = await s.controller.allocate_producer_ids(7, s.epochs[2])
        assert (unknown.error, unknown.block) == (ErrorCode.BROKER_ID_NOT_REGISTERED, None)
        stale = await s.controller.allocate_producer_ids(2, s.epochs[2] - 1)
        assert (stale.error, stale.block) == (ErrorCode.STALE_BROKER_EPOCH, None)
        elsewhere = await s.other.allocate_producer_ids(2, s.epochs[2])
        assert (elsewhere.error, elsewhere.block) == (ErrorCode.NOT_CONTROLLER, None)
        # nothing was claimed by the refused requests
        found = await asyncio.to_thread(s.zk.read, paths.LATEST_PRODUCER_ID_BLOCK)
        assert found is None or not found[0]

    run(connect_zk, scenario)
