"""What a client is told when a coordinator's write to its internal topic fails, as Kafka 3.9 tells it.

A coordinator's write is an acks=all append: it fails with the append's own error (NOT_ENOUGH_REPLICAS
before anything is appended when the partition's ISR is under min.insync.replicas,
NOT_LEADER_OR_FOLLOWER, KAFKA_STORAGE_ERROR, a batch too large) or while it waits for the ISR
(REQUEST_TIMED_OUT, NOT_ENOUGH_REPLICAS_AFTER_APPEND, leadership lost: NOT_LEADER_OR_FOLLOWER). Each
coordinator of a ZooKeeper-mode Kafka maps those to its own client errors:
- offset commits (GroupMetadataManager.storeOffsets, maybeConvertOffsetCommitError): a timeout stays
  REQUEST_TIMED_OUT (clients retry it against the same coordinator), a batch too large is
  INVALID_COMMIT_OFFSET_SIZE;
- group metadata (storeGroup, the JoinGroup/SyncGroup write): a timeout is REBALANCE_IN_PROGRESS (the
  members join again);
- transactions (TransactionStateManager.appendTransactionToLog): a timeout is COORDINATOR_NOT_AVAILABLE;
- KIP-848 consumer groups (the new coordinator's CoordinatorRuntime): as transactions.
In all of them an ISR too small (before or after the append) is COORDINATOR_NOT_AVAILABLE and a lost
leadership or a failed disk NOT_COORDINATOR.
"""

from __future__ import annotations

from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.storage import errors as storage_errors

E = ErrorCode

#: Errors every coordinator maps alike.
_NOT_AVAILABLE = (E.UNKNOWN_TOPIC_OR_PARTITION, E.NOT_ENOUGH_REPLICAS, E.NOT_ENOUGH_REPLICAS_AFTER_APPEND)
_NOT_COORDINATOR = (E.NOT_LEADER_OR_FOLLOWER, E.KAFKA_STORAGE_ERROR)
_TOO_LARGE = (E.MESSAGE_TOO_LARGE, E.RECORD_LIST_TOO_LARGE, E.INVALID_FETCH_SIZE)


def append_failure(error: BaseException) -> ErrorCode:
    """The error an append to the internal topic failed with, as ReplicaManager reports it."""
    if isinstance(error, KafkaError):
        return error.error_code
    if isinstance(error, storage_errors.RecordTooLargeError):
        return E.MESSAGE_TOO_LARGE
    if isinstance(error, storage_errors.LogStorageError | OSError):
        return E.KAFKA_STORAGE_ERROR
    return E.UNKNOWN_SERVER_ERROR


def offset_commit_error(code: ErrorCode) -> ErrorCode:
    """An offset commit's (OffsetCommit, TxnOffsetCommit) failed write, for its client."""
    if code in _TOO_LARGE:
        return E.INVALID_COMMIT_OFFSET_SIZE
    return _common(code, timed_out=E.REQUEST_TIMED_OUT)


def group_metadata_error(code: ErrorCode) -> ErrorCode:
    """A classic group's GroupMetadata write (JoinGroup, SyncGroup), for the members."""
    if code in _TOO_LARGE:
        return E.UNKNOWN_SERVER_ERROR
    return _common(code, timed_out=E.REBALANCE_IN_PROGRESS)


def transaction_log_error(code: ErrorCode) -> ErrorCode:
    """A `__transaction_state` write, for the transactional client; also the KIP-848 coordinator's."""
    if code in _TOO_LARGE:
        return E.UNKNOWN_SERVER_ERROR
    return _common(code, timed_out=E.COORDINATOR_NOT_AVAILABLE)


def _common(code: ErrorCode, timed_out: ErrorCode) -> ErrorCode:
    if code in _NOT_AVAILABLE:
        return E.COORDINATOR_NOT_AVAILABLE
    if code in _NOT_COORDINATOR:
        return E.NOT_COORDINATOR
    if code is E.REQUEST_TIMED_OUT:
        return timed_out
    return code
