"""The transaction coordinator's answers wait for the ISR, as acks=all.

Kafka's coordinator appends with acks=-1 and answers its client only once the in-sync replicas hold the
record, so a coordinator that takes over (the partition's next leader, elected from the ISR) finds every
state a client was told about: an EndTxn answered NONE is a PrepareCommit that survives the
coordinator's loss. The coordinator's own writes wait for the ISR before they are applied
(coordinator/txn_state_log.py, through the replica manager's `complete_appends`); a step that wrote
nothing (partitions already in the transaction, a retried EndTxn of a completed transaction) may still
stand on a record an earlier step appended, so the coordinator's steps end here (txn_coordinator.py):
answered once the id's partition's high watermark covers what was appended to it (and it is fsynced if
due), up to the transaction's timeout (as Kafka's runtime defers a write without records to the last
written offset). After the step's own write that is at once. A timed-out wait, or an ISR under
`transaction.state.log.min.isr`, is COORDINATOR_NOT_AVAILABLE, leadership lost meanwhile
NOT_COORDINATOR (Kafka's mapping of the append's errors, coordinator/write_errors.py), which clients
retry. A leader alone in its ISR (a single node) moves the high watermark with the append.
"""

from __future__ import annotations

from odradek.coordinator.txn_state_log import TRANSACTION_STATE_TOPIC, TxnStateLog
from odradek.coordinator.write_errors import transaction_log_error
from odradek.protocol.error_codes import ErrorCode


async def txn_log_replicated(state_log: TxnStateLog, transactional_id: str) -> ErrorCode | None:
    """None once everything appended so far to the transactional id's `__transaction_state`
    partition is committed; else the error the client is answered with. Waits at most the
    transaction's timeout, request.timeout.ms for an id it does not know."""
    partition = state_log.partition_for(transactional_id)
    log = state_log.logs.get_log(TRANSACTION_STATE_TOPIC, partition)
    if log is None:
        return ErrorCode.NOT_COORDINATOR
    if log.high_watermark < log.log_end_offset and state_log.leadership.under_min_isr(
        TRANSACTION_STATE_TOPIC, partition
    ):
        # A retried step whose record is appended already: as Kafka's append of it again would be,
        # refused at once (NOT_ENOUGH_REPLICAS) rather than after a wait the HW cannot end. The
        # transaction coordinator's own rule, not complete_log_end's: the group coordinator's steps
        # that write nothing wait, as Kafka's CoordinatorRuntime, with no min-ISR check.
        return transaction_log_error(ErrorCode.NOT_ENOUGH_REPLICAS)
    metadata = state_log.txns.get(transactional_id)
    timeout_ms = metadata.timeout_ms if metadata is not None else state_log.config.request_timeout_ms
    outcome = await state_log.complete_log_end(partition, timeout_ms)
    return None if outcome is ErrorCode.NONE else transaction_log_error(outcome)
