"""A TxnOffsetCommit was refused INVALID_TXN_STATE while the transaction coordinator on the group
coordinator's own broker was loading the transactional id's `__transaction_state` partition.

The group's offsets partition must be in the producer's ongoing transaction (KIP-890 part 1): the group
coordinator asks the id's transaction coordinator. Another broker's answers COORDINATOR_LOAD_IN_PROGRESS
while it loads (AddPartitionsToTxn, verify_only), and the producer retries; the one on the same broker
was asked for the producer id among the transactions loaded so far, did not find it and answered
INVALID_TXN_STATE: after a transaction coordinator's failover, the producer's transaction failed.
"""

from __future__ import annotations

import asyncio

import pytest

from odradek.coordinator import runtime
from odradek.coordinator.loader import replay_partition
from odradek.protocol.error_codes import ErrorCode
from tests.support.handler_services import HandlerBroker
from tests.unit.handlers.test_offset_fetch_require_stable import (
    TXN,
    broker,
    coordinators,
    send_offsets_to_transaction,
    txn_offset_commit,
)

pytestmark = pytest.mark.timeout(30)
__all__ = ["broker"]  # the fixture


async def test_a_txn_offset_commit_while_the_transaction_coordinator_loads_is_retriable(
    broker: HandlerBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with coordinators(broker):
        pid, epoch = await send_offsets_to_transaction(broker, 7)
        transactions = broker.services.transactions
        assert transactions is not None
        state_log = transactions.state_log
        partition = state_log.partition_for(TXN)
        loading = asyncio.Event()

        async def held_replay(*args: object) -> int:
            await loading.wait()
            return await replay_partition(*args)  # type: ignore[arg-type]

        monkeypatch.setattr(runtime, "replay_partition", held_replay)
        state_log.resign(partition)
        state_log.become_leader(partition)  # loading again, from its log

        assert await txn_offset_commit(broker, pid, epoch, 9) is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS

        loading.set()
        await state_log.wait_loaded()
        assert await txn_offset_commit(broker, pid, epoch, 9) is ErrorCode.NONE
