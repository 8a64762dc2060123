"""A leader that is also the transactional id's coordinator refused a transactional batch with
INVALID_PRODUCER_ID_MAPPING while that coordinator was loading the id's `__transaction_state`
partition.

KIP-890's verification asks the id's coordinator whether the partition is in the producer's ongoing
transaction. Asked by another leader (AddPartitionsToTxn, verify_only), a loading coordinator answers
COORDINATOR_LOAD_IN_PROGRESS, which the leader answers NOT_ENOUGH_REPLICAS: the producer retries. Asked
in-process, by a leader on the coordinator's own broker, it looked the id up among the transactions
loaded so far, did not find it, and answered INVALID_PRODUCER_ID_MAPPING, which a producer does not
retry: after a coordinator's failover, its transaction failed for a batch to a partition led on the new
coordinator's broker. Kafka's handleVerifyPartitionsInTransaction asks the coordinator's state first
(getTransactionState: COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR), wherever the leader is.
"""

from __future__ import annotations

import pytest

from odradek.partition.txn_verification import verify_batch
from odradek.protocol.error_codes import ErrorCode
from tests.support.handler_services import HandlerBroker
from tests.support.txn_coordinators import single_node_transactions
from tests.unit.storage.helpers import batch

pytestmark = pytest.mark.timeout(30)
TXN = "writer"


async def test_a_batch_verified_by_a_loading_coordinator_on_its_own_broker_is_retriable(
    handler_broker: HandlerBroker,
) -> None:
    await handler_broker.create_topic("data", 1)
    coordinator = single_node_transactions(handler_broker)
    await coordinator.start()
    try:
        pid, epoch = await coordinator.init_producer_id(TXN, 60000, -1, -1)
        assert await coordinator.add_partitions(TXN, pid, epoch, [("data", 0)]) == {
            ("data", 0): ErrorCode.NONE
        }
        records = batch(producer_id=pid, producer_epoch=epoch, base_sequence=0, transactional=True)
        assert verify_batch(coordinator, TXN, "data", 0, records) is ErrorCode.NONE

        # the id's partition loads again (led anew here): the transactions are replayed from its log
        state_log = coordinator.state_log
        partition = state_log.partition_for(TXN)
        state_log.resign(partition)
        state_log.become_leader(partition)
        assert TXN not in state_log.txns

        assert verify_batch(coordinator, TXN, "data", 0, records) is ErrorCode.NOT_ENOUGH_REPLICAS

        await state_log.wait_loaded()
        assert verify_batch(coordinator, TXN, "data", 0, records) is ErrorCode.NONE
    finally:
        coordinator.stop()
