"""The transaction coordinator's writes as Kafka's acks=-1 appends: refused with nothing appended under
min.insync.replicas, applied to its memory only once the in-sync replicas hold them (a failed write
leaves no trace), other steps of the id answered CONCURRENT_TRANSACTIONS meanwhile, and no
transaction marker written before the PrepareCommit/PrepareAbort record is on the ISR.

Then, as Kafka's coordinator, the markers go out in the background (the marker channel): EndTxn, an
InitProducerId that aborts its predecessor's transaction and the periodic abort check never wait for
them (they did, and one marker waiting for its followers held every timed-out transaction open), the
transaction's steps are answered CONCURRENT_TRANSACTIONS until its Complete* record is written, and a
marker refused under min.insync.replicas is sent again until its partition takes it."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from odradek.coordinator.txn_coordinator import TransactionCoordinator
from odradek.coordinator.txn_metadata import TxnState
from odradek.coordinator.txn_records import TransactionLogValue
from odradek.coordinator.txn_state_log import TRANSACTION_STATE_TOPIC
from odradek.partition.leadership import Leadership
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.storage.partition import TopicPartition
from tests.support.async_waits import until
from tests.support.handler_services import HandlerBroker
from tests.support.held_isr import Followers, HeldIsr
from tests.support.short_isr import ShortIsr
from tests.support.txn_coordinators import single_node_transactions

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

    async def replicated(
        self, _partition: TopicPartition, _required_offset: int, timeout_ms: int
    ) -> ErrorCode:
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


@pytest.fixture
def no_periodic_check(tmp_path: Path) -> Iterator[HandlerBroker]:
    """A broker whose coordinator's periodic check (which completes prepared transactions too) never
    runs during a test: what completes a transaction there is what the test is about."""
    broker = HandlerBroker(
        tmp_path / "data", **{"transaction.abort.timed.out.transaction.cleanup.interval.ms": "3600000"}
    )
    try:
        yield broker
    finally:
        broker.close()


@contextlib.asynccontextmanager
async def running(
    handler_broker: HandlerBroker,
    marker_replicated: Followers | None = None,
    leadership: Leadership | None = None,
) -> AsyncIterator[TransactionCoordinator]:
    """A single node's coordinator on the broker's services; `marker_replicated` plays the data
    partitions' followers, `leadership` the replica manager."""
    await handler_broker.create_topic("data", 2)
    made = single_node_transactions(handler_broker, leadership)
    if marker_replicated is not None:  # the data partitions' followers, not the state log's
        made.markers.leadership = HeldIsr(made.markers.leadership, marker_replicated)
    await made.start()
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
        coordinator.state_log.leadership = HeldIsr(coordinator.state_log.leadership, followers.replicated)
        adding = asyncio.ensure_future(coordinator.add_partitions(TXN, pid, epoch, [("data", 1)]))
        await followers.answer(E.REQUEST_TIMED_OUT)
        assert await adding == {("data", 1): E.COORDINATOR_NOT_AVAILABLE}
        assert coordinator.state_log.txns[TXN].partitions == {("data", 0)}
        # a leader asked to verify a transactional batch for it is told it is not in the transaction
        assert coordinator.verify_partition(TXN, pid, epoch, "data", 1) is E.INVALID_TXN_STATE


async def test_other_steps_of_a_transactional_id_wait_out_its_write_with_concurrent_transactions(
    handler_broker: HandlerBroker,
) -> None:
    async with running(handler_broker) as coordinator:
        pid, epoch = await _ongoing(coordinator)
        followers = Replication()
        coordinator.state_log.leadership = HeldIsr(coordinator.state_log.leadership, followers.replicated)
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
        coordinator.state_log.leadership = HeldIsr(coordinator.state_log.leadership, followers.replicated)
        ending = asyncio.ensure_future(coordinator.end_txn(TXN, pid, epoch, committed=True))
        await asyncio.sleep(0.05)
        assert handler_broker.log("data").log_end_offset == 0  # no COMMIT marker yet
        await followers.answer(E.NOT_ENOUGH_REPLICAS_AFTER_APPEND)
        with pytest.raises(KafkaError) as failed:
            await ending
        assert failed.value.error_code is E.COORDINATOR_NOT_AVAILABLE
        assert handler_broker.log("data").log_end_offset == 0  # and none at all: the prepare failed
        assert coordinator.state_log.txns[TXN].state is TxnState.ONGOING
        coordinator.state_log.leadership = handler_broker.services.leadership  # the followers are back:
        # the client's retry commits
        await coordinator.end_txn(TXN, pid, epoch, committed=True)
        assert handler_broker.log("data").log_end_offset == 1
        await until(lambda: coordinator.state_log.txns[TXN].state is TxnState.COMPLETE_COMMIT)


