"""Kafka's rules for topic names, partition counts and replica assignments, checked in the order
Kafka's controller checks them; each raises KafkaError with Kafka's error code and message (those of
Kafka 3.9 in ZooKeeper mode where its KRaft controller words them otherwise: what its lone broker
says, and what odradek's cluster says, cluster/assignment.py)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from odradek.cluster.metadata import ClusterMetadata, TopicState
from odradek.protocol.error_codes import ErrorCode, KafkaError

MAX_NAME_LENGTH: Final = 249
_LEGAL_NAME = re.compile(r"[a-zA-Z0-9._-]+")


def validate_topic_name(name: str) -> None:
    """Kafka's topic-name rules; raises KafkaError(INVALID_TOPIC_EXCEPTION) with Kafka's reason."""
    reason = None
    if not name:
        reason = "the empty string is not allowed"
    elif name in (".", ".."):
        reason = f"'{name}' is not allowed"
    elif len(name) > MAX_NAME_LENGTH:
        reason = f"the length of '{name}' is longer than the max allowed length {MAX_NAME_LENGTH}"
    elif not _LEGAL_NAME.fullmatch(name):
        reason = f"'{name}' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"
    if reason is not None:
        raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"Topic name is invalid: {reason}")


def check_growth(
    cluster: ClusterMetadata, state: TopicState, count: int, assignments: Sequence[Sequence[int]] | None
) -> int:
    """CreatePartitions' checks of the new count and assignments; returns the replication factor."""
    current = len(state.partitions)
    # Kafka 3.9's words (ZkAdminManager.createPartitions), as a lone broker of it says them
    if count < current:
        raise KafkaError(
            ErrorCode.INVALID_PARTITIONS,
            f"Topic currently has {current} partitions, which is higher than the requested {count}.",
        )
    if count == current:
        raise KafkaError(ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partitions.")
    additional = count - current
    replication_factor = len(state.partitions[0].replicas) if state.partitions else 1
    if assignments is not None:
        if len(assignments) != additional:
            raise KafkaError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Attempted to add {additional} additional partition(s), but only {len(assignments)} "
                "assignment(s) were specified.",
            )
        for replicas in assignments:
            check_replicas(cluster, replicas, replication_factor)
    else:
        check_placement(cluster, replication_factor)
    return replication_factor


def check_collision(cluster: ClusterMetadata, name: str) -> None:
    # '.' and '_' collide in metric names, so Kafka refuses topics that differ only by them.
    folded = name.replace(".", "_")
    for existing in cluster.topics:
        if existing.replace(".", "_") == folded:
            raise KafkaError(
                ErrorCode.INVALID_TOPIC_EXCEPTION,
                f"Topic '{name}' collides with existing topic: {existing}",
            )


def check_assignments(cluster: ClusterMetadata, assignments: Sequence[tuple[int, Sequence[int]]]) -> int:
    """Validate a manual replica assignment as Kafka's controller does; returns its replication factor."""
    replication_factor: int | None = None
    seen: set[int] = set()
    for partition, replicas in assignments:
        if partition in seen:
            raise KafkaError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Found multiple manual partition assignments for partition {partition}",
            )
        seen.add(partition)
        check_replicas(cluster, replicas, replication_factor)
        replication_factor = len(replicas)
    if seen != set(range(len(seen))):
        raise KafkaError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "partitions should be a consecutive 0-based integer sequence",
        )
    assert replication_factor is not None
    return replication_factor


def check_replicas(cluster: ClusterMetadata, replicas: Sequence[int], replication_factor: int | None) -> None:
    if not replicas:
        raise KafkaError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "The manual partition assignment includes an empty replica list.",
        )
    previous = None
    for broker in sorted(replicas):
        if broker not in cluster.brokers:
            raise KafkaError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"The manual partition assignment includes broker {broker}, but no such broker is "
                "registered.",
            )
        if broker == previous:
            raise KafkaError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"The manual partition assignment includes the broker {broker} more than once.",
            )
        previous = broker
    if replication_factor is not None and len(replicas) != replication_factor:
        raise KafkaError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            f"The manual partition assignment includes a partition with {len(replicas)} replica(s), but "
            "this is not consistent with previous partitions, which have "
            f"{replication_factor} replica(s).",
        )


def check_placement(cluster: ClusterMetadata, replication_factor: int) -> None:
    brokers = len(cluster.brokers)
    if replication_factor > brokers:
        raise KafkaError(  # AdminUtils.assignReplicasToBrokers' words
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"Replication factor: {replication_factor} larger than available brokers: {brokers}.",
        )
