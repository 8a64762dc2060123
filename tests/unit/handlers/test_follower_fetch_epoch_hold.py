"""A follower's fetch at a leader epoch this broker has not applied yet (its LeaderAndIsr is still on
the way) is held until the LeaderAndIsr arrives, then answered with data, instead of being answered
UNKNOWN_LEADER_EPOCH at once (which backs the follower off replica.fetch.backoff.ms); after its
max_wait_ms it is answered UNKNOWN_LEADER_EPOCH. Consumers' fetches are answered at once as before."""

from __future__ import annotations

import asyncio

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.fetch import (
    FetchPartition,
    FetchResponse,
    PartitionData,
)
from tests.support.controller_requests import Partition, leader_and_isr, update_metadata
from tests.support.handler_services import HandlerBroker
from tests.unit.handlers.cluster_member import (
    BROKERS,
    TOPIC,
    TOPIC_ID,
    follower_fetch_request,
    produce_request,
)

FETCH_VERSION = 17
REPLICAS = [2, 3, 1]


async def _apply(broker: HandlerBroker, *partitions: Partition) -> None:
    await broker.call(leader_and_isr(list(partitions), {TOPIC: TOPIC_ID}), 7)


async def _moving_away(broker: HandlerBroker) -> HandlerBroker:
    """Broker 2 led orders-0 at epoch 3 (one record, acks=1) and follows broker 1 at epoch 4; it leads
    orders-1 at epoch 3 (one record)."""
    led = [Partition(TOPIC, index, leader=2, leader_epoch=3, replicas=REPLICAS) for index in (0, 1)]
    await broker.call(update_metadata(BROKERS, led, {TOPIC: TOPIC_ID}), 8)
    await _apply(broker, *led)
    for index in (0, 1):
        response = await broker.call(produce_request(index), 9)
        assert response.responses[0].partition_responses[0].error_code == ErrorCode.NONE
    await _apply(broker, Partition(TOPIC, 0, leader=1, leader_epoch=4, replicas=REPLICAS))
    return broker


async def _fetch(
    broker: HandlerBroker, epochs: dict[int, int], max_wait_ms: int, replica: int = 3
) -> dict[int, PartitionData]:
    """A fetch of orders' partitions (index -> current leader epoch) from offset 0; a consumer's
    when `replica` is -1."""
    partitions = [
        FetchPartition(
            partition=index, current_leader_epoch=epoch, fetch_offset=0, partition_max_bytes=1 << 20
        )
        for index, epoch in epochs.items()
    ]
    request = follower_fetch_request(replica, partitions, max_wait_ms)
    response: FetchResponse = await broker.call(request, FETCH_VERSION)
    return {data.partition_index: data for data in response.responses[0].partitions}


async def test_a_follower_fetch_at_an_epoch_not_applied_yet_is_held_until_the_leader_and_isr_then_served(
    replicated_member: HandlerBroker,
) -> None:
    broker = await _moving_away(replicated_member)
    # Broker 3 applied the controller's move of orders-0 back here at epoch 5 first; orders-1 has data
    # for it, yet the whole fetch waits (answering now would give orders-0 UNKNOWN_LEADER_EPOCH).
    held = asyncio.ensure_future(_fetch(broker, {0: 5, 1: 3}, max_wait_ms=10_000))
    await asyncio.sleep(0.3)
    assert not held.done()
    await _apply(broker, Partition(TOPIC, 0, leader=2, leader_epoch=5, replicas=REPLICAS))
    answer = await asyncio.wait_for(held, 3)  # at once, not after max_wait_ms
    assert [answer[i].error_code for i in (0, 1)] == [ErrorCode.NONE, ErrorCode.NONE]
    assert answer[0].records and answer[1].records


async def test_a_held_follower_fetch_is_answered_unknown_leader_epoch_after_its_max_wait(
    replicated_member: HandlerBroker,
) -> None:
    broker = await _moving_away(replicated_member)
    loop = asyncio.get_running_loop()
    started = loop.time()
    answer = await asyncio.wait_for(_fetch(broker, {0: 5, 1: 3}, max_wait_ms=400), 5)
    assert loop.time() - started >= 0.4
    assert answer[0].error_code == ErrorCode.UNKNOWN_LEADER_EPOCH
    assert answer[1].error_code == ErrorCode.NONE and answer[1].records


async def test_a_held_follower_fetch_whose_partition_moves_elsewhere_is_answered_fenced(
    replicated_member: HandlerBroker,
) -> None:
    broker = await _moving_away(replicated_member)
    held = asyncio.ensure_future(_fetch(broker, {0: 5}, max_wait_ms=10_000))
    await asyncio.sleep(0.2)
    assert not held.done()
    # the controller moved it on again (epoch 6, broker 1): the follower's epoch 5 is now stale
    await _apply(broker, Partition(TOPIC, 0, leader=1, leader_epoch=6, replicas=REPLICAS))
    answer = await asyncio.wait_for(held, 3)
    assert answer[0].error_code == ErrorCode.FENCED_LEADER_EPOCH


async def test_a_consumer_fetch_at_an_unknown_epoch_is_still_answered_at_once(
    replicated_member: HandlerBroker,
) -> None:
    broker = await _moving_away(replicated_member)
    answer = await asyncio.wait_for(_fetch(broker, {1: 4}, max_wait_ms=10_000, replica=-1), 2)
    assert answer[1].error_code == ErrorCode.UNKNOWN_LEADER_EPOCH