async def test_a_transaction_write_waits_for_the_isr_as_long_as_the_transactions_own_timeout(
    handler_broker: HandlerBroker,
) -> None:
    """As Kafka's TransactionStateManager: a state change's append waits the transaction's timeout
    (here 60 s), not the broker's request.timeout.ms."""
    async with running(handler_broker) as coordinator:
        assert handler_broker.services.config.request_timeout_ms != 60000
        pid, epoch = await _ongoing(coordinator)
        followers = Replication()
        coordinator.state_log.leadership = HeldIsr(coordinator.state_log.leadership, followers.replicated)
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
        coordinator.state_log.leadership = ShortIsr(coordinator.state_log.leadership)
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
        lead_at_next_epoch(handler_broker, partition)  # the controller's LeaderAndIsr: a new ISR
        await coordinator.refresh_leadership()
        assert coordinator.state_log.shards[partition] is shard  # no reload, no NOT_COORDINATOR
        assert await coordinator.add_partitions(TXN, pid, epoch, [("data", 1)]) == {("data", 1): E.NONE}
        # led anew (it was a follower in between): loaded again, at the new coordinator epoch
        handler_broker.services.replicas.leading[(TRANSACTION_STATE_TOPIC, partition)].leader_since_epoch = (
            loaded_at + 1
        )
        await coordinator.refresh_leadership()
        assert coordinator.state_log.shards[partition] is not shard
        assert coordinator.state_log.coordinator_epoch(partition) == loaded_at + 1


def lead_at_next_epoch(broker: HandlerBroker, partition: int) -> None:
    """The `__transaction_state` partition led here at the next leader epoch, in the replica manager and
    the cache, as a controller's LeaderAndIsr would."""
    replicas = broker.services.replicas
    hosted = replicas.leading[(TRANSACTION_STATE_TOPIC, partition)]
    replicas.apply_leadership(dataclasses.replace(hosted, leader_epoch=hosted.leader_epoch + 1))
    state = broker.services.cluster.partition(TRANSACTION_STATE_TOPIC, partition)
    assert state is not None
    state.leader_epoch += 1


class MarkerReplication:
    """The data partitions' followers: each marker this broker writes waits until the test lets it
    through with an outcome (NONE: on the ISR now)."""

    def __init__(self) -> None:
        self.waiting: list[tuple[tuple[str, int, int], asyncio.Future[ErrorCode]]] = []

    async def replicated(
        self, partition: TopicPartition, required_offset: int, _timeout_ms: int
    ) -> ErrorCode:
        future: asyncio.Future[ErrorCode] = asyncio.get_running_loop().create_future()
        self.waiting.append(((*partition, required_offset), future))
        return await future

    async def answer(self, outcome: ErrorCode) -> tuple[str, int, int]:
        """Let the oldest waiting marker through with `outcome`; (topic, partition, its end offset)."""
        await until(lambda: bool(self.waiting))
        marker, future = self.waiting.pop(0)
        future.set_result(outcome)
        return marker


def _state(coordinator: TransactionCoordinator, transactional_id: str = TXN) -> TxnState:
    return coordinator.state_log.txns[transactional_id].state


async def test_end_txn_is_answered_once_its_prepare_record_is_on_the_isr_not_after_its_markers(
    handler_broker: HandlerBroker,
) -> None:
    """Kafka's endTransaction answers once PrepareCommit is replicated, then queues the markers: EndTxn
    waited for every marker's followers (request.timeout.ms each time one timed out)."""
    followers = MarkerReplication()
    async with running(handler_broker, followers.replicated) as coordinator:
        pid, epoch = await _ongoing(coordinator)
        await asyncio.wait_for(coordinator.end_txn(TXN, pid, epoch, committed=True), 10)
        assert _state(coordinator) is TxnState.PREPARE_COMMIT
        assert await followers.answer(E.NONE) == ("data", 0, 1)
        await until(lambda: _state(coordinator) is TxnState.COMPLETE_COMMIT)


