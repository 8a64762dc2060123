"""Producer state for idempotence and transactions: per producer id, its epoch, the last five batches'
sequence ranges and offsets, and its open transaction, as Kafka's ProducerStateManager keeps them.

The Log asks ``prepare_update`` for a ProducerAppendInfo per producer in an append, which validates the
batches against a copy of the producer's entry (raising OutOfOrderSequenceError, InvalidProducerEpochError,
InvalidTxnStateError...); only after the bytes are written does the Log ``update`` the manager with it.
Open transactions give the first unstable offset, which bounds the last stable offset.
Snapshots (``<offset>.snapshot``) are described in ``producer_snapshot``.
"""

from __future__ import annotations

import enum
from collections import deque
from dataclasses import dataclass, field

from odradek.protocol.records import (
    NO_PRODUCER_EPOCH,
    NO_SEQUENCE,
    ControlRecordType,
    EndTransactionMarker,
)
from odradek.storage.errors import (
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OutOfOrderSequenceError,
    TransactionCoordinatorFencedError,
)

NUM_BATCHES_TO_RETAIN = 5
_INT32_MAX = 2**31 - 1


class AppendOrigin(enum.Enum):
    """Who appends: clients get full validation, the coordinator only epoch checks, replication none."""

    CLIENT = "client"
    COORDINATOR = "coordinator"
    REPLICATION = "replication"


def increment_sequence(sequence: int, increment: int) -> int:
    """Sequences wrap from Int32.MAX to 0."""
    if sequence > _INT32_MAX - increment:
        return increment - (_INT32_MAX - sequence) - 1
    return sequence + increment


def decrement_sequence(sequence: int, decrement: int) -> int:
    if sequence < decrement:
        return _INT32_MAX - (decrement - sequence) + 1
    return sequence - decrement


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int

    @property
    def first_seq(self) -> int:
        return decrement_sequence(self.last_seq, self.offset_delta)

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta


@dataclass(slots=True)
class ProducerStateEntry:
    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    coordinator_epoch: int = -1
    last_timestamp: int = -1
    current_txn_first_offset: int | None = None
    batches: deque[BatchMetadata] = field(default_factory=deque)

    @property
    def is_empty(self) -> bool:
        return not self.batches

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def last_data_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    def copy(self) -> ProducerStateEntry:
        return ProducerStateEntry(
            self.producer_id,
            self.producer_epoch,
            self.coordinator_epoch,
            self.last_timestamp,
            self.current_txn_first_offset,
            deque(self.batches),
        )

    def add_batch(
        self, epoch: int, last_seq: int, last_offset: int, offset_delta: int, timestamp: int
    ) -> None:
        self._maybe_update_epoch(epoch)
        self.batches.append(BatchMetadata(last_seq, last_offset, offset_delta, timestamp))
        if len(self.batches) > NUM_BATCHES_TO_RETAIN:
            self.batches.popleft()
        self.last_timestamp = timestamp

    def find_duplicate_batch(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        if epoch != self.producer_epoch:
            return None
        for batch in self.batches:
            if batch.first_seq == first_seq and batch.last_seq == last_seq:
                return batch
        return None

    def end_transaction(self, epoch: int, coordinator_epoch: int, timestamp: int) -> None:
        self._maybe_update_epoch(epoch)
        self.current_txn_first_offset = None
        self.coordinator_epoch = coordinator_epoch
        self.last_timestamp = timestamp

    def _maybe_update_epoch(self, epoch: int) -> None:
        if epoch != self.producer_epoch:
            self.batches.clear()
            self.producer_epoch = epoch


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


@dataclass(slots=True)
class TxnMetadata:
    producer_id: int
    first_offset: int
    last_offset: int | None = None


class ProducerAppendInfo:
    """Validates one producer's batches of an append against a private copy of its entry."""

    def __init__(self, producer_id: int, current: ProducerStateEntry, origin: AppendOrigin) -> None:
        self.producer_id = producer_id
        self.current = current
        self.origin = origin
        self.entry = current.copy()
        self.started_transactions: list[TxnMetadata] = []

    def append_data_batch(
        self,
        epoch: int,
        first_seq: int,
        last_seq: int,
        max_timestamp: int,
        first_offset: int,
        last_offset: int,
        is_transactional: bool,
    ) -> None:
        self._check_producer_epoch(epoch, first_offset)
        if self.origin is AppendOrigin.CLIENT:
            self._check_sequence(epoch, first_seq, first_offset)
        self.entry.add_batch(epoch, last_seq, last_offset, last_offset - first_offset, max_timestamp)
        if self.entry.current_txn_first_offset is not None and not is_transactional:
            raise InvalidTxnStateError(
                f"expected a transactional write from producer {self.producer_id} at offset {first_offset}"
            )
        if self.entry.current_txn_first_offset is None and is_transactional:
            self.entry.current_txn_first_offset = first_offset
            self.started_transactions.append(TxnMetadata(self.producer_id, first_offset))

    def append_end_txn_marker(
        self, marker: EndTransactionMarker, epoch: int, offset: int, timestamp: int
    ) -> CompletedTxn | None:
        """Close the producer's transaction; None if it had none open (an empty transaction)."""
        self._check_producer_epoch(epoch, offset)
        stale = self.entry.coordinator_epoch > marker.coordinator_epoch
        if stale and self.origin is not AppendOrigin.REPLICATION:
            raise TransactionCoordinatorFencedError(
                f"marker for producer {self.producer_id} at offset {offset} has coordinator epoch "
                f"{marker.coordinator_epoch}, older than {self.entry.coordinator_epoch}"
            )
        first = self.entry.current_txn_first_offset
        completed = None
        if first is not None:
            completed = CompletedTxn(
                self.producer_id, first, offset, marker.control_type is ControlRecordType.ABORT
            )
        self.entry.end_transaction(epoch, marker.coordinator_epoch, timestamp)
        return completed

    def _check_producer_epoch(self, epoch: int, offset: int) -> None:
        if epoch < self.entry.producer_epoch and self.origin is not AppendOrigin.REPLICATION:
            raise InvalidProducerEpochError(
                f"epoch {epoch} of producer {self.producer_id} at offset {offset} is older than the "
                f"last seen epoch {self.entry.producer_epoch}"
            )

    def _check_sequence(self, epoch: int, first_seq: int, offset: int) -> None:
        if epoch != self.entry.producer_epoch:
            # A bumped epoch must start over at sequence 0 (unless we never knew an epoch for it).
            if first_seq != 0 and self.entry.producer_epoch != NO_PRODUCER_EPOCH:
                raise OutOfOrderSequenceError(
                    f"producer {self.producer_id} at offset {offset}: new epoch {epoch} starts at "
                    f"sequence {first_seq}, expected 0"
                )
            return
        if not self.entry.is_empty:
            current_last_seq = self.entry.last_seq
        elif epoch == self.current.producer_epoch:
            current_last_seq = self.current.last_seq
        else:
            current_last_seq = NO_SEQUENCE
        # No known epoch (state expired or removed with its segments): accept any sequence (KIP-360).
        if self.current.producer_epoch != NO_PRODUCER_EPOCH and not _in_sequence(current_last_seq, first_seq):
            raise OutOfOrderSequenceError(
                f"producer {self.producer_id} at offset {offset}: sequence {first_seq} does not follow "
                f"{current_last_seq}"
            )


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == _INT32_MAX)


