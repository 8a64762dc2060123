"""The follower's side of the replica fetcher's unit tests: partition/'s follower appends
(partition/follower_append.py) over a replica manager that hosts each fetched partition as follower, as
the LeaderAndIsr that makes this broker follow it would."""

from __future__ import annotations

import uuid

from odradek.cluster.metadata import ClusterMetadata
from odradek.cluster.replication.fetch_state import FetchState
from odradek.cluster.replication.replica_fetcher import ReplicaFetcher
from odradek.cluster.replication.truncation_checkpoints import TruncationCheckpoints
from odradek.partition.follower_append import FollowerAppends
from odradek.partition.hosted_partition import HostedPartition
from odradek.partition.ports import TruncationSync
from odradek.partition.replica_manager import ReplicaManager
from odradek.storage.log import Log
from odradek.storage.log_manager import LogManager


def follower_appends(
    logs: LogManager, node_id: int, checkpoints: TruncationSync | None = None
) -> FollowerAppends:
    """Appends as follower to `logs` for broker `node_id` (truncations wait for `checkpoints`, by
    default a writer of their own)."""
    replicas = ReplicaManager(node_id, ClusterMetadata("c", -1, []), logs)
    return FollowerAppends(replicas, checkpoints or TruncationCheckpoints(logs.flushes))


def host(fetcher: ReplicaFetcher, state: FetchState) -> FetchState:
    """The partition hosted here as follower of the fetcher's leader at the state's epoch, in its log."""
    replicas = fetcher.context.followers.replicas
    host_follower(replicas, state.log, fetcher.leader_id, state.leader_epoch, state.topic_id)
    return state


def host_follower(
    replicas: ReplicaManager, log: Log, leader: int, leader_epoch: int, topic_id: uuid.UUID | None = None
) -> None:
    """`log`'s partition hosted by `replicas` as follower of `leader` at `leader_epoch` (a LeaderAndIsr)."""
    tp = log.topic_partition
    replicas.apply_leadership(
        HostedPartition(
            topic=tp.topic,
            partition=tp.partition,
            topic_id=topic_id,
            leader=leader,
            leader_epoch=leader_epoch,
            partition_epoch=0,
            replicas=[leader, replicas.node_id],
            isr=[leader, replicas.node_id],
            log=log,
        )
    )


def follow(fetcher: ReplicaFetcher, state: FetchState) -> FetchState:
    """Hosted as `host` says, and followed by the fetcher as its manager leaves it (no fetch woken)."""
    fetcher.partitions[state.key] = host(fetcher, state)
    return state