async def test_a_transaction_completes_only_once_its_markers_are_on_the_in_sync_replicas(
    handler_broker: HandlerBroker,
) -> None:
    """As Kafka's acks=-1 marker appends: a CompleteCommit written while a marker is on the leader only
    would outlive that marker if the leader were lost, and no coordinator would send it again."""
    followers = MarkerReplication()
    async with running(handler_broker, followers.replicated) as coordinator:
        pid, epoch = await _ongoing(coordinator)
        await asyncio.wait_for(coordinator.end_txn(TXN, pid, epoch, committed=True), 10)
        assert await followers.answer(E.REQUEST_TIMED_OUT) == ("data", 0, 1)  # the marker: offset 0
        assert _state(coordinator) is TxnState.PREPARE_COMMIT  # the commit stands, its marker is retried
        assert await followers.answer(E.NONE) == ("data", 0, 2)  # written again, replicated this time
        await until(lambda: _state(coordinator) is TxnState.COMPLETE_COMMIT)


async def test_a_stuck_marker_keeps_no_timed_out_transaction_from_being_aborted(
    handler_broker: HandlerBroker,
) -> None:
    """Kafka's abortTimedOutTransactions only queues markers: the check awaited each prepared
    transaction's markers in turn, so one marker waiting for its followers left every other timed-out
    transaction open, and the last stable offsets of healthy partitions with it."""
    followers = MarkerReplication()
    async with running(handler_broker, followers.replicated) as coordinator:
        pid, epoch = await _ongoing(coordinator)
        await asyncio.wait_for(coordinator.end_txn(TXN, pid, epoch, committed=True), 10)
        other_pid, other_epoch = await coordinator.init_producer_id("abandoned", 1, -1, -1)
        await coordinator.add_partitions("abandoned", other_pid, other_epoch, [("data", 1)])
        await until(lambda: coordinator.state_log.txns["abandoned"].timed_out(coordinator.now_ms()))
        await asyncio.wait_for(coordinator.expiry.abort_timed_out(), 10)
        await until(lambda: _state(coordinator, "abandoned") is TxnState.PREPARE_ABORT)
        markers = {(await followers.answer(E.NONE))[:2] for _ in range(2)}
        assert markers == {("data", 0), ("data", 1)}
        await until(lambda: _state(coordinator, "abandoned") is TxnState.COMPLETE_ABORT)
        await until(lambda: _state(coordinator) is TxnState.COMPLETE_COMMIT)


async def test_a_new_instance_is_answered_concurrent_transactions_without_waiting_for_the_abort_markers(
    handler_broker: HandlerBroker,
) -> None:
    followers = MarkerReplication()
    async with running(handler_broker, followers.replicated) as coordinator:
        pid, epoch = await _ongoing(coordinator)
        with pytest.raises(KafkaError) as fencing:  # its predecessor's transaction is aborted first
            await asyncio.wait_for(coordinator.init_producer_id(TXN, 60000, -1, -1), 10)
        assert fencing.value.error_code is E.CONCURRENT_TRANSACTIONS
        assert _state(coordinator) is TxnState.PREPARE_ABORT
        with pytest.raises(KafkaError) as again:  # the client retries while the markers are written
            await coordinator.init_producer_id(TXN, 60000, -1, -1)
        assert again.value.error_code is E.CONCURRENT_TRANSACTIONS
        await followers.answer(E.NONE)
        await until(lambda: _state(coordinator) is TxnState.COMPLETE_ABORT)
        assert await coordinator.init_producer_id(TXN, 60000, -1, -1) == (pid, epoch + 2)