class ProducerStateManager:
    """Producer entries, open and not-yet-replicated transactions, and the offset they reflect."""

    def __init__(self, producer_id_expiration_ms: int = 86_400_000) -> None:
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self.producers: dict[int, ProducerStateEntry] = {}
        self.ongoing_txns: dict[int, TxnMetadata] = {}  # by first offset
        self.unreplicated_txns: dict[int, TxnMetadata] = {}  # completed, marker not yet below the HW
        self.map_end_offset = 0

    def last_entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self.producers.get(producer_id)

    def prepare_update(self, producer_id: int, origin: AppendOrigin) -> ProducerAppendInfo:
        current = self.producers.get(producer_id) or ProducerStateEntry(producer_id)
        return ProducerAppendInfo(producer_id, current, origin)

    def update(self, info: ProducerAppendInfo) -> None:
        self.producers[info.producer_id] = info.entry
        for txn in info.started_transactions:
            self.ongoing_txns[txn.first_offset] = txn

    def last_stable_offset(self, completed: CompletedTxn) -> int:
        """The LSO right after ``completed`` ends: the next other open transaction's start, if any."""
        for first_offset in sorted(self.ongoing_txns):
            if self.ongoing_txns[first_offset].producer_id != completed.producer_id:
                return first_offset
        return completed.last_offset + 1

    def complete_txn(self, completed: CompletedTxn) -> None:
        txn = self.ongoing_txns.pop(completed.first_offset, None)
        if txn is None:
            txn = TxnMetadata(completed.producer_id, completed.first_offset)
        txn.last_offset = completed.last_offset
        self.unreplicated_txns[completed.first_offset] = txn

    @property
    def first_unstable_offset(self) -> int | None:
        if not self.ongoing_txns and not self.unreplicated_txns:
            return None  # nearly always, and asked for each partition of every fetch: no list built
        return min([*self.ongoing_txns, *self.unreplicated_txns])

    def on_high_watermark_updated(self, high_watermark: int) -> None:
        self._remove_unreplicated(high_watermark)

    def on_log_start_offset_incremented(self, log_start_offset: int) -> None:
        self._remove_unreplicated(log_start_offset)
        self.map_end_offset = max(self.map_end_offset, log_start_offset)

    def remove_expired_producers(self, now_ms: int) -> list[int]:
        """Forget producers idle for ``producer.id.expiration.ms`` with no open transaction."""
        expired = [
            pid
            for pid, entry in self.producers.items()
            if entry.current_txn_first_offset is None
            and now_ms - entry.last_timestamp >= self.producer_id_expiration_ms
        ]
        for pid in expired:
            del self.producers[pid]
        return expired

    def truncate_fully_and_start_at(self, offset: int) -> None:
        self.producers.clear()
        self.ongoing_txns.clear()
        self.unreplicated_txns.clear()
        self.map_end_offset = offset

    def load_entries(self, entries: list[ProducerStateEntry], map_end_offset: int, now_ms: int) -> None:
        """Replace the state with a snapshot's entries (expired ones are dropped, as Kafka does)."""
        self.truncate_fully_and_start_at(map_end_offset)
        for entry in entries:
            open_txn = entry.current_txn_first_offset
            if open_txn is None and now_ms - entry.last_timestamp >= self.producer_id_expiration_ms:
                continue
            self.producers[entry.producer_id] = entry
            if open_txn is not None:
                self.ongoing_txns[open_txn] = TxnMetadata(entry.producer_id, open_txn)

    def _remove_unreplicated(self, offset: int) -> None:
        for first_offset in [f for f, t in self.unreplicated_txns.items() if (t.last_offset or 0) < offset]:
            del self.unreplicated_txns[first_offset]
