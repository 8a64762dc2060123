"""A transactional id's state at its coordinator, as Kafka's TransactionMetadata keeps it.

The metadata changes only by replaying a `__transaction_state` record (`apply`), so what the
coordinator answers is always what its log says; a step builds the next value (`next_value`), the
coordinator appends it, then replays it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from odradek.coordinator.txn_records import TransactionLogPartitions, TransactionLogValue

#: The epoch after which a producer id is exhausted: Kafka bumps to a new producer id instead.
MAX_EPOCH = 32767 - 1
#: The timeout a two-phase-commit transaction is stored with (KIP-939, as Kafka stores it): such a
#: transaction waits for its external coordinator and is never aborted for its age.
TWO_PHASE_COMMIT_TIMEOUT_MS = 2**31 - 1


class TxnState(enum.IntEnum):
    """Kafka's TransactionState ids (the TransactionStatus byte of TransactionLogValue)."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def kafka_name(self) -> str:
        """The name DescribeTransactions and ListTransactions use (Kafka's TransactionState.name)."""
        return "".join(part.capitalize() for part in self.name.split("_"))

    @property
    def is_prepared(self) -> bool:
        return self in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)

    @property
    def is_complete(self) -> bool:
        return self in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)


@dataclass(slots=True)
class TransactionMetadata:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState = TxnState.EMPTY
    partitions: set[tuple[str, int]] = field(default_factory=set)
    start_ms: int = -1
    last_update_ms: int = -1
    #: The leader epoch of the `__transaction_state` partition when loaded: markers carry it.
    coordinator_epoch: int = 0
    #: The epoch before the last bump the producer itself asked for (KIP-360), so that a retried
    #: InitProducerId whose answer was lost gets the same epoch. In memory only, as in Kafka.
    last_producer_epoch: int = -1

    @classmethod
    def from_value(cls, transactional_id: str, value: TransactionLogValue) -> TransactionMetadata:
        return cls(
            transactional_id,
            value.producer_id,
            value.producer_epoch,
            value.transaction_timeout_ms,
            TxnState(value.transaction_status),
            {(p.topic, i) for p in value.transaction_partitions or [] for i in p.partition_ids},
            value.transaction_start_timestamp_ms,
            value.transaction_last_update_timestamp_ms,
        )

    def apply(self, value: TransactionLogValue) -> None:
        replayed = TransactionMetadata.from_value(self.transactional_id, value)
        replayed.coordinator_epoch = self.coordinator_epoch
        replayed.last_producer_epoch = self.last_producer_epoch
        for name in self.__slots__:
            setattr(self, name, getattr(replayed, name))

    def next_value(
        self,
        now_ms: int,
        *,
        state: TxnState | None = None,
        producer_id: int | None = None,
        producer_epoch: int | None = None,
        timeout_ms: int | None = None,
        partitions: set[tuple[str, int]] | None = None,
    ) -> TransactionLogValue:
        """The record value of this transaction with some fields changed (the start time is set when
        a transaction begins, as Kafka's prepareAddPartitions does)."""
        next_state = self.state if state is None else state
        parts = self.partitions if partitions is None else partitions
        start = self.start_ms
        if next_state is TxnState.ONGOING and self.state is not TxnState.ONGOING:
            start = now_ms
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(parts):
            by_topic.setdefault(topic, []).append(partition)
        return TransactionLogValue(
            producer_id=self.producer_id if producer_id is None else producer_id,
            producer_epoch=self.producer_epoch if producer_epoch is None else producer_epoch,
            transaction_timeout_ms=self.timeout_ms if timeout_ms is None else timeout_ms,
            transaction_status=int(next_state),
            transaction_partitions=[
                TransactionLogPartitions(topic=t, partition_ids=ids) for t, ids in by_topic.items()
            ],
            transaction_last_update_timestamp_ms=now_ms,
            transaction_start_timestamp_ms=start,
        )

    @property
    def two_phase_commit(self) -> bool:
        return self.timeout_ms == TWO_PHASE_COMMIT_TIMEOUT_MS

    def timed_out(self, now_ms: int) -> bool:
        if self.two_phase_commit:
            return False
        return self.state is TxnState.ONGOING and now_ms - self.start_ms > self.timeout_ms