async def test_steps_of_a_transaction_whose_markers_are_being_written_answer_concurrent_transactions(
    handler_broker: HandlerBroker,
) -> None:
    """As Kafka between PrepareCommit and CompleteCommit: the client's next transaction, a retried
    EndTxn and a new instance wait (they retry CONCURRENT_TRANSACTIONS); the opposite ending is refused."""
    followers = MarkerReplication()
    async with running(handler_broker, followers.replicated) as coordinator:
        pid, epoch = await _ongoing(coordinator)
        await asyncio.wait_for(coordinator.end_txn(TXN, pid, epoch, committed=True), 10)
        assert await coordinator.add_partitions(TXN, pid, epoch, [("data", 1)]) == {
            ("data", 1): E.CONCURRENT_TRANSACTIONS
        }
        for step in (
            coordinator.end_txn(TXN, pid, epoch, committed=True),
            coordinator.init_producer_id(TXN, 60000, pid, epoch),
        ):
            with pytest.raises(KafkaError) as waiting:
                await step
            assert waiting.value.error_code is E.CONCURRENT_TRANSACTIONS
        with pytest.raises(KafkaError) as opposite:
            await coordinator.end_txn(TXN, pid, epoch, committed=False)
        assert opposite.value.error_code is E.INVALID_TXN_STATE
        await followers.answer(E.NONE)
        await until(lambda: _state(coordinator) is TxnState.COMPLETE_COMMIT)
        await coordinator.end_txn(TXN, pid, epoch, committed=True)  # a retry of the completed EndTxn
        assert await coordinator.add_partitions(TXN, pid, epoch, [("data", 1)]) == {("data", 1): E.NONE}


async def test_a_marker_refused_under_min_insync_replicas_is_written_once_the_isr_is_back(
    handler_broker: HandlerBroker,
) -> None:
    """Kafka's acks=-1 append: refused (NOT_ENOUGH_REPLICAS) with nothing appended while the ISR is
    short, and sent again until it is not. It was appended, waited for an ISR that could not take it,
    and every retry appended another."""
    followers = MarkerReplication()
    shrunk = {TopicPartition("data", 0)}
    isr = ShortIsr(handler_broker.services.leadership, lambda tp: tp in shrunk)
    async with running(handler_broker, followers.replicated, isr) as coordinator:
        pid, epoch = await _ongoing(coordinator)
        ending = asyncio.ensure_future(coordinator.end_txn(TXN, pid, epoch, committed=True))
        await until(lambda: len(isr.refused) >= 3)  # the marker channel sends it again every 100 ms
        assert handler_broker.log("data").log_end_offset == 0
        assert not followers.waiting
        assert _state(coordinator) is TxnState.PREPARE_COMMIT
        shrunk.clear()
        assert await followers.answer(E.NONE) == ("data", 0, 1)  # one marker, no more
        await until(lambda: _state(coordinator) is TxnState.COMPLETE_COMMIT)
        await ending


async def test_a_prepared_transaction_reloaded_while_its_marker_waits_is_completed_at_the_new_epoch(
    no_periodic_check: HandlerBroker,
) -> None:
    """Its `__transaction_state` partition led anew while a marker waited for its followers: the load
    sends the markers again under the new coordinator epoch and completes the transaction. The load's
    completion was skipped while the old one waited (keyed by transactional id) and the old one, finding
    new metadata, gave up: the transaction stayed prepared until the periodic check (held off here)."""
    followers = MarkerReplication()
    async with running(no_periodic_check, followers.replicated) as coordinator:
        pid, epoch = await _ongoing(coordinator)
        ending = asyncio.ensure_future(coordinator.end_txn(TXN, pid, epoch, committed=True))
        await until(lambda: bool(followers.waiting))  # the marker waits for its followers
        partition = coordinator.state_log.partition_for(TXN)
        state = no_periodic_check.services.cluster.partition(TRANSACTION_STATE_TOPIC, partition)
        assert state is not None
        lead_at_next_epoch(no_periodic_check, partition)  # led anew: it moved away and back
        hosted = no_periodic_check.services.replicas.leading[(TRANSACTION_STATE_TOPIC, partition)]
        hosted.leader_since_epoch = hosted.leader_epoch
        await coordinator.refresh_leadership()
        reloaded = coordinator.state_log.txns[TXN]
        assert reloaded.coordinator_epoch == state.leader_epoch
        assert await followers.answer(E.NONE) == ("data", 0, 1)  # the old marker's wait ends
        assert await followers.answer(E.NONE) == ("data", 0, 2)  # the new coordinator's marker
        await until(lambda: reloaded.state is TxnState.COMPLETE_COMMIT)
        await ending


