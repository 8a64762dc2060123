"""Kafka's rules for topic names, partition counts and replica assignments, checked in the order
Kafka's controller checks them; each raises KafkaError with Kafka's error code and message (those of
Kafka 3.9 in ZooKeeper mode where its KRaft controller words them otherwise: what its lone broker
says, and what odradek's cluster says, cluster/assignment.py)."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Final

from odradek.cluster.metadata import ClusterMetadata, PartitionState, TopicState
from odradek.config.broker import BrokerConfig
from odradek.config.topic import parse_topic_configs
from odradek.protocol.error_codes import ErrorCode, KafkaError

#: A manual replica assignment: partition -> broker ids, as a mapping or as pairs.
Assignments = Mapping[int, Sequence[int]] | Sequence[tuple[int, Sequence[int]]]
#: The coordinators' topics (Kafka's Topic.INTERNAL_TOPICS): only they create and write them.
INTERNAL_TOPICS: Final = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})
#: KRaft's metadata log: no client may create a topic of that name.
CLUSTER_METADATA_TOPIC: Final = "__cluster_metadata"
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


def plan_topic(
    broker_config: BrokerConfig,
    cluster: ClusterMetadata,
    being_deleted: Callable[[str], bool],
    node_id: int,
    name: str,
    num_partitions: int,
    replication_factor: int,
    assignments: Assignments | None,
    configs: Mapping[str, str | None] | None,
    internal: bool,
) -> tuple[TopicState, int]:
    """The new topic CreateTopics asks for, checked in the order Kafka's controller checks them (name,
    existence, configs, then assignment or partition count and replication factor; raises KafkaError),
    led by `node_id` alone until placed; and its replication factor. -1 means the broker default."""
    if name == CLUSTER_METADATA_TOPIC:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Creation of internal topic {name} is prohibited.")
    validate_topic_name(name)
    if name in cluster.topics:
        raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
    if being_deleted(name):
        # Kafka's answer while a deletion of the name is still under way.
        raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' is marked for deletion.")
    if name in INTERNAL_TOPICS and not internal:
        # Kafka lets an admin create these; here only the coordinators do, with their own configs.
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Creation of internal topic {name} is prohibited.")
    check_collision(cluster, name)
    given = dict(configs or {})
    parse_topic_configs(given, broker_config)  # raises KafkaError(INVALID_CONFIG), nulls included
    if assignments:
        if replication_factor != -1:
            raise KafkaError(
                ErrorCode.INVALID_REQUEST,
                "A manual partition assignment was specified, but replication factor was not set to -1.",
            )
        if num_partitions != -1:
            raise KafkaError(
                ErrorCode.INVALID_REQUEST,
                "A manual partition assignment was specified, but numPartitions was not set to -1.",
            )
        pairs = list(assignments.items()) if isinstance(assignments, Mapping) else list(assignments)
        replication_factor = check_assignments(cluster, pairs)
        num_partitions = len(pairs)
    else:
        if replication_factor < -1 or replication_factor == 0:
            raise KafkaError(
                ErrorCode.INVALID_REPLICATION_FACTOR,
                "Replication factor must be larger than 0, or -1 to use the default value.",
            )
        if num_partitions < -1 or num_partitions == 0:
            raise KafkaError(
                ErrorCode.INVALID_PARTITIONS,
                "Number of partitions was set to an invalid non-positive value.",
            )
        if num_partitions == -1:
            num_partitions = broker_config.num_partitions
        if replication_factor == -1:
            replication_factor = broker_config.default_replication_factor
        check_placement(cluster, replication_factor)
    stored = {k: v for k, v in given.items() if v is not None}
    state = led_alone(name, uuid.uuid4(), num_partitions, stored, node_id, internal=internal)
    return state, replication_factor


def existing_non_internal(
    cluster: ClusterMetadata, name: str, refusal: ErrorCode, message: str
) -> TopicState:
    """The topic a delete or a growth applies to: UNKNOWN_TOPIC_OR_PARTITION if there is none,
    `refusal` (with `message`) if it is internal."""
    state = cluster.topic(name)
    if state is None:
        raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    if state.is_internal:
        raise KafkaError(refusal, message)
    return state


def topic_min_insync_replicas(
    broker_config: Callable[[], BrokerConfig], cluster: ClusterMetadata
) -> Callable[[str], int]:
    """A topic's `min.insync.replicas` (what its leader asks): its own setting in the metadata cache,
    else the broker's, as `broker_config` gives it now (AlterConfigs changes it)."""
    return lambda name: min_insync_replicas(broker_config(), cluster, name)


def min_insync_replicas(broker_config: BrokerConfig, cluster: ClusterMetadata, name: str) -> int:
    state = cluster.topic(name)
    if state is not None and "min.insync.replicas" in state.configs:
        return int(state.configs["min.insync.replicas"])
    return broker_config.min_insync_replicas


def led_alone(
    name: str,
    topic_id: uuid.UUID,
    partitions: int,
    configs: dict[str, str],
    node_id: int,
    internal: bool = False,
) -> TopicState:
    """A topic whose every partition `node_id` leads at epoch 0 with an ISR of itself."""
    return TopicState(
        name=name,
        topic_id=topic_id,
        partitions=[led_alone_partition(p, node_id) for p in range(partitions)],
        configs=configs,
        is_internal=internal or name in INTERNAL_TOPICS,
    )


def led_alone_partition(partition: int, node_id: int) -> PartitionState:
    return PartitionState(
        partition=partition, leader_id=node_id, leader_epoch=0, replicas=[node_id], isr=[node_id]
    )
