"""The transaction coordinator's writes as Kafka's acks=-1 appends: refused with nothing appended under
min.insync.replicas, applied to its memory only once the in-sync replicas hold them (a failed write
leaves no trace), other steps of the id answered CONCURRENT_TRANSACTIONS meanwhile, and no
transaction marker written before the PrepareCommit/PrepareAbort record is on the ISR."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest

from odradek.coordinator.txn_coordinator import TransactionCoordinator
from odradek.coordinator.txn_metadata import TxnState
from odradek.coordinator.txn_state_log import TRANSACTION_STATE_TOPIC
from odradek.protocol.error_codes import ErrorCode, KafkaError
from tests.support.handler_services import HandlerBroker

pytestmark = pytest.mark.timeout(30)
E = ErrorCode
TXN = "writer"


class Replication:
    """The followers, as the coordinator's runtime sees them: each write waits until the test lets it
    through with an outcome (NONE: on the ISR now)."""

    def __init__(self) -> None:
        self.waiting: list[asyncio.Future[ErrorCode]] = []
        #: How long each write was allowed to wait, in ms.
        self.timeouts: list[int] = []

    async def replicated(self, _partition: int, _required_offset: int, timeout_ms: int) -> ErrorCode:
        self.timeouts.append(timeout_ms)
        future: asyncio.Future[ErrorCode] = asyncio.get_running_loop().create_future()
        self.waiting.append(future)
        return await future

    async def answer(self, outcome: ErrorCode) -> None:
        for _ in range(100):
            if self.waiting:
                break
            await asyncio.sleep(0.01)
        self.waiting.pop(0).set_result(outcome)


@contextlib.asynccontextmanager
async def running(handler_broker: HandlerBroker) -> AsyncIterator[TransactionCoordinator]:
    await handler_broker.create_topic("data", 2)
    services = handler_broker.services
    made = TransactionCoordinator(
        services.config,
        services.cluster,
        services.topics,
        services.logs,
        services.node_id,
        services.producer_ids,
        None,
        leadership=services.leadership,
    )
    await made.start(single_node=True)
    try:
        yield made
    finally:
        made.stop()


async def _ongoing(coordinator: TransactionCoordinator) -> tuple[int, int]:
    pid, epoch = await coordinator.init_producer_id(TXN, 60000, -1, -1)
    assert await coordinator.add_partitions(TXN, pid, epoch, [("data", 0)]) == {("data", 0): E.NONE}
    return pid, epoch


def _state_log_end(handler_broker: HandlerBroker, coordinator: TransactionCoordinator) -> int:
    partition = coordinator.state_log.partition_for(TXN)
    return handler_broker.log(TRANSACTION_STATE_TOPIC, partition).log_end_offset


async def test_a_transaction_write_that_does_not_reach_the_isr_leaves_no_trace_in_memory(
    handler_broker: HandlerBroker,
) -> None:
    async with running(handler_broker) as coordinator:
        pid, epoch = await _ongoing(coordinator)
        followers = Replication()
        coordinator.state_log.replicated = followers.replicated
        adding = asyncio.ensure_future(coordinator.add_partitions(TXN, pid, epoch, [("data", 1)]))
        await followers.answer(E.REQUEST_TIMED_OUT)
        assert await adding == {("data", 1): E.COORDINATOR_NOT_AVAILABLE}
        assert coordinator.state_log.txns[TXN].partitions == {("data", 0)}
        # a leader asked to verify a transactional batch for it is told it is not in the transaction
        assert coordinator.verify_partition(pid, epoch, "data", 1) is E.INVALID_TXN_STATE


async def test_other_steps_of_a_transactional_id_wait_out_its_write_with_concurrent_transactions(
    handler_broker: HandlerBroker,
) -> None:
    async with running(handler_broker) as coordinator:
        pid, epoch = await _ongoing(coordinator)
        followers = Replication()
        coordinator.state_log.replicated = followers.replicated
        adding = asyncio.ensure_future(coordinator.add_partitions(TXN, pid, epoch, [("data", 1)]))
        await asyncio.sleep(0.05)
        with pytest.raises(KafkaError) as refused:
            await coordinator.end_txn(TXN, pid, epoch, committed=True)
        assert refused.value.error_code is E.CONCURRENT_TRANSACTIONS
        await followers.answer(E.NONE)
        assert await adding == {("data", 1): E.NONE}
        assert coordinator.state_log.txns[TXN].partitions == {("data", 0), ("data", 1)}


async def test_no_marker_is_written_before_the_prepare_record_is_on_the_isr(
    handler_broker: HandlerBroker,
) -> None:
    async with running(handler_broker) as coordinator:
        pid, epoch = await _ongoing(coordinator)
        followers = Replication()
        coordinator.state_log.replicated = followers.replicated
        ending = asyncio.ensure_future(coordinator.end_txn(TXN, pid, epoch, committed=True))
        await asyncio.sleep(0.05)
        assert handler_broker.log("data").log_end_offset == 0  # no COMMIT marker yet
        await followers.answer(E.NOT_ENOUGH_REPLICAS_AFTER_APPEND)
        with pytest.raises(KafkaError) as failed:
            await ending
        assert failed.value.error_code is E.COORDINATOR_NOT_AVAILABLE
        assert handler_broker.log("data").log_end_offset == 0  # and none at all: the prepare failed
        assert coordinator.state_log.txns[TXN].state is TxnState.ONGOING
        coordinator.state_log.replicated = None  # the followers are back: the client's retry commits
        await coordinator.end_txn(TXN, pid, epoch, committed=True)
        assert handler_broker.log("data").log_end_offset == 1
        assert coordinator.state_log.txns[TXN].state is TxnState.COMPLETE_COMMIT


async def test_a_transaction_write_waits_for_the_isr_as_long_as_the_transactions_own_timeout(
    handler_broker: HandlerBroker,
) -> None:
    """As Kafka's TransactionStateManager: a state change's append waits the transaction's timeout
    (here 60 s), not the broker's request.timeout.ms."""
    async with running(handler_broker) as coordinator:
        assert handler_broker.services.config.request_timeout_ms != 60000
        pid, epoch = await _ongoing(coordinator)
        followers = Replication()
        coordinator.state_log.replicated = followers.replicated
        adding = asyncio.ensure_future(coordinator.add_partitions(TXN, pid, epoch, [("data", 1)]))
        await followers.answer(E.NONE)
        assert await adding == {("data", 1): E.NONE}
        assert followers.timeouts == [60000]


