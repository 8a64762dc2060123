"""The partitions with a replica on this broker, those it leads and those offline, and the answer to a
request naming one: served here, or the error and the leader to point the client to (Kafka's
ReplicaManager.allPartitions and getPartitionOrError, Partition.localLogWithEpochOrThrow).

The data path asks `leader_refusal` once per partition: a hit in `leading` (one dictionary lookup) is
the whole cost of leading the partition at the epoch the client knows. A consumer's Fetch (v11+) asks
`replica_refusal` instead: followers serve consumers too (KIP-392). Whatever appends as leader stamps
`leader_epoch`, the epoch of the leadership applied, never the metadata cache's (partition/leadership.py).
The replica manager (replica_manager.py) is one: it changes these maps as leaderships are applied.
"""

from __future__ import annotations

from odradek.partition.hosted_partition import HostedPartition, PartitionKey
from odradek.partition.leadership import NO_EPOCH, Refusal
from odradek.partition.ports import ReplicaDirectory
from odradek.protocol.error_codes import ErrorCode


class HostedReplicas:
    """The replicas hosted here, by partition, and what each may serve."""

    def __init__(self, node_id: int, cluster: ReplicaDirectory) -> None:
        self.node_id = node_id
        self.cluster = cluster
        #: Every partition with a replica here (a LeaderAndIsr, or a single node's own topics).
        self.hosted: dict[PartitionKey, HostedPartition] = {}
        #: The hosted partitions this broker leads: what Produce, Fetch and the offset APIs may serve.
        self.leading: dict[PartitionKey, HostedPartition] = {}
        #: The partitions whose log dir failed (Kafka's HostedPartition.Offline): KAFKA_STORAGE_ERROR to
        #: every request naming them until the broker restarts.
        self.offline: set[PartitionKey] = set()

    def leader_refusal(
        self, topic: str, partition: int, current_leader_epoch: int = NO_EPOCH
    ) -> Refusal | None:
        """None when this broker leads the partition (at `current_leader_epoch`, if the client gave one,
        KIP-320); otherwise the error to answer with and the leader to point the client to."""
        hosted = self.leading.get((topic, partition))
        if hosted is not None:
            if current_leader_epoch == NO_EPOCH or current_leader_epoch == hosted.leader_epoch:
                return None
            fenced = current_leader_epoch < hosted.leader_epoch
            code = ErrorCode.FENCED_LEADER_EPOCH if fenced else ErrorCode.UNKNOWN_LEADER_EPOCH
            return Refusal(code, hosted.leader, hosted.leader_epoch)
        if (topic, partition) in self.offline:
            return Refusal(ErrorCode.KAFKA_STORAGE_ERROR)  # as Kafka's getPartitionOrError
        # As Kafka's Partition.getLocalLog: a replica hosted here is checked against the epoch first, so
        # a fetch at an epoch this follower has not applied yet (it is about to lead) is
        # UNKNOWN_LEADER_EPOCH, an older one FENCED_LEADER_EPOCH; only at its own epoch is it "not leader".
        follower = self.hosted.get((topic, partition))
        epoch = follower.leader_epoch if follower is not None else current_leader_epoch
        if current_leader_epoch != NO_EPOCH and current_leader_epoch != epoch and follower is not None:
            fenced = current_leader_epoch < epoch
            code = ErrorCode.FENCED_LEADER_EPOCH if fenced else ErrorCode.UNKNOWN_LEADER_EPOCH
            return Refusal(code, follower.leader, epoch)
        return self._not_leader(topic, partition)

    def replica_refusal(
        self, topic: str, partition: int, current_leader_epoch: int = NO_EPOCH
    ) -> Refusal | None:
        """As `leader_refusal`, but a follower's replica serves too (KIP-392: a consumer's Fetch v11+
        may read from any replica, up to that replica's high watermark): None when this broker hosts
        the partition at `current_leader_epoch` (if the client gave one), as Kafka's
        localLogWithEpochOrThrow without requireLeader."""
        hosted = self.leading.get((topic, partition)) or self.hosted.get((topic, partition))
        if hosted is None:
            if (topic, partition) in self.offline:
                return Refusal(ErrorCode.KAFKA_STORAGE_ERROR)
            return self._not_leader(topic, partition)
        if current_leader_epoch == NO_EPOCH or current_leader_epoch == hosted.leader_epoch:
            return None
        fenced = current_leader_epoch < hosted.leader_epoch
        code = ErrorCode.FENCED_LEADER_EPOCH if fenced else ErrorCode.UNKNOWN_LEADER_EPOCH
        return Refusal(code, hosted.leader, hosted.leader_epoch)

    def awaits_leader_epoch(self, topic: str, partition: int, leader_epoch: int) -> bool:
        """Whether the partition is hosted here at an epoch older than `leader_epoch`: a replica
        fetching at that epoch learned of a LeaderAndIsr this broker has not applied yet (one that
        makes it leader, or leader at a newer epoch). The fetch handler holds such a follower fetch
        until it has (handlers/fetch.py)."""
        hosted = self.hosted.get((topic, partition))
        return hosted is not None and leader_epoch > hosted.leader_epoch

    def _not_leader(self, topic: str, partition: int) -> Refusal:
        # As Kafka's getPartitionOrError: a partition the cluster knows is NOT_LEADER_OR_FOLLOWER (the
        # client refreshes its metadata and follows the leader), one nobody knows is unknown.
        known = self.cluster.partition(topic, partition)
        if known is None and (topic, partition) not in self.hosted:
            return Refusal(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        if known is None:
            hosted = self.hosted[(topic, partition)]
            return Refusal(ErrorCode.NOT_LEADER_OR_FOLLOWER, hosted.leader, hosted.leader_epoch)
        return Refusal(ErrorCode.NOT_LEADER_OR_FOLLOWER, known.leader_id, known.leader_epoch)

    def still_leading_since(self, topic: str, partition: int, leader_epoch: int) -> bool:
        """Whether this broker has led the partition without a break since `leader_epoch` (the epoch an
        append was made at): what keeps an acks=all wait going, as in Kafka, where only a partition that
        became a follower (or was removed) completes its delayed produces with NOT_LEADER_OR_FOLLOWER."""
        hosted = self.leading.get((topic, partition))
        return hosted is not None and hosted.leader_since_epoch <= leader_epoch

    def leader_epoch(self, topic: str, partition: int) -> int | None:
        """The leader epoch of the last leadership that made this broker leader of the partition (what
        an append as leader stamps, partition/leadership.py); None when it does not lead it."""
        hosted = self.leading.get((topic, partition))
        return hosted.leader_epoch if hosted is not None else None

    def leader_epoch_start_offset(self, topic: str, partition: int) -> int | None:
        """Where the epoch this broker leads the partition at began in its log; None when it does not
        lead it. Until the high watermark reaches it, ListOffsets is OFFSET_NOT_AVAILABLE."""
        hosted = self.leading.get((topic, partition))
        return hosted.leader_epoch_start_offset if hosted is not None else None

    def leader_since_epoch(self, topic: str, partition: int) -> int | None:
        """The leader epoch this broker's uninterrupted leadership of the partition began at; None when
        it does not lead it."""
        hosted = self.leading.get((topic, partition))
        return hosted.leader_since_epoch if hosted is not None else None
