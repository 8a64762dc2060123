"""The broker's AlterPartition sender against fake controllers (tests/support/fake_broker.py): one
request at a time with every waiting proposal, one proposal per partition, versions, per-partition
answers, and retries through failures and controller moves."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

from odradek.cluster.inter_broker_versions import InterBrokerVersions
from odradek.cluster.metadata import BrokerEndpoint, ClusterMetadata, LiveBroker
from odradek.cluster.replication.alter_partition import AlterPartitionManager
from odradek.partition.isr_updates import CommittedIsr, IsrUpdateFailed, ProposedIsr
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.alter_partition import (
    AlterPartitionRequest,
    AlterPartitionResponse,
    PartitionDataResult,
    TopicDataResult,
)
from tests.support.fake_broker import FakeBroker, Received

AP = ApiKey.ALTER_PARTITION
TOPIC_ID = uuid.UUID("6f1c1a52-2b59-4e0f-9a3e-5d3c1f9e2a10")
Responder = Callable[[Received], Awaitable[Any]]


def proposal(
    partition: int, isr: tuple[int, ...] = (1, 2), topic_id: uuid.UUID | None = TOPIC_ID
) -> ProposedIsr:
    return ProposedIsr("t", topic_id, partition, leader_epoch=3, new_isr=isr, partition_epoch=7)


def answer(
    received: Received, errors: dict[int, ErrorCode] | None = None, top: ErrorCode = ErrorCode.NONE
) -> Any:
    """The controller's answer: each partition written as asked (partition epoch + 1), or its error."""
    request: AlterPartitionRequest = received.body
    version = received.header.request_api_version
    if top != ErrorCode.NONE:
        return AlterPartitionResponse(throttle_time_ms=0, error_code=top, topics=[])
    topics = []
    for topic in request.topics:
        results = []
        for p in topic.partitions:
            isr = [m.broker_id for m in p.new_isr_with_epochs] if version >= 3 else list(p.new_isr)
            code = (errors or {}).get(p.partition_index, ErrorCode.NONE)
            results.append(
                PartitionDataResult(
                    partition_index=p.partition_index,
                    error_code=code,
                    leader_id=request.broker_id,
                    leader_epoch=p.leader_epoch,
                    isr=isr if code == ErrorCode.NONE else [],
                    partition_epoch=p.partition_epoch + 1,
                )
            )
        topics.append(
            TopicDataResult(topic_name=topic.topic_name, topic_id=topic.topic_id, partitions=results)
        )
    return AlterPartitionResponse(throttle_time_ms=0, error_code=0, topics=topics)


def in_loop(test: Callable[[], Awaitable[None]]) -> Callable[[], None]:
    """Run an async test in its own event loop, bounded."""

    @functools.wraps(test)
    def run() -> None:
        asyncio.run(asyncio.wait_for(test(), 60))

    return run


async def accept(received: Received) -> Any:
    return answer(received)


@asynccontextmanager
async def sender(
    *responders: Responder,
    request_timeout_s: float = 30.0,
    epoch: list[int] | None = None,
    max_version: int = 3,
) -> AsyncIterator[tuple[AlterPartitionManager, ClusterMetadata, list[FakeBroker]]]:
    """Fake controllers 1.. with these responders; broker 1's metadata names controller 1."""
    fakes = [await FakeBroker(i + 1, responder=r).start() for i, r in enumerate(responders)]
    cluster = ClusterMetadata("c", 1, [])
    cluster.set_live_brokers(
        [LiveBroker(f.broker_id, {"PLAINTEXT": BrokerEndpoint(f.broker_id, f.host, f.port)}) for f in fakes]
    )
    epochs = epoch if epoch is not None else [42]
    manager = AlterPartitionManager(
        9, cluster, "PLAINTEXT", lambda: epochs[0], request_timeout_s, max_version=max_version
    )
    manager.retry_backoff_s = manager.retry_backoff_max_s = 0.05
    manager.start()
    try:
        yield manager, cluster, fakes
    finally:
        await manager.stop()
        for fake in fakes:
            await fake.stop()


def sent(fake: FakeBroker) -> list[list[int]]:
    """The partitions of each AlterPartition request a fake controller got, in order."""
    return [[p.partition_index for t in r.topics for p in t.partitions] for r in fake.requests_of(AP)]


