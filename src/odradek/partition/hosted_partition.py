"""A partition with a replica on this broker, as the replica manager's last LeaderAndIsr left it: what
the leader's replication (partition/leader_replication.py) and the replica fetchers
(cluster/replication/fetcher_manager.py) work on."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from odradek.partition.leader_state import LeaderState
from odradek.storage.log import Log

PartitionKey = tuple[str, int]


@dataclass(slots=True)
class HostedPartition:
    """A partition with a replica on this broker, as the last LeaderAndIsr applied left it."""

    topic: str
    partition: int
    topic_id: uuid.UUID | None
    leader: int
    leader_epoch: int
    partition_epoch: int
    replicas: list[int]
    isr: list[int]
    log: Log
    #: Set while this broker leads the partition: its followers' progress and the ISR change in flight.
    leader_state: LeaderState | None = field(default=None)
    #: While this broker leads the partition: the leader epoch its uninterrupted leadership began at. A
    #: new epoch that keeps it leader (an ISR change, a reassignment, a preferred election back here)
    #: keeps it, so an append made at any epoch since is still this leader's to acknowledge (its log
    #: was never truncated meanwhile); -1 for a follower.
    leader_since_epoch: int = -1
    #: While this broker leads the partition: its log end when it applied the current leader epoch
    #: (Kafka's leaderEpochStartOffsetOpt); -1 for a follower.
    leader_epoch_start_offset: int = -1

    def replace_log(self, replica_log: Log) -> None:
        """Serve ``replica_log`` from now on: the partition's log moved to another log dir (storage
        swapped in its copy, as Kafka's Partition takes its future log)."""
        self.log = replica_log
