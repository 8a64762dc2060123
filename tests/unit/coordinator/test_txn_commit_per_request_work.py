"""What a transaction's commit costs the event loop (docs/bench/architecture-steps.md, "Per-request CPU,
before #28 and after"): its state-log writes and its markers are appended through the replica manager,
whose `complete_appends` (a due fsync, an acks=all wait) is awaited only when something is due; on a
single node with no flush setting nothing is. With flush.messages the writes are fsynced first
(test_coordinator_writes_flushed.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from odradek.coordinator.txn_metadata import TxnState
from tests.support.async_waits import until
from tests.support.handler_services import HandlerBroker
from tests.support.txn_coordinators import single_node_transactions

pytestmark = pytest.mark.timeout(30)


def _calls_in_one_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, owner: Any, name: str, *, repeat_add: bool = False
) -> int:
    """How often `owner.name` (the broker's replica manager when `owner` is None) is called while a
    single node's transaction is begun, given a partition (twice with `repeat_add`) and committed."""

    async def main() -> int:
        broker = HandlerBroker(tmp_path / "data")
        await broker.create_topic("data", 1)
        target = broker.services.replicas if owner is None else owner
        calls: list[int] = []
        original = getattr(target, name)

        async def counted(*args: Any, **kwargs: Any) -> Any:
            calls.append(1)
            return await original(*args, **kwargs)

        monkeypatch.setattr(target, name, counted)
        coordinator = single_node_transactions(broker)
        await coordinator.start()
        try:
            pid, epoch = await coordinator.init_producer_id("writer", 60000, -1, -1)
            for _ in range(2 if repeat_add else 1):  # the second: nothing new to write
                await coordinator.add_partitions("writer", pid, epoch, [("data", 0)])
            await coordinator.end_txn("writer", pid, epoch, committed=True)
            await until(lambda: coordinator.state_log.txns["writer"].state is TxnState.COMPLETE_COMMIT)
            assert broker.log("data").log_end_offset == 1  # the COMMIT marker
            return len(calls)
        finally:
            coordinator.stop()
            broker.close()

    return asyncio.run(main())


def test_a_single_node_transaction_commits_without_awaiting_its_appends_completion(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _calls_in_one_commit(tmp_path, monkeypatch, None, "complete_appends") == 0


def test_a_single_node_transaction_step_on_a_committed_log_end_waits_for_no_replica(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The steps end with `txn_log_replicated` (complete_log_end): with the log end already committed
    and no fsync due, the answer is decided at once, without a wait for the replicas."""
    from odradek.partition import replica_manager

    waits = _calls_in_one_commit(
        tmp_path, monkeypatch, replica_manager, "replication_outcome", repeat_add=True
    )
    assert waits == 0