@in_loop
async def test_proposals_made_while_a_request_is_in_flight_go_together_in_the_next_one() -> None:
    release = asyncio.Event()

    async def held(received: Received) -> Any:
        if len(sent_by_now) == 0:
            sent_by_now.append(received)
            await release.wait()
        return answer(received)

    sent_by_now: list[Received] = []
    async with sender(held) as (manager, _, (controller,)):
        first = asyncio.create_task(manager.submit(proposal(0)))
        await controller.wait_for(lambda f: len(f.requests_of(AP)) == 1)
        later = [asyncio.create_task(manager.submit(proposal(p, (1, 2, 3)))) for p in (1, 2)]
        await asyncio.sleep(0.1)
        assert sent(controller) == [[0]]  # one request at a time
        release.set()
        assert await first == CommittedIsr(9, 3, (1, 2), 8)
        assert [await t for t in later] == [CommittedIsr(9, 3, (1, 2, 3), 8)] * 2
        assert sent(controller) == [[0], [1, 2]]
        request = controller.requests_of(AP)[1]
        assert (request.broker_id, request.broker_epoch) == (9, 42)


@in_loop
async def test_a_second_proposal_for_a_partition_in_flight_is_not_attempted() -> None:
    async def never(received: Received) -> Any:
        return None

    async with sender(never) as (manager, _, (controller,)):
        first = asyncio.create_task(manager.submit(proposal(0)))
        await controller.wait_for(lambda f: len(f.requests_of(AP)) == 1)
        with pytest.raises(IsrUpdateFailed) as refused:
            await manager.submit(proposal(0, (1,)))
        assert refused.value.error_code == ErrorCode.OPERATION_NOT_ATTEMPTED
        first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first


@in_loop
async def test_version_3_carries_topic_ids_and_member_epochs_and_version_1_names_topics() -> None:
    async with sender(accept) as (manager, _, (controller,)):
        with_epochs = dataclasses.replace(proposal(0), member_epochs={2: 33})
        assert (await manager.submit(with_epochs)).isr == (1, 2)
        assert (await manager.submit(proposal(1, (1, 3), topic_id=None))).isr == (1, 3)
        with_ids, with_names = controller.received
        assert with_ids.header.request_api_version == 3
        (topic,) = with_ids.body.topics
        assert topic.topic_id == TOPIC_ID
        assert [(m.broker_id, m.broker_epoch) for m in topic.partitions[0].new_isr_with_epochs] == [
            (1, -1),  # the leader: the request's own broker epoch stands for it
            (2, 33),
        ]
        assert with_names.header.request_api_version == 1
        (topic,) = with_names.body.topics
        assert (topic.topic_name, topic.partitions[0].new_isr) == ("t", [1, 3])


@pytest.mark.parametrize(("ibp", "expected"), [("3.0-IV1", 0), ("3.2", 1), ("3.4", 2), ("3.9", 3)])
def test_the_version_is_the_highest_the_inter_broker_protocol_version_allows(ibp: str, expected: int) -> None:
    async def run() -> None:
        versions = InterBrokerVersions.at(ibp)
        async with sender(accept, max_version=versions.alter_partition) as (manager, _, (controller,)):
            assert (await manager.submit(proposal(0))).isr == (1, 2)
            assert (await manager.submit(proposal(1, (1, 3), topic_id=None))).isr == (1, 3)
            with_ids, with_names = controller.received
            assert with_ids.header.request_api_version == expected
            assert with_names.header.request_api_version == min(expected, 1)
            if expected < 2:  # topics by name: the answer is matched by name too
                assert with_ids.body.topics[0].topic_name == "t"

    asyncio.run(asyncio.wait_for(run(), 60))


@in_loop
async def test_partition_errors_fail_their_proposal_only() -> None:
    release = asyncio.Event()

    async def refusing(received: Received) -> Any:
        await release.wait()
        if len(controller.received) > 1:
            return answer(received)
        return answer(received, {1: ErrorCode.INVALID_UPDATE_VERSION, 2: ErrorCode.FENCED_LEADER_EPOCH})

    async with sender(refusing) as (manager, _, fakes):
        controller = fakes[0]
        tasks = [asyncio.create_task(manager.submit(proposal(p))) for p in (0, 1, 2)]
        await asyncio.sleep(0.05)
        release.set()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        assert results[0] == CommittedIsr(9, 3, (1, 2), 8)
        assert [r.error_code for r in results[1:] if isinstance(r, IsrUpdateFailed)] == [
            ErrorCode.INVALID_UPDATE_VERSION,
            ErrorCode.FENCED_LEADER_EPOCH,
        ]
        assert sent(controller) == [[0, 1, 2]]
        # the partition is free again: a new proposal is sent
        assert (await manager.submit(proposal(1, (1,)))).isr == (1,)


