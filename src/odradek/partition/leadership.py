"""Which partitions this broker leads, and at which leader epoch: what every append as leader stamps on its
batches and checks first (Kafka's Partition.appendRecordsToLeader takes the partition's own leaderEpoch,
set by the last LeaderAndIsr applied), what a client's epoch is checked against, and whether the
partition's ISR is too short for an acks=-1 append (refused there before anything is appended).

One owner answers, `Services.leadership`, which the coordinators share: the replica manager
(partition/replica_manager.py, in both modes), never the metadata cache. The controller sends
UpdateMetadata before LeaderAndIsr (at failover, when a broker registers again), so for one round trip
the cache of a broker that still leads at epoch e names the next leader at e+1. A batch stamped e+1
there would pass, at that next leader, for one of its own: the follower this broker becomes would find
no divergence and keep records the leader never had. A single node has no controller: it leads each of
its partitions at epoch 0 with an ISR of itself, as TopicAdmin makes them (a cluster of one).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from odradek.partition.leader_append import LeaderAppend
from odradek.protocol.error_codes import ErrorCode
from odradek.storage.partition import TopicPartition
from odradek.storage.prepared_appends import PreparedAppend
from odradek.storage.producer_state import AppendOrigin

#: No current leader epoch given (a Produce, a client before KIP-320): Kafka's NO_PARTITION_LEADER_EPOCH.
NO_EPOCH = -1


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why the data path refuses a partition, and who leads it as far as this broker knows."""

    error_code: ErrorCode
    leader_id: int = -1
    leader_epoch: int = -1


class Leadership(Protocol):
    def leader_epoch(self, topic: str, partition: int) -> int | None:
        """The leader epoch this broker leads the partition at; None when it does not lead it."""
        ...

    def leader_since_epoch(self, topic: str, partition: int) -> int | None:
        """The leader epoch this broker's uninterrupted leadership of the partition began at (a new
        epoch that kept it leader, an ISR change, is no new election); None when not led here."""
        ...

    def leader_epoch_start_offset(self, topic: str, partition: int) -> int | None:
        """Its log end when it began leading at that epoch (Kafka's leaderEpochStartOffsetOpt): until
        the high watermark reaches it, ListOffsets is OFFSET_NOT_AVAILABLE. None when not led here,
        or when the high watermark never lags it."""
        ...

    def leader_refusal(
        self, topic: str, partition: int, current_leader_epoch: int = NO_EPOCH
    ) -> Refusal | None:
        """None when this broker leads the partition (at `current_leader_epoch`, if the client gave
        one, KIP-320); otherwise the error and the leader to point the client to."""
        ...

    def replica_refusal(
        self, topic: str, partition: int, current_leader_epoch: int = NO_EPOCH
    ) -> Refusal | None:
        """As `leader_refusal`, but a follower's replica serves too (a consumer's Fetch v11+, KIP-392)."""
        ...

    def under_min_isr(self, topic: str, partition: int) -> bool:
        """Whether the partition has fewer in-sync replicas than Kafka's effective minimum,
        min(min.insync.replicas, replication factor): an acks=-1 append is refused then."""
        ...

    def append_records(
        self,
        partition: TopicPartition,
        records: bytearray | memoryview,
        origin: AppendOrigin,
        required_acks: int,
        prepared: PreparedAppend | None = None,
    ) -> LeaderAppend:
        """Append as this partition's leader, the one way anything does (partition/replica_manager.py):
        KafkaError (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, NOT_ENOUGH_REPLICAS for acks=-1)
        with nothing appended, else what the append made."""
        ...

    async def complete_appends(self, appends: Sequence[LeaderAppend], timeout_ms: int) -> list[ErrorCode]:
        """The appends' answers, in order: each once fsynced if its log's flush settings make it due and,
        for acks=-1, once the in-sync replicas hold it, at most `timeout_ms` (NONE, REQUEST_TIMED_OUT,
        NOT_ENOUGH_REPLICAS_AFTER_APPEND, NOT_LEADER_OR_FOLLOWER, as a Produce is answered). A leader
        alone in its ISR (a single node) waits for no one."""
        ...

    async def complete_log_end(self, partition: TopicPartition, timeout_ms: int) -> ErrorCode:
        """As `complete_appends` for everything the partition's log holds now (a coordinator's step that
        wrote nothing but stands on an earlier write); NOT_LEADER_OR_FOLLOWER when not led here."""
        ...
