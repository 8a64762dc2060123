"""A coordinator's write that is applied only once committed: append, wait, and only then let the
caller apply it (the transaction state log's and the share-group state's steps).

As Kafka's coordinators (the TransactionStateManager's pendingState, the CoordinatorRuntime's
completion once the high watermark passes a write): the records are appended as one acks=-1 append
through the replica manager's entry, `complete_appends` does the due fsync and the wait for the in-sync
replicas, and the write counts only if the runtime still leads the partition at the epoch it appended
at. The caller's memory therefore never holds a state a coordinator elected from the ISR would not
find in the log, and a failed write leaves no trace. Errors are the transaction coordinator's mapping
(coordinator/write_errors.py), which KIP-932's share coordinator uses too.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from odradek.coordinator.runtime import CoordinatorRuntime, LogRecord, PartitionState
from odradek.coordinator.write_errors import append_failure, transaction_log_error
from odradek.partition.leader_append import LeaderAppend
from odradek.protocol.error_codes import ErrorCode, KafkaError

log = logging.getLogger("odradek.coordinator")


async def append_committed(
    runtime: CoordinatorRuntime[Any], partition: int, records: Sequence[LogRecord], timeout_ms: int
) -> LeaderAppend:
    """Append `records` to `partition` and return what the append made once it is committed, at most
    `timeout_ms`; else KafkaError with the error the client is told: the append's or the wait's
    (COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, ...), NOT_COORDINATOR when the partition was unloaded
    (and maybe loaded again) meanwhile."""
    epoch = runtime.leader_epochs.get(partition)
    try:
        made = runtime.append_records(partition, records)
    except Exception as failure:
        log.warning("writing to %s-%d failed: %s", runtime.topic, partition, failure)
        raise KafkaError(transaction_log_error(append_failure(failure))) from None
    # known at the append (no fsync due, nobody to wait for: a single node's), else awaited
    outcome = ErrorCode.NONE if made.completed_at_append() else await runtime.complete(made, timeout_ms)
    if outcome is not ErrorCode.NONE:
        log.info(
            "a write to %s-%d did not reach the in-sync replicas (%s); not applied",
            runtime.topic,
            partition,
            outcome.name,
        )
        raise KafkaError(transaction_log_error(outcome))
    if (
        runtime.leader_epochs.get(partition) != epoch
        or runtime.states.get(partition) is not PartitionState.ACTIVE
    ):
        raise KafkaError(ErrorCode.NOT_COORDINATOR)
    return made
