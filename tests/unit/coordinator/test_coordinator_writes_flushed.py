"""flush.messages for the coordinators' own writes and the transaction markers: Kafka flushes in the log's
append whatever its origin, so a group's or a transaction's record, or a marker, that brings its log to
flush.messages unflushed records is fsynced before the write is answered. They were not: only a
Produce's append did the due fsync (partition/replica_manager.py's `complete_appends`), and the
coordinators' writes did not go through it."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from odradek.coordinator.offset_requests import OffsetCommitContext, OffsetCommitItem
from odradek.coordinator.settings import OFFSETS_TOPIC
from odradek.coordinator.txn_coordinator import TransactionCoordinator
from odradek.coordinator.txn_metadata import TxnState
from odradek.coordinator.txn_state_log import TRANSACTION_STATE_TOPIC
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.sync_group import SyncGroupRequest, SyncGroupRequestAssignment
from odradek.storage.log import Log
from tests.support.async_waits import until
from tests.support.handler_services import HandlerBroker
from tests.support.txn_coordinators import single_node_transactions
from tests.unit.coordinator.harness import Harness, join_new_member

pytestmark = pytest.mark.timeout(30)
EVERY_RECORD = {"log.flush.interval.messages": "1"}


def _flushed(log: Log) -> bool:
    return log.log_end_offset > 0 and log.recovery_point == log.log_end_offset


def _offsets_log(h: Harness) -> Log:
    found = h.logs.get_log(OFFSETS_TOPIC, 0)
    assert found is not None
    return found


def run_groups(tmp_path: Path, scenario: Callable[[Harness], Awaitable[None]]) -> None:
    async def main() -> None:
        h = Harness(tmp_path, **EVERY_RECORD)
        await h.start()
        try:
            await h.create_topic("t", 1)
            await scenario(h)
        finally:
            h.stop()

    asyncio.run(main())


def run_transactions(
    tmp_path: Path, scenario: Callable[[HandlerBroker, TransactionCoordinator], Awaitable[None]]
) -> None:
    async def main() -> None:
        broker = HandlerBroker(tmp_path / "data", **EVERY_RECORD)
        await broker.create_topic("data", 1)
        coordinator = single_node_transactions(broker)
        await coordinator.start()
        try:
            await scenario(broker, coordinator)
        finally:
            coordinator.stop()
            broker.close()

    asyncio.run(main())


def test_a_sync_group_is_answered_once_its_assignment_is_fsynced(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        joined = (await join_new_member(h, "g", session_ms=1_800_000)).result()
        request = SyncGroupRequest(
            group_id="g",
            generation_id=joined.generation_id,
            member_id=joined.member_id,
            assignments=[SyncGroupRequestAssignment(member_id=joined.member_id, assignment=b"a")],
        )
        synced = await h.coordinator.sync_group(request)
        assert synced.error_code == ErrorCode.NONE
        assert _flushed(_offsets_log(h))

    run_groups(tmp_path, scenario)


def test_an_offset_commit_is_answered_once_it_is_fsynced(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        commit = OffsetCommitContext("g", "", -1, None, -1, 8)
        items = [OffsetCommitItem("t", 0, 5, 3, "")]
        assert await h.coordinator.offsets.commit_offsets_committed(commit, items) == {
            ("t", 0): ErrorCode.NONE
        }
        assert _flushed(_offsets_log(h))

    run_groups(tmp_path, scenario)


def test_a_transaction_state_write_is_answered_once_it_is_fsynced(tmp_path: Path) -> None:
    async def scenario(broker: HandlerBroker, coordinator: TransactionCoordinator) -> None:
        await coordinator.init_producer_id("writer", 60000, -1, -1)
        partition = coordinator.state_log.partition_for("writer")
        assert _flushed(broker.log(TRANSACTION_STATE_TOPIC, partition))

    run_transactions(tmp_path, scenario)


def test_a_transaction_marker_is_fsynced_before_the_transaction_completes(tmp_path: Path) -> None:
    async def scenario(broker: HandlerBroker, coordinator: TransactionCoordinator) -> None:
        pid, epoch = await coordinator.init_producer_id("writer", 60000, -1, -1)
        await coordinator.add_partitions("writer", pid, epoch, [("data", 0)])
        await coordinator.end_txn("writer", pid, epoch, committed=True)
        await until(lambda: coordinator.state_log.txns["writer"].state is TxnState.COMPLETE_COMMIT)
        assert _flushed(broker.log("data"))  # the COMMIT marker, the partition's only record

    run_transactions(tmp_path, scenario)
