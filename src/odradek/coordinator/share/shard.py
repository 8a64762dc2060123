"""One `__share_group_state` partition's share-partition states (Kafka's ShareCoordinatorShard).

A step (initialize, write, a read that moves the leader epoch, delete) checks the request against
the state in memory and returns the records to append; the state changes only when those records are
replayed, after the in-sync replicas hold them (state_log.py), and loading a partition is the same
replay. So what a client is told is always what a coordinator elected from the ISR would load.

The checks and their order are Kafka 4.4's: a negative partition, leader or state epoch is
INVALID_REQUEST, so is a write or read of a state never initialised; a leader epoch older than the
newest seen is FENCED_LEADER_EPOCH, a state epoch older than the newest seen FENCED_STATE_EPOCH; a topic
id or partition the metadata does not know is UNKNOWN_TOPIC_OR_PARTITION.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace

from odradek.coordinator.share.batches import combine_batches
from odradek.coordinator.share.records import (
    SNAPSHOT,
    UPDATE,
    ShareSnapshotValue,
    ShareStateRecord,
    ShareUpdateValue,
    decode_share_record,
    from_record_batches,
    to_record_batches,
)
from odradek.partition.share.persister import (
    SharePartitionKey,
    ShareState,
    ShareStateError,
    ShareStateSummary,
    StateBatch,
)
from odradek.protocol.error_codes import ErrorCode

log = logging.getLogger("odradek.coordinator.share")

#: Whether the metadata knows a topic id and partition.
PartitionExists = Callable[[SharePartitionKey], bool]


@dataclass(frozen=True, slots=True)
class ShareGroupOffset:
    """A share partition's state as the log says (Kafka's ShareGroupOffset)."""

    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    delivery_complete_count: int
    create_timestamp: int
    write_timestamp: int
    batches: tuple[StateBatch, ...]


class ShareShard:
    def __init__(
        self,
        partition: int,
        updates_per_snapshot: Callable[[], int],
        now_ms: Callable[[], int],
        partition_exists: PartitionExists,
    ) -> None:
        self.partition = partition
        self.updates_per_snapshot = updates_per_snapshot
        self.now_ms = now_ms
        self.partition_exists = partition_exists
        self.states: dict[SharePartitionKey, ShareGroupOffset] = {}
        #: The newest leader and state epochs seen per key: only ever raised, so older ones are fenced.
        self.leader_epochs: dict[SharePartitionKey, int] = {}
        self.state_epochs: dict[SharePartitionKey, int] = {}
        #: ShareUpdate records since the key's last ShareSnapshot.
        self.update_counts: dict[SharePartitionKey, int] = {}
        #: The offset of each state's newest snapshot: its replay starts there (Kafka's
        #: ShareCoordinatorOffsetsManager), so the records before the oldest of them are redundant.
        self.snapshot_offsets: dict[SharePartitionKey, int] = {}
        #: The offset after the last record replayed (None: none yet).
        self.next_offset: int | None = None

    # ----- the runtime's side -----------------------------------------------------------------

    def replay_log_record(
        self, key: bytes | None, value: bytes | None, offset: int, producer_id: int | None
    ) -> bool:
        self.replay(decode_share_record(key, value), offset)  # an unreadable one is logged and skipped
        return True

    def replay_marker(self, producer_id: int, committed: bool) -> None:
        pass  # the share coordinator writes no transactional batches

    def on_loaded(self) -> None:
        log.debug("loaded __share_group_state partition %d: %d states", self.partition, len(self.states))

    def unload(self) -> None:
        self.states.clear()
        self.leader_epochs.clear()
        self.state_epochs.clear()
        self.update_counts.clear()
        self.snapshot_offsets.clear()

    def loaded_keys(self) -> int:
        return len(self.states)

    # ----- replay -------------------------------------------------------------------------------

    def last_redundant_offset(self) -> int | None:
        """The offset before which no record is needed to load this partition's states: the oldest
        state's newest snapshot (every record, when there is no state)."""
        if self.snapshot_offsets:
            return min(self.snapshot_offsets.values())
        return self.next_offset

    def replay(self, record: ShareStateRecord, offset: int) -> None:
        """Apply `record`, found (or just written) at `offset`."""
        self.next_offset = offset + 1
        key, value = record.key, record.value
        if value is None:
            if record.record_type == SNAPSHOT:  # a deleted state
                for states in (
                    self.states,
                    self.leader_epochs,
                    self.state_epochs,
                    self.update_counts,
                    self.snapshot_offsets,
                ):
                    states.pop(key, None)
            return
        if isinstance(value, ShareSnapshotValue):
            self.states[key] = ShareGroupOffset(
                value.snapshot_epoch,
                value.state_epoch,
                value.leader_epoch,
                value.start_offset,
                value.delivery_complete_count,
                value.create_timestamp,
                value.write_timestamp,
                from_record_batches(value.state_batches),
            )
            self.update_counts[key] = 0
            self.snapshot_offsets[key] = offset
            self._raise(self.state_epochs, key, value.state_epoch)
            self._raise(self.leader_epochs, key, value.leader_epoch)
            return
        assert isinstance(value, ShareUpdateValue)
        current = self.states.get(key)
        self._raise(self.leader_epochs, key, value.leader_epoch)
        if current is None:  # an update whose snapshot was lost: as Kafka, it stands alone
            self.snapshot_offsets[key] = offset
            self.states[key] = ShareGroupOffset(
                value.snapshot_epoch,
                0,
                value.leader_epoch,
                value.start_offset,
                value.delivery_complete_count,
                0,
                0,
                combine_batches((), from_record_batches(value.state_batches), value.start_offset),
            )
            self.update_counts[key] = 0
            return
        start_offset = current.start_offset if value.start_offset == -1 else value.start_offset
        self.states[key] = replace(
            current,
            leader_epoch=current.leader_epoch if value.leader_epoch == -1 else value.leader_epoch,
            start_offset=start_offset,
            delivery_complete_count=value.delivery_complete_count,
            batches=combine_batches(current.batches, from_record_batches(value.state_batches), start_offset),
        )
        self.update_counts[key] = self.update_counts.get(key, 0) + 1

    @staticmethod
    def _raise(epochs: dict[SharePartitionKey, int], key: SharePartitionKey, epoch: int) -> None:
        if epoch > epochs.get(key, epoch - 1):
            epochs[key] = epoch

    # ----- steps ----------------------------------------------------------------------------------

    def initialize(self, key: SharePartitionKey, state_epoch: int, start_offset: int) -> ShareStateRecord:
        """InitializeShareGroupState: a new snapshot at `start_offset` (-1: the leader decides from
        auto.offset.reset) and `state_epoch`, nothing in flight."""
        self._check_partition(key)
        if state_epoch < 0:
            raise ShareStateError(ErrorCode.INVALID_REQUEST, "The state epoch cannot be a negative number.")
        newest = self.state_epochs.get(key)
        if newest is not None and newest > state_epoch:
            raise ShareStateError(ErrorCode.FENCED_STATE_EPOCH)
        self._check_known(key)
        current = self.states.get(key)
        now = self.now_ms()
        return ShareStateRecord(
            SNAPSHOT,
            key,
            ShareSnapshotValue(
                snapshot_epoch=0 if current is None else current.snapshot_epoch + 1,
                state_epoch=state_epoch,
                leader_epoch=0,
                start_offset=start_offset,
                delivery_complete_count=-1 if start_offset == -1 else 0,
                create_timestamp=now,
                write_timestamp=now,
                state_batches=[],
            ),
        )

    def write(
        self,
        key: SharePartitionKey,
        state_epoch: int,
        leader_epoch: int,
        start_offset: int,
        batches: tuple[StateBatch, ...],
        delivery_complete_count: int,
    ) -> ShareStateRecord:
        """WriteShareGroupState: the record of a leader's change (an update, or every N a snapshot)."""
        self._check_partition(key)
        if leader_epoch < 0:
            raise ShareStateError(ErrorCode.INVALID_REQUEST, "The leader epoch cannot be a negative number.")
        if state_epoch < 0:
            raise ShareStateError(ErrorCode.INVALID_REQUEST, "The state epoch cannot be a negative number.")
        current = self._initialized(key, "Write")
        if self.leader_epochs.get(key, leader_epoch) > leader_epoch:
            raise ShareStateError(ErrorCode.FENCED_LEADER_EPOCH)
        if self.state_epochs.get(key, state_epoch) > state_epoch:
            raise ShareStateError(ErrorCode.FENCED_STATE_EPOCH)
        self._check_known(key)
        return self._state_record(
            key, current, current.leader_epoch, start_offset, batches, delivery_complete_count
        )

    def read(self, key: SharePartitionKey, leader_epoch: int) -> tuple[ShareState, ShareStateRecord | None]:
        """ReadShareGroupState: the state, and the record that makes `leader_epoch` the newest (None
        when it already is): a new leader's read fences the writes of the old one."""
        self._check_partition(key)
        if leader_epoch < 0:
            raise ShareStateError(ErrorCode.INVALID_REQUEST, "The leader epoch cannot be a negative number.")
        current = self._initialized(key, "Read")
        newest = self.leader_epochs.get(key)
        if newest is not None and newest > leader_epoch:
            raise ShareStateError(ErrorCode.FENCED_LEADER_EPOCH)
        self._check_known(key)
        # the leader epoch on record once this read is: the caller's (what the RPC's answer implies)
        state = ShareState(
            current.state_epoch,
            leader_epoch,
            current.start_offset,
            current.batches,
            current.delivery_complete_count,
        )
        if newest == leader_epoch:
            return state, None
        record = self._state_record(
            key, current, leader_epoch, current.start_offset, (), current.delivery_complete_count
        )
        return state, record

    def read_summary(self, key: SharePartitionKey) -> ShareStateSummary:
        """ReadShareGroupStateSummary: writes nothing, fences nothing; a state never initialised reads
        as start offset -1, epochs 0 (as Kafka's)."""
        self._check_partition(key)
        self._check_known(key)
        current = self.states.get(key)
        if current is None:
            return ShareStateSummary(0, 0, -1, -1)
        return ShareStateSummary(
            current.state_epoch, current.leader_epoch, current.start_offset, current.delivery_complete_count
        )

    def delete(self, key: SharePartitionKey) -> ShareStateRecord | None:
        """DeleteShareGroupState: the tombstone (None: there is no state, nothing to write)."""
        self._check_partition(key)
        self._check_known(key)
        if key not in self.states:
            return None
        return ShareStateRecord(SNAPSHOT, key, None)

    def cold_states(self, older_than_ms: int) -> list[SharePartitionKey]:
        """The states whose newest snapshot was written `older_than_ms` ago or more."""
        now = self.now_ms()
        return [key for key, state in self.states.items() if now - state.write_timestamp >= older_than_ms]

    def cold_snapshot(self, key: SharePartitionKey) -> ShareStateRecord | None:
        """The state as a new snapshot, changing nothing but its write time (None: deleted meanwhile),
        so that pruning may pass the old one (Kafka's snapshotColdPartitions)."""
        current = self.states.get(key)
        if current is None:
            return None
        return ShareStateRecord(
            SNAPSHOT,
            key,
            ShareSnapshotValue(
                snapshot_epoch=current.snapshot_epoch + 1,
                state_epoch=current.state_epoch,
                leader_epoch=current.leader_epoch,
                start_offset=current.start_offset,
                delivery_complete_count=current.delivery_complete_count,
                create_timestamp=current.create_timestamp,
                write_timestamp=self.now_ms(),
                state_batches=to_record_batches(current.batches),
            ),
        )

    # ----- helpers --------------------------------------------------------------------------------

    def _state_record(
        self,
        key: SharePartitionKey,
        current: ShareGroupOffset,
        leader_epoch: int,
        requested_start_offset: int,
        batches: tuple[StateBatch, ...],
        delivery_complete_count: int,
    ) -> ShareStateRecord:
        """A ShareUpdate with what changed or, after `updates_per_snapshot` of them, a whole snapshot.
        The start offset never moves back (-1: unchanged); the count of completed deliveries is the
        newer one's when the start offset moved, the larger one's when it did not."""
        start_offset = max(requested_start_offset, current.start_offset)
        if requested_start_offset == current.start_offset:
            delivery_complete_count = max(delivery_complete_count, current.delivery_complete_count)
        elif requested_start_offset < current.start_offset:
            delivery_complete_count = current.delivery_complete_count
        if self.update_counts.get(key, 0) >= self.updates_per_snapshot():
            return ShareStateRecord(
                SNAPSHOT,
                key,
                ShareSnapshotValue(
                    snapshot_epoch=current.snapshot_epoch + 1,
                    state_epoch=current.state_epoch,
                    leader_epoch=leader_epoch,
                    start_offset=start_offset,
                    delivery_complete_count=delivery_complete_count,
                    create_timestamp=current.create_timestamp,
                    write_timestamp=self.now_ms(),
                    state_batches=to_record_batches(combine_batches(current.batches, batches, start_offset)),
                ),
            )
        return ShareStateRecord(
            UPDATE,
            key,
            ShareUpdateValue(
                snapshot_epoch=current.snapshot_epoch,
                leader_epoch=leader_epoch,
                start_offset=start_offset,
                delivery_complete_count=delivery_complete_count,
                state_batches=to_record_batches(combine_batches((), batches, start_offset)),
            ),
        )

    def _initialized(self, key: SharePartitionKey, what: str) -> ShareGroupOffset:
        current = self.states.get(key)
        if current is None:
            raise ShareStateError(
                ErrorCode.INVALID_REQUEST, f"{what} operation on uninitialized share partition not allowed."
            )
        return current

    @staticmethod
    def _check_partition(key: SharePartitionKey) -> None:
        if key.partition < 0:
            raise ShareStateError(ErrorCode.INVALID_REQUEST, "The partition id cannot be a negative number.")

    def _check_known(self, key: SharePartitionKey) -> None:
        if not self.partition_exists(key):
            raise ShareStateError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
