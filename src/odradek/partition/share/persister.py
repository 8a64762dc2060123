"""What a share partition asks of the share-group state it survives on (KIP-932's persister).

The leader of a partition keeps, for each share group reading it, which records are acquired,
acknowledged or archived and how often each was delivered; that state outlives the leader through the
share coordinator, which keeps it in `__share_group_state` (Kafka's Persister interface and its RPCs
InitializeShareGroupState, ReadShareGroupState, WriteShareGroupState, DeleteShareGroupState and
ReadShareGroupStateSummary). This module is the contract between the two sides: the share partitions
(partition/share/) call it, the share coordinator (coordinator/share/) answers it, in-process on the
broker that coordinates the key and through those RPCs from any other; `server/` passes the
implementation to the share partitions' constructor.

Every call is for one share partition (group, topic id, partition); an implementation may batch them
into one request per coordinator. A refusal raises `ShareStateError` carrying Kafka's error code (for
example COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, FENCED_STATE_EPOCH, FENCED_LEADER_EPOCH,
UNKNOWN_TOPIC_OR_PARTITION, GROUP_ID_NOT_FOUND), as the RPC's partition result would.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from enum import IntEnum
from typing import Protocol

from odradek.protocol.error_codes import ErrorCode
from odradek.storage.partition import topic_id_from_string, topic_id_to_string


class DeliveryState(IntEnum):
    """A record's state in a share partition, with Kafka's numbers (RecordState), as the state batches
    of WriteShareGroupState carry them: only AVAILABLE, ACKNOWLEDGED and ARCHIVED are persisted."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


@dataclass(frozen=True, slots=True)
class SharePartitionKey:
    """One share group's view of one partition: what the share coordinator's key names
    (`group:topicId:partition` in FindCoordinator with key type SHARE)."""

    group_id: str
    topic_id: uuid.UUID
    partition: int

    @property
    def coordinator_key(self) -> str:
        """The FindCoordinator key (key type 2) that locates this state's share coordinator, with the
        topic id as Kafka writes it (URL-safe base64): its Java hash picks the `__share_group_state`
        partition, so it must be Kafka's string to the byte."""
        return f"{self.group_id}:{topic_id_to_string(self.topic_id)}:{self.partition}"

    @classmethod
    def from_coordinator_key(cls, key: str) -> SharePartitionKey:
        """Parse `group:topicId:partition` as Kafka's SharePartitionKey.validate does (the group id may
        itself hold colons; it must not be blank). ValueError for anything else."""
        group_id, _, rest = key.rpartition(":")
        group_id, _, topic_id = group_id.rpartition(":")
        if not group_id.strip():
            raise ValueError("the group id of a share partition key must not be empty")
        if not rest.isascii() or not rest.lstrip("-").isdigit() or len(rest) > 11:
            raise ValueError(f"not a partition: {rest[:20]!r}")
        partition = int(rest)
        if not -(1 << 31) <= partition < 1 << 31:
            raise ValueError(f"not a partition: {rest!r}")
        if len(topic_id) != 22:
            raise ValueError(f"not a topic id: {topic_id[:30]!r}")
        return cls(group_id, topic_id_from_string(topic_id), partition)


@dataclass(frozen=True, slots=True)
class StateBatch:
    """Records first_offset..last_offset (inclusive) all in one delivery state and delivery count."""

    first_offset: int
    last_offset: int
    delivery_state: DeliveryState
    delivery_count: int


@dataclass(frozen=True, slots=True)
class ShareState:
    """What ReadShareGroupState returns: the share-partition start offset (SPSO; -1 when never
    initialised), the state epoch, the leader epoch of the last write, and the non-default batches
    from the start offset on."""

    state_epoch: int
    leader_epoch: int
    start_offset: int
    batches: tuple[StateBatch, ...]
    #: Records acknowledged or archived at or past the start offset (v1's DeliveryCompleteCount; -1: unknown).
    delivery_complete_count: int = -1


@dataclass(frozen=True, slots=True)
class ShareStateSummary:
    """What ReadShareGroupStateSummary returns (DescribeShareGroupOffsets and the lag use it)."""

    state_epoch: int
    leader_epoch: int
    start_offset: int
    delivery_complete_count: int = -1


class ShareStateError(Exception):
    """The share coordinator refused a call for one share partition, with Kafka's error code."""

    def __init__(self, error_code: ErrorCode, message: str | None = None) -> None:
        super().__init__(message or error_code.name)
        self.error_code = error_code
        self.message = message


class SharePersister(Protocol):
    """The share-group state of share partitions, kept by their share coordinators."""

    async def initialize(self, key: SharePartitionKey, state_epoch: int, start_offset: int) -> None:
        """Start (or restart, with a higher state epoch) the state at `start_offset`, nothing in flight
        (InitializeShareGroupState: the group coordinator's step when a group first subscribes to the
        partition, and AlterShareGroupOffsets')."""
        ...

    async def read(self, key: SharePartitionKey, leader_epoch: int) -> ShareState:
        """The state, read by a new leader of the partition, which fences writes of older leaders by
        its `leader_epoch` (ReadShareGroupState)."""
        ...

    async def write(
        self,
        key: SharePartitionKey,
        state_epoch: int,
        leader_epoch: int,
        start_offset: int,
        batches: tuple[StateBatch, ...],
        delivery_complete_count: int = -1,
    ) -> None:
        """Record a change: the (possibly moved) start offset and the batches that changed
        (WriteShareGroupState). Refused with FENCED_STATE_EPOCH or FENCED_LEADER_EPOCH when a newer
        state or leader epoch was seen. Returns once the write is durable (replicated, in a cluster)."""
        ...

    async def delete(self, key: SharePartitionKey) -> None:
        """Forget the state (DeleteShareGroupState: the group or its offsets deleted)."""
        ...

    async def read_summary(self, key: SharePartitionKey, leader_epoch: int) -> ShareStateSummary:
        """The start offset and epochs only (ReadShareGroupStateSummary)."""
        ...