async def test_a_transaction_write_under_min_insync_replicas_appends_nothing(
    handler_broker: HandlerBroker,
) -> None:
    async with running(handler_broker) as coordinator:
        pid, epoch = await _ongoing(coordinator)
        before = _state_log_end(handler_broker, coordinator)
        coordinator.state_log.under_min_isr = lambda _partition: True
        assert await coordinator.add_partitions(TXN, pid, epoch, [("data", 1)]) == {
            ("data", 1): E.COORDINATOR_NOT_AVAILABLE
        }
        assert _state_log_end(handler_broker, coordinator) == before
        assert coordinator.state_log.txns[TXN].partitions == {("data", 0)}


async def test_a_new_leader_epoch_that_keeps_this_broker_leader_does_not_reload_the_transactions(
    handler_broker: HandlerBroker,
) -> None:
    async with running(handler_broker) as coordinator:
        pid, epoch = await _ongoing(coordinator)
        partition = coordinator.state_log.partition_for(TXN)
        shard = coordinator.state_log.shards[partition]
        state = handler_broker.services.cluster.partition(TRANSACTION_STATE_TOPIC, partition)
        assert state is not None
        loaded_at = state.leader_epoch
        state.leader_epoch += 1  # the controller's LeaderAndIsr: same leader, a new ISR
        coordinator.leader_since_epoch = lambda _partition: loaded_at
        await coordinator.refresh_leadership()
        assert coordinator.state_log.shards[partition] is shard  # no reload, no NOT_COORDINATOR
        assert await coordinator.add_partitions(TXN, pid, epoch, [("data", 1)]) == {("data", 1): E.NONE}
        # led anew (it was a follower in between): loaded again, at the new coordinator epoch
        coordinator.leader_since_epoch = lambda _partition: loaded_at + 1
        await coordinator.refresh_leadership()
        assert coordinator.state_log.shards[partition] is not shard
        assert coordinator.state_log.coordinator_epoch(partition) == loaded_at + 1


class MarkerReplication:
    """The data partitions' followers: each marker this broker writes waits until the test lets it
    through with an outcome (NONE: on the ISR now)."""

    def __init__(self) -> None:
        self.waiting: list[tuple[tuple[str, int, int], asyncio.Future[ErrorCode]]] = []

    async def replicated(self, topic: str, partition: int, required_offset: int) -> ErrorCode:
        future: asyncio.Future[ErrorCode] = asyncio.get_running_loop().create_future()
        self.waiting.append(((topic, partition, required_offset), future))
        return await future

    async def answer(self, outcome: ErrorCode) -> tuple[str, int, int]:
        for _ in range(100):
            if self.waiting:
                break
            await asyncio.sleep(0.01)
        marker, future = self.waiting.pop(0)
        future.set_result(outcome)
        return marker


@contextlib.asynccontextmanager
async def with_marker_followers(
    handler_broker: HandlerBroker, followers: MarkerReplication
) -> AsyncIterator[TransactionCoordinator]:
    await handler_broker.create_topic("data", 2)
    services = handler_broker.services
    made = TransactionCoordinator(
        services.config,
        services.cluster,
        services.topics,
        services.logs,
        services.node_id,
        services.producer_ids,
        None,
        marker_replicated=followers.replicated,
        leadership=services.leadership,
    )
    await made.start(single_node=True)
    try:
        yield made
    finally:
        made.stop()


async def test_a_transaction_completes_only_once_its_markers_are_on_the_in_sync_replicas(
    handler_broker: HandlerBroker,
) -> None:
    """As Kafka's acks=-1 marker appends: a CompleteCommit written while a marker is on the leader only
    would outlive that marker if the leader were lost, and no coordinator would send it again."""
    followers = MarkerReplication()
    async with with_marker_followers(handler_broker, followers) as coordinator:
        pid, epoch = await _ongoing(coordinator)
        ending = asyncio.ensure_future(coordinator.end_txn(TXN, pid, epoch, committed=True))
        assert await followers.answer(E.REQUEST_TIMED_OUT) == ("data", 0, 1)  # the marker: offset 0
        await ending  # the PrepareCommit is on the ISR: the commit stands, its markers are retried
        assert coordinator.state_log.txns[TXN].state is TxnState.PREPARE_COMMIT
        retrying = asyncio.ensure_future(coordinator.abort_timed_out())  # the periodic check
        assert await followers.answer(E.NONE) == ("data", 0, 2)  # written again, replicated this time
        await retrying
        assert coordinator.state_log.txns[TXN].state is TxnState.COMPLETE_COMMIT
