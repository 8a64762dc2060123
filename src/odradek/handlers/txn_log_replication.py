"""The transaction coordinator's writes to `__transaction_state` wait for the ISR, as acks=all.

Kafka's coordinator appends with acks=-1 and answers its client only once the in-sync replicas hold
the record, so a coordinator that takes over (the partition's next leader, elected from the ISR) finds
every state a client was told about: an EndTxn answered NONE is a PrepareCommit that survives the
coordinator's loss. The coordinator here appends synchronously (one step is never interleaved with
another); the handlers then wait here before answering, up to the broker's `request.timeout.ms` (as
Kafka's TransactionStateManager). A timed-out wait, or an ISR under `transaction.state.log.min.isr`,
is COORDINATOR_NOT_AVAILABLE, leadership lost meanwhile NOT_COORDINATOR (Kafka's mapping of the
append's errors); the client retries, and a retried EndTxn of a prepared transaction is answered once
it is replicated. On a single node the append itself moves the high watermark.
"""

from __future__ import annotations

from odradek.coordinator.txn_coordinator import TransactionCoordinator
from odradek.coordinator.txn_state_log import TRANSACTION_STATE_TOPIC
from odradek.handlers.context import RequestContext
from odradek.handlers.delayed_produce import wait_for_high_watermark
from odradek.protocol.error_codes import ErrorCode
from odradek.storage.partition import TopicPartition


async def txn_log_replicated(
    coordinator: TransactionCoordinator, transactional_id: str, context: RequestContext
) -> ErrorCode | None:
    """None once everything appended so far to the transactional id's `__transaction_state`
    partition is on its in-sync replicas; else the error the client is answered with."""
    replicas = context.services.replicas
    if replicas is None:
        return None
    partition = coordinator.state_log.partition_for(transactional_id)
    log = context.services.logs.get_log(TRANSACTION_STATE_TOPIC, partition)
    hosted = replicas.leading.get((TRANSACTION_STATE_TOPIC, partition))
    if log is None or hosted is None:
        return ErrorCode.NOT_COORDINATOR
    if replicas.under_min_isr(TRANSACTION_STATE_TOPIC, partition):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE  # the HW cannot move: no point waiting
    epoch = hosted.leader_epoch
    tp = TopicPartition(TRANSACTION_STATE_TOPIC, partition)
    timeout_ms = context.services.config.request_timeout_ms
    reached = await wait_for_high_watermark(tp, log, log.log_end_offset, timeout_ms, context)
    if not replicas.still_leading_since(TRANSACTION_STATE_TOPIC, partition, epoch):
        return ErrorCode.NOT_COORDINATOR  # a new epoch that kept this broker leader is no reason
    if not reached or replicas.under_min_isr(TRANSACTION_STATE_TOPIC, partition, maximal=True):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    return None