@in_loop
async def test_not_controller_is_retried_against_the_new_controller() -> None:
    async def not_controller(received: Received) -> Any:
        return answer(received, top=ErrorCode.NOT_CONTROLLER)

    async with sender(not_controller, accept) as (manager, cluster, (old, new)):
        task = asyncio.create_task(manager.submit(proposal(0)))
        await old.wait_for(lambda f: len(f.requests_of(AP)) >= 2)  # retried while nothing changed
        assert not task.done()
        cluster.controller_id = 2  # UpdateMetadata names the new controller
        assert (await asyncio.wait_for(task, 10)).isr == (1, 2)
        assert sent(new) == [[0]]


@in_loop
async def test_a_partition_answered_not_controller_or_left_out_is_sent_again() -> None:
    calls: list[int] = []

    async def partial(received: Received) -> Any:
        calls.append(1)
        if len(calls) == 1:
            response = answer(received, {1: ErrorCode.NOT_CONTROLLER})
            response.topics[0].partitions = [
                p for p in response.topics[0].partitions if p.partition_index != 2
            ]
            return response
        return answer(received)

    async with sender(partial) as (manager, _, (controller,)):
        results = await asyncio.gather(*(manager.submit(proposal(p)) for p in (0, 1, 2)))
        assert [r.partition_epoch for r in results] == [8, 8, 8]
        assert sent(controller) == [[0, 1, 2], [1, 2]]


@in_loop
async def test_a_dead_controller_and_a_silent_one_are_retried() -> None:
    answered: list[int] = []

    async def silent_once(received: Received) -> Any:
        answered.append(1)
        return None if len(answered) == 1 else answer(received)

    async with sender(silent_once, accept, request_timeout_s=0.3) as (manager, cluster, (silent, other)):
        await other.stop()  # a controller that went: connections are refused
        cluster.controller_id = 2
        task = asyncio.create_task(manager.submit(proposal(0)))
        await asyncio.sleep(0.3)
        assert not task.done()
        cluster.controller_id = 1  # the silent one: the first request times out, the next is answered
        assert (await asyncio.wait_for(task, 10)).isr == (1, 2)
        assert sent(silent) == [[0], [0]]


@in_loop
async def test_a_stale_broker_epoch_is_retried_with_the_epoch_registered_since() -> None:
    epoch = [41]

    async def fenced(received: Received) -> Any:
        if received.body.broker_epoch != 42:
            return answer(received, top=ErrorCode.STALE_BROKER_EPOCH)
        return answer(received)

    async with sender(fenced, epoch=epoch) as (manager, _, (controller,)):
        task = asyncio.create_task(manager.submit(proposal(0)))
        await controller.wait_for(lambda f: len(f.requests_of(AP)) >= 1)
        epoch[0] = 42  # registered again on a new session
        assert (await asyncio.wait_for(task, 10)).isr == (1, 2)
        assert controller.requests_of(AP)[-1].broker_epoch == 42


@in_loop
async def test_stopping_fails_the_proposals_still_waiting() -> None:
    async def never(received: Received) -> Any:
        return None

    async with sender(never) as (manager, _, (controller,)):
        task = asyncio.create_task(manager.submit(proposal(0)))
        await controller.wait_for(lambda f: len(f.requests_of(AP)) == 1)
        await manager.stop()
        with pytest.raises(IsrUpdateFailed) as failed:
            await task
        assert failed.value.error_code == ErrorCode.BROKER_NOT_AVAILABLE
        with pytest.raises(IsrUpdateFailed):
            await manager.submit(proposal(1))


@in_loop
async def test_a_request_to_a_silent_controller_goes_to_the_new_one_without_waiting_for_the_timeout() -> None:
    async def never(received: Received) -> Any:
        return None

    async with sender(never, accept, request_timeout_s=30) as (manager, cluster, (paused, new)):
        task = asyncio.create_task(manager.submit(proposal(0)))
        await paused.wait_for(lambda f: len(f.requests_of(AP)) == 1)
        started = asyncio.get_running_loop().time()
        cluster.controller_id = 2  # UpdateMetadata from the controller elected meanwhile
        assert (await asyncio.wait_for(task, 10)).isr == (1, 2)
        assert asyncio.get_running_loop().time() - started < 5
        assert sent(new) == [[0]]
