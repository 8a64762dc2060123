"""Writing COMMIT / ABORT markers into the partitions a broker leads: what WriteTxnMarkers (key 27)
does on the partition leader, and what a single-node transaction coordinator calls directly (the
leader is itself, so there is no network round trip to make).

A marker is a control batch of the producer id and epoch, appended with the coordinator's origin (no
sequence checks; an older coordinator epoch is refused by the producer state as
TRANSACTION_COORDINATOR_FENCED). Appending it closes the producer's transaction in that partition,
which moves the last stable offset and, for an abort, adds the transaction to the `.txnindex`
(storage does both). A marker in `__consumer_offsets` also completes the producer's pending
transactional offset commits. As Kafka's acks=-1 marker appends, a marker is refused with nothing
appended (NOT_ENOUGH_REPLICAS) while the partition's ISR is under min.insync.replicas, and counts as
written only once the in-sync replicas hold it: a transaction completed on a marker its leader alone
had would stay open in that partition for good if the leader were lost. The checks and the append are
one synchronous step; only the wait for the followers is awaited.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Protocol

from odradek.coordinator.settings import OFFSETS_TOPIC
from odradek.partition.errors import error_code_for
from odradek.partition.leader_append import LeaderAppend
from odradek.partition.leadership import Leadership
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.protocol.records import ControlRecordType
from odradek.protocol.records.control import build_end_transaction_marker_batch
from odradek.storage import errors as storage_errors
from odradek.storage.partition import TopicPartition
from odradek.storage.producer_state import AppendOrigin


class OffsetsTransactions(Protocol):
    """The group coordinator, told of a marker written to `__consumer_offsets` (the transactional
    offset commits it holds are then committed or dropped)."""

    def complete_transaction(self, partition: int, producer_id: int, committed: bool) -> None: ...


class MarkerWriter:
    def __init__(
        self,
        leadership: Leadership,
        groups: OffsetsTransactions | None,
        clock: Callable[[], float] = time.time,
        timeout_ms: int = 30_000,
    ) -> None:
        #: The replica manager: the markers append through its one entry (partition/leadership.py).
        self.leadership = leadership
        self.groups = groups
        self.clock = clock
        #: How long a marker waits for its partition's in-sync replicas (Kafka's request.timeout.ms).
        self.timeout_ms = timeout_ms

    def write(
        self,
        topic: str,
        partition: int,
        producer_id: int,
        producer_epoch: int,
        committed: bool,
        coordinator_epoch: int,
    ) -> Awaitable[ErrorCode]:
        """Append the marker now, and return its outcome to await: NONE once the in-sync replicas hold
        it, else the append's error (NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS with nothing appended,
        REQUEST_TIMED_OUT, NOT_ENOUGH_REPLICAS_AFTER_APPEND), which the coordinator retries: a marker
        written again closes nothing twice."""
        made = self._append(topic, partition, producer_id, producer_epoch, committed, coordinator_epoch)
        if isinstance(made, ErrorCode):
            return _answered(made)
        return self._completed(made)

    def _append(
        self,
        topic: str,
        partition: int,
        producer_id: int,
        producer_epoch: int,
        committed: bool,
        coordinator_epoch: int,
    ) -> LeaderAppend | ErrorCode:
        control = ControlRecordType.COMMIT if committed else ControlRecordType.ABORT
        batch = bytearray(
            build_end_transaction_marker_batch(
                control,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                coordinator_epoch=coordinator_epoch,
                timestamp=int(self.clock() * 1000),
            )
        )
        try:
            # As Kafka's marker appends, acks=-1: refused with nothing appended while the ISR is under
            # min.insync.replicas, or the marker would wait for an ISR that cannot take it and every
            # retry append another. Not led here: NOT_LEADER_OR_FOLLOWER (the marker goes to the
            # leader, through the coordinator's marker channel); no log here, UNKNOWN_TOPIC_OR_PARTITION
            # (deleted meanwhile, or this broker's LeaderAndIsr is late: the channel tries again and
            # skips the partition once the metadata says it is gone, as Kafka's).
            made = self.leadership.append_records(
                TopicPartition(topic, partition), batch, AppendOrigin.COORDINATOR, required_acks=-1
            )
        except KafkaError as refused:
            return refused.error_code
        except storage_errors.StorageError as error:
            return error_code_for(error)
        if topic == OFFSETS_TOPIC and self.groups is not None:
            self.groups.complete_transaction(partition, producer_id, committed)
        return made

    async def _completed(self, made: LeaderAppend) -> ErrorCode:
        """The marker's outcome: once fsynced if due and on the in-sync replicas (the replica manager's
        `complete_appends`, as a Produce's), unless known at the append (no fsync due, no wait)."""
        if made.completed_at_append():
            return ErrorCode.NONE
        [outcome] = await self.leadership.complete_appends([made], self.timeout_ms)
        return outcome


async def _answered(error: ErrorCode) -> ErrorCode:
    return error
