"""Which partitions this broker leads, and at which leader epoch: what every append as leader stamps on
its batches and checks first (Kafka's Partition.appendRecordsToLeader takes the partition's own
leaderEpoch, set by the last LeaderAndIsr applied), and whether the partition's ISR is too short for an
acks=-1 append (refused there before anything is appended).

In a cluster the replica manager answers, never the metadata cache: the controller sends UpdateMetadata
before LeaderAndIsr (at failover, when a broker registers again), so for one round trip the cache of a
broker that still leads at epoch e names the next leader at e+1. A batch stamped e+1 there would pass,
at that next leader, for one of its own: the follower this broker becomes would find no divergence and
keep records the leader never had. A single node has no controller: its own cache is the authority.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from odradek.cluster.metadata import ClusterMetadata
from odradek.protocol.error_codes import ErrorCode
from odradek.storage.partition import TopicPartition

#: Waits until the in-sync replicas of a partition this broker leads hold what it appended there (the
#: partition, the offset after the append, how long it may wait in ms), and says how that went: NONE,
#: REQUEST_TIMED_OUT, NOT_ENOUGH_REPLICAS_AFTER_APPEND or NOT_LEADER_OR_FOLLOWER, as a Produce with
#: acks=-1 is answered (handlers/delayed_produce.py owns it). What the coordinators' own writes and
#: transaction markers wait with; None where the append itself commits the write (a single node).
IsrWait = Callable[[TopicPartition, int, int], Awaitable[ErrorCode]]


class Leadership(Protocol):
    def leader_epoch(self, topic: str, partition: int) -> int | None:
        """The leader epoch this broker leads the partition at; None when it does not lead it."""
        ...

    def under_min_isr(self, topic: str, partition: int) -> bool:
        """Whether the partition has fewer in-sync replicas than Kafka's effective minimum,
        min(min.insync.replicas, replication factor): an acks=-1 append is refused then."""
        ...


class SingleNodeLeadership:
    """A single node leads what its metadata says it leads (every partition), at the epoch it says."""

    def __init__(self, cluster: ClusterMetadata, node_id: int) -> None:
        self.cluster = cluster
        self.node_id = node_id

    def leader_epoch(self, topic: str, partition: int) -> int | None:
        state = self.cluster.partition(topic, partition)
        if state is None or state.leader_id != self.node_id:
            return None
        return state.leader_epoch

    def under_min_isr(self, topic: str, partition: int) -> bool:
        return False  # one replica, always in sync: Kafka's effective minimum is 1
