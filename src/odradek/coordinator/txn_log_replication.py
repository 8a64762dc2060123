"""The transaction coordinator's answers wait for the ISR, as acks=all.

Kafka's coordinator appends with acks=-1 and answers its client only once the in-sync replicas hold the
record, so a coordinator that takes over (the partition's next leader, elected from the ISR) finds every
state a client was told about: an EndTxn answered NONE is a PrepareCommit that survives the
coordinator's loss. The coordinator's own writes wait for the ISR before they are applied
(coordinator/txn_state_log.py); a step that wrote nothing (partitions already in the transaction, a
retried EndTxn of a completed transaction) may still stand on a record an earlier step appended, so
the handlers wait here too before answering: until the id's partition's high watermark covers what was
appended to it, up to the transaction's timeout (as Kafka's TransactionStateManager waits for its
appends). A timed-out wait, or an ISR under `transaction.state.log.min.isr`, is
COORDINATOR_NOT_AVAILABLE, leadership lost meanwhile NOT_COORDINATOR (Kafka's mapping of the append's
errors, coordinator/write_errors.py), which clients retry. On a single node the append itself moves the
high watermark.
"""

from __future__ import annotations

from odradek.coordinator.txn_coordinator import TransactionCoordinator
from odradek.coordinator.txn_state_log import TRANSACTION_STATE_TOPIC
from odradek.coordinator.write_errors import transaction_log_error
from odradek.partition.delayed_produce import LeaderReplicas, replication_outcome
from odradek.protocol.error_codes import ErrorCode
from odradek.storage.partition import TopicPartition


async def txn_log_replicated(
    coordinator: TransactionCoordinator,
    transactional_id: str,
    replicas: LeaderReplicas,
    default_timeout_ms: int,
) -> ErrorCode | None:
    """None once everything appended so far to the transactional id's `__transaction_state`
    partition is on its in-sync replicas; else the error the client is answered with. Waits at most
    the transaction's timeout, `default_timeout_ms` (request.timeout.ms) for an id it does not know."""
    partition = coordinator.state_log.partition_for(transactional_id)
    log = coordinator.state_log.logs.get_log(TRANSACTION_STATE_TOPIC, partition)
    if log is None:
        return ErrorCode.NOT_COORDINATOR
    if log.high_watermark < log.log_end_offset and replicas.under_min_isr(TRANSACTION_STATE_TOPIC, partition):
        # A retried step whose record is appended already: as Kafka's append of it again would be,
        # refused at once (NOT_ENOUGH_REPLICAS) rather than after a wait the HW cannot end.
        return transaction_log_error(ErrorCode.NOT_ENOUGH_REPLICAS)
    tp = TopicPartition(TRANSACTION_STATE_TOPIC, partition)
    metadata = coordinator.state_log.txns.get(transactional_id)
    timeout_ms = metadata.timeout_ms if metadata is not None else default_timeout_ms
    outcome = await replication_outcome(tp, log.log_end_offset, timeout_ms, replicas)
    return None if outcome is ErrorCode.NONE else transaction_log_error(outcome)
