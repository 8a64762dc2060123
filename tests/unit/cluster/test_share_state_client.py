"""The share partitions' persister routes each call to its key's coordinator and retries the answers
that say the coordinator moved or is not ready, as Kafka's PersisterStateManager."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from odradek.cluster.metadata import BrokerEndpoint, ClusterMetadata, LiveBroker
from odradek.cluster.share_state_client import ATTEMPTS, ShareStatePersister
from odradek.config.broker import BrokerConfig
from odradek.partition.share.persister import (
    SharePartitionKey,
    ShareState,
    ShareStateError,
    ShareStateSummary,
    StateBatch,
)
from odradek.protocol.error_codes import ErrorCode

KEY = SharePartitionKey("g", uuid.UUID(int=7), 0)


class FakeCoordinator:
    """This broker's share coordinator: coordinates the key (node 1) and answers with `errors` first."""

    def __init__(self, node: int | None = 1, errors: list[ErrorCode] | None = None) -> None:
        self.node = node
        self.errors = list(errors or [])
        self.calls = 0

    def coordinator_node(self, key: str) -> int | None:
        assert key == KEY.coordinator_key
        return self.node

    async def _answer(self) -> None:
        self.calls += 1
        if self.errors:
            raise ShareStateError(self.errors.pop(0))

    async def initialize(self, key: SharePartitionKey, state_epoch: int, start_offset: int) -> None:
        await self._answer()

    async def read(self, key: SharePartitionKey, leader_epoch: int) -> ShareState:
        await self._answer()
        return ShareState(0, leader_epoch, 0, ())

    async def write(
        self,
        key: SharePartitionKey,
        state_epoch: int,
        leader_epoch: int,
        start_offset: int,
        batches: tuple[StateBatch, ...],
        delivery_complete_count: int = -1,
    ) -> None:
        await self._answer()

    async def delete(self, key: SharePartitionKey) -> None:
        await self._answer()

    async def read_summary(self, key: SharePartitionKey, leader_epoch: int) -> ShareStateSummary:
        await self._answer()
        return ShareStateSummary(0, 0, -1)


def persister(local: FakeCoordinator, slept: list[float], **options: int) -> ShareStatePersister:
    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    config = BrokerConfig({"node.id": "1", "log.dirs": "/nonexistent"}, warn_unknown=False)
    cluster = ClusterMetadata("c", 1, [])
    return ShareStatePersister(1, local, config, cluster, sleep=sleep, **options)


def test_a_coordinator_still_loading_is_asked_again_after_a_doubling_backoff() -> None:
    local = FakeCoordinator(errors=[ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.NOT_COORDINATOR])
    slept: list[float] = []
    asyncio.run(persister(local, slept).write(KEY, 0, 0, 0, ()))
    assert local.calls == 3
    assert len(slept) == 2
    assert 0.8 <= slept[0] <= 1.2 and 1.6 <= slept[1] <= 2.4  # Kafka's 1 s, doubling, ±20 %


def test_retries_end_after_five_attempts_with_the_last_error() -> None:
    local = FakeCoordinator(errors=[ErrorCode.COORDINATOR_NOT_AVAILABLE] * 10)
    slept: list[float] = []
    with pytest.raises(ShareStateError) as refused:
        asyncio.run(persister(local, slept).read(KEY, 0))
    assert refused.value.error_code is ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert local.calls == ATTEMPTS == 5


def test_a_fenced_write_is_the_callers_at_once_not_retried() -> None:
    local = FakeCoordinator(errors=[ErrorCode.FENCED_LEADER_EPOCH])
    slept: list[float] = []
    with pytest.raises(ShareStateError) as refused:
        asyncio.run(persister(local, slept).write(KEY, 0, 0, 0, ()))
    assert refused.value.error_code is ErrorCode.FENCED_LEADER_EPOCH
    assert (local.calls, slept) == (1, [])


def test_no_known_coordinator_is_retried_then_coordinator_not_available() -> None:
    local = FakeCoordinator(node=None)
    slept: list[float] = []
    with pytest.raises(ShareStateError) as refused:
        asyncio.run(persister(local, slept).delete(KEY))
    assert refused.value.error_code is ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert (local.calls, len(slept)) == (0, ATTEMPTS - 1)


def test_a_coordinator_on_an_unknown_broker_is_not_available_not_a_crash() -> None:
    local = FakeCoordinator(node=2)  # broker 2 is not in this broker's metadata
    slept: list[float] = []
    with pytest.raises(ShareStateError) as refused:
        asyncio.run(persister(local, slept).read_summary(KEY, 0))
    assert refused.value.error_code is ErrorCode.COORDINATOR_NOT_AVAILABLE


def test_calls_beyond_the_outstanding_bound_are_refused_at_once() -> None:
    async def scenario() -> list[ErrorCode | None]:
        gate = asyncio.Event()
        config = BrokerConfig({"node.id": "1", "log.dirs": "/nonexistent"}, warn_unknown=False)
        cluster = ClusterMetadata("c", 1, [])
        cluster.set_live_brokers([LiveBroker(2, {"PLAINTEXT": BrokerEndpoint(2, "127.0.0.1", 1)})])
        client = ShareStatePersister(1, FakeCoordinator(node=2), config, cluster, max_outstanding=2)

        async def stalled_send(node: int, request: object, version: int) -> object:
            await gate.wait()
            raise ShareStateError(ErrorCode.FENCED_STATE_EPOCH)

        client._send = stalled_send  # type: ignore[assignment,method-assign]

        async def one() -> ErrorCode | None:
            try:
                await client.write(KEY, 0, 0, 0, ())
            except ShareStateError as error:
                return error.error_code
            return None

        waiting = [asyncio.create_task(one()) for _ in range(2)]
        await asyncio.sleep(0)
        refused = await asyncio.wait_for(one(), 1)  # the third: not queued behind the stalled two
        gate.set()
        return [refused, *await asyncio.gather(*waiting)]

    refused, *released = asyncio.run(scenario())
    assert refused is ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert released == [ErrorCode.FENCED_STATE_EPOCH, ErrorCode.FENCED_STATE_EPOCH]


def test_an_answer_without_the_partitions_result_is_an_error_not_a_crash() -> None:
    """Kafka 4.4 answers an empty group id with no results at all; the persister indexed the first one
    and raised IndexError into the share partition."""
    from odradek.protocol.messages import read_share_group_state as read

    async def scenario() -> ShareStateError:
        config = BrokerConfig({"node.id": "1", "log.dirs": "/nonexistent"}, warn_unknown=False)
        client = ShareStatePersister(1, FakeCoordinator(node=2), config, ClusterMetadata("c", 1, []))

        async def empty_answer(node: int, request: object, version: int) -> object:
            return read.ReadShareGroupStateResponse(results=[])

        client._send = empty_answer  # type: ignore[assignment,method-assign]
        try:
            await client.read(KEY, 0)
        except ShareStateError as error:
            return error
        raise AssertionError("no error")

    assert asyncio.run(scenario()).error_code is ErrorCode.UNKNOWN_SERVER_ERROR
