"""What partition/ asks of the cluster's metadata, of the follower side and of the transaction
coordinators, as small Protocols (cluster/ and coordinator/ implement them; partition/ imports neither)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from odradek.partition.hosted_partition import HostedPartition, PartitionKey
from odradek.protocol.error_codes import ErrorCode
from odradek.storage.log import Log


class PartitionLeader(Protocol):
    """Who leads a partition, and at which leader epoch, as the metadata says."""

    @property
    def leader_id(self) -> int: ...

    @property
    def leader_epoch(self) -> int: ...


class PartitionDirectory(Protocol):
    """The partitions the broker's metadata knows (cluster/metadata.py's ClusterMetadata)."""

    def partition(self, topic: str, partition: int) -> PartitionLeader | None: ...


class ReplicaBroker(Protocol):
    """A broker the controller reports alive: its rack and the listeners it can be reached on."""

    @property
    def rack(self) -> str | None: ...

    @property
    def endpoints(self) -> Mapping[str, object]: ...


class ReplicaDirectory(PartitionDirectory, Protocol):
    """What the replica manager's data half reads of the metadata cache (the brokers alive, for ISR
    eligibility and KIP-392's read replicas) and tells it (an ISR the controller committed, so that
    Metadata names it before the controller's UpdateMetadata arrives)."""

    @property
    def live_brokers(self) -> Mapping[int, ReplicaBroker]: ...

    def follow_isr(
        self,
        topic: str,
        topic_id: uuid.UUID | None,
        partition: int,
        leader: int,
        leader_epoch: int,
        replicas: Sequence[int],
        isr: Sequence[int],
    ) -> None: ...


class FollowerFetchers(Protocol):
    """The replica fetchers (cluster/replication/fetcher_manager.py): what the replica manager tells
    them of the partitions this broker follows."""

    def add_partitions(self, partitions: list[HostedPartition]) -> None: ...

    def remove_partitions(self, keys: Iterable[PartitionKey]) -> None: ...


class TruncationSync(Protocol):
    """The offset checkpoints a truncation makes due (cluster/replication/truncation_checkpoints.py): a
    truncated log is appended to as follower only once its lowered recovery point is on disk."""

    def pending(self, replica_log: Log) -> bool: ...

    async def written(self, replica_log: Log) -> None: ...


class TxnCoordinatorLookup(Protocol):
    """This broker's transaction coordinator as a leader's KIP-890 verification asks it
    (coordinator/txn_coordinator.py): which broker coordinates a transactional id, and whether a
    partition is in a producer's ongoing transaction it coordinates."""

    def coordinator_node(self, transactional_id: str) -> int | None: ...

    def verify_partition(
        self, transactional_id: str, producer_id: int, producer_epoch: int, topic: str, partition: int
    ) -> ErrorCode: ...


class RemoteTxnCoordinators(Protocol):
    """The transaction coordinators on other brokers, asked whether partitions are in a producer's
    ongoing transaction (AddPartitionsToTxn v4, verify_only: Kafka's AddPartitionsToTxnManager).
    cluster/txn_verification.py sends the requests; a single node has no other broker to ask."""

    async def verify(
        self,
        node: int | None,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Sequence[tuple[str, int]],
    ) -> dict[tuple[str, int], ErrorCode]:
        """Coordinator `node`'s answer for each partition (COORDINATOR_NOT_AVAILABLE for all when it is
        not known or cannot be reached)."""
        ...

    def close(self) -> None: ...


class LeaderReplicationQuota(Protocol):
    """The leader's replication throttle (leader.replication.throttled.rate and a topic's
    leader.replication.throttled.replicas; cluster/replication/replication_quota.py), as the reads for
    followers apply it (Kafka's ReplicationQuotaManager)."""

    def is_throttled(self, replicas: tuple[str, ...], partition: int) -> bool: ...

    def is_quota_exceeded(self) -> bool: ...

    def count_throttled(self, partitions: int) -> None: ...

    def record(self, size: int) -> None: ...