async def test_a_complete_record_refused_under_the_transaction_log_min_isr_is_written_once_it_is_back(
    handler_broker: HandlerBroker,
) -> None:
    """As Kafka's marker channel retries its completion append on COORDINATOR_NOT_AVAILABLE: the
    markers are all written, so only the CompleteCommit record is written again."""
    followers = MarkerReplication()
    async with running(handler_broker, followers.replicated) as coordinator:
        pid, epoch = await _ongoing(coordinator)
        await asyncio.wait_for(coordinator.end_txn(TXN, pid, epoch, committed=True), 10)
        short = ShortIsr(coordinator.state_log.leadership)
        coordinator.state_log.leadership = short
        await followers.answer(E.NONE)  # the marker is on the ISR: time for CompleteCommit
        await until(lambda: len(short.refused) >= 3)
        assert _state(coordinator) is TxnState.PREPARE_COMMIT
        coordinator.state_log.leadership = short.leadership
        await until(lambda: _state(coordinator) is TxnState.COMPLETE_COMMIT)
        assert handler_broker.log("data").log_end_offset == 1  # one marker: not sent again


async def test_a_complete_record_waits_out_another_write_of_its_transactional_id(
    no_periodic_check: HandlerBroker,
) -> None:
    """An earlier coordinator epoch's write still waiting for the ISR (its partition reloaded meanwhile)
    answers the CompleteCommit CONCURRENT_TRANSACTIONS: it is written once that write is over, not left
    to the periodic check (held off here)."""
    followers = MarkerReplication()
    async with running(no_periodic_check, followers.replicated) as coordinator:
        pid, epoch = await _ongoing(coordinator)
        await asyncio.wait_for(coordinator.end_txn(TXN, pid, epoch, committed=True), 10)
        written = coordinator.state_log.write
        completions: list[int] = []

        async def write(transactional_id: str, value: TransactionLogValue | None) -> None:
            if value is not None and value.transaction_status == TxnState.COMPLETE_COMMIT:
                completions.append(value.transaction_status)
            await written(transactional_id, value)

        coordinator.state_log.write = write
        coordinator.state_log.writing.add(TXN)  # the other write
        await followers.answer(E.NONE)
        await until(lambda: len(completions) >= 2)  # refused, and tried again
        assert _state(coordinator) is TxnState.PREPARE_COMMIT
        coordinator.state_log.writing.discard(TXN)
        await until(lambda: _state(coordinator) is TxnState.COMPLETE_COMMIT)


async def test_one_expired_transactional_id_waiting_for_the_isr_holds_no_other_removal(
    handler_broker: HandlerBroker,
) -> None:
    """As Kafka's removal of expired ids, which waits for none of its tombstones: each waited for the
    one before it (request.timeout.ms where a partition's followers were slow)."""
    async with running(handler_broker) as coordinator:
        for transactional_id in ("idle-a", "idle-b"):
            await coordinator.init_producer_id(transactional_id, 60000, -1, -1)
            coordinator.state_log.txns[transactional_id].last_update_ms = 0  # idle for decades
        followers = Replication()
        coordinator.state_log.leadership = HeldIsr(coordinator.state_log.leadership, followers.replicated)
        removing = asyncio.ensure_future(coordinator.expiry.remove_expired())
        await until(lambda: len(followers.waiting) == 2)  # both tombstones written, both waiting
        await followers.answer(E.NONE)
        await followers.answer(E.NONE)
        await removing
        assert "idle-a" not in coordinator.state_log.txns and "idle-b" not in coordinator.state_log.txns


async def test_the_transaction_state_topic_is_created_uncompressed_as_kafka_creates_it(
    handler_broker: HandlerBroker,
) -> None:
    # Kafka's TransactionStateManager sets compression.type=uncompressed (it was producer here);
    # __consumer_offsets keeps producer, as Kafka's GroupCoordinator creates it.
    async with running(handler_broker):
        assert handler_broker.log(TRANSACTION_STATE_TOPIC, 0).config.compression_type == "uncompressed"
