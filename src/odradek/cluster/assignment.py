"""Replica assignment for new topics and new partitions, as Kafka 3.9 does it in ZooKeeper mode.

Placement follows ``AdminUtils.assignReplicasToBrokers`` (server-common): without racks, the first
replica of partition ``p`` goes to broker ``(start_index + p) % n`` and the followers sit at a shift
from it that grows by one every ``n`` partitions; when every broker has a rack, the same walk runs over
a rack-alternated broker list and skips brokers whose rack (then whose broker) already holds a replica
of the partition. CreatePartitions continues the walk from where partition 0's leader sits, so the new
partitions extend the existing spread instead of piling onto the first brokers.

The checks of explicit assignments are those of ``AdminZkClient.validateTopicCreate`` (CreateTopics) and
``ZkAdminManager.createPartitions`` / ``AdminZkClient.createNewPartitionsAssignment`` (CreatePartitions),
with Kafka's error codes and messages. KRaft's rules differ and live in ``topic_checks``.

Pure functions: no ZooKeeper, no metadata cache. Randomness comes from a ``random.Random`` the caller
may pass, so tests are deterministic.
"""

from __future__ import annotations

import enum
import random
from collections.abc import Collection, Mapping, Sequence
from typing import NamedTuple

from odradek.protocol.error_codes import ErrorCode, KafkaError

ReplicaAssignment = dict[int, list[int]]
"""Partition id -> replica broker ids, the first being the preferred leader."""


class BrokerMetadata(NamedTuple):
    """What placement needs to know of a broker: its id and its ``broker.rack`` (None when unset)."""

    node_id: int
    rack: str | None = None


class RackAwareMode(enum.Enum):
    """How rack information is used (Kafka's ``kafka.admin.RackAwareMode``)."""

    DISABLED = "disabled"  # ignore racks
    ENFORCED = "enforced"  # all brokers have a rack or none has; anything else is an error
    SAFE = "safe"  # use racks when every broker has one, otherwise ignore them


class AdminOperationError(KafkaError):
    """Kafka's ``AdminOperationException``: not an API error, so Kafka answers UNKNOWN_SERVER_ERROR and,
    to leak nothing, sends no error message; ``reason`` keeps Kafka's text for the broker's log."""

    def __init__(self, reason: str) -> None:
        super().__init__(ErrorCode.UNKNOWN_SERVER_ERROR)
        self.reason = reason

    def __str__(self) -> str:
        return f"{self.error_code.name}: {self.reason}"


def assign_replicas_to_brokers(
    brokers: Collection[BrokerMetadata],
    num_partitions: int,
    replication_factor: int,
    *,
    start_index: int | None = None,
    replica_shift: int | None = None,
    start_partition_id: int = 0,
    rng: random.Random | None = None,
) -> ReplicaAssignment:
    """Place ``num_partitions`` partitions of ``replication_factor`` replicas on ``brokers``.

    Rack-aware when any broker has a rack (then every broker must have one); ``start_index`` and
    ``replica_shift`` are drawn from ``rng`` when not given (Kafka's callers fix both to the same value
    or neither). ``start_partition_id`` numbers the first partition placed, for CreatePartitions.
    Brokers are taken in node-id order, as ``AdminZkClient.getBrokerMetadatas`` sorts them for
    CreatePartitions. (Kafka's CreateTopics takes them in its metadata cache's hash order instead: the
    spread is the same, only which broker follows which differs.)
    """
    if num_partitions <= 0:
        raise KafkaError(ErrorCode.INVALID_PARTITIONS, "Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise KafkaError(ErrorCode.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0.")
    if replication_factor > len(brokers):
        raise KafkaError(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"Replication factor: {replication_factor} larger than available brokers: {len(brokers)}.",
        )
    ordered = sorted(brokers, key=lambda broker: broker.node_id)
    rng = rng if rng is not None else random.Random()
    # Kafka draws the start index before the shift; keep the order so a seeded rng places alike.
    if start_index is None:
        start_index = rng.randrange(len(ordered))
    if replica_shift is None:
        replica_shift = rng.randrange(len(ordered))
    first_partition_id = max(0, start_partition_id)
    if all(broker.rack is None for broker in ordered):
        return _assign_rack_unaware(
            [broker.node_id for broker in ordered],
            num_partitions,
            replication_factor,
            start_index,
            replica_shift,
            first_partition_id,
        )
    return _assign_rack_aware(
        ordered, num_partitions, replication_factor, start_index, replica_shift, first_partition_id
    )


def broker_metadatas(
    brokers: Collection[BrokerMetadata], rack_aware_mode: RackAwareMode = RackAwareMode.ENFORCED
) -> list[BrokerMetadata]:
    """The brokers as placement should see them under ``rack_aware_mode``, sorted by node id.

    Kafka's CreatePartitions asks with ENFORCED, so a cluster where only some brokers have a rack cannot
    grow a topic without an explicit assignment (and not even with one: Kafka asks before looking at it).
    """
    with_rack = sum(1 for broker in brokers if broker.rack is not None)
    partial = 0 < with_rack < len(brokers)
    if rack_aware_mode is RackAwareMode.ENFORCED and partial:
        raise AdminOperationError(
            "Not all brokers have rack information. Add --disable-rack-aware in command line to make "
            "replica assignment without rack information."
        )
    ordered = sorted(brokers, key=lambda broker: broker.node_id)
    if rack_aware_mode is RackAwareMode.DISABLED or (rack_aware_mode is RackAwareMode.SAFE and partial):
        return [BrokerMetadata(broker.node_id, None) for broker in ordered]
    return ordered


def rack_alternated_brokers(brokers: Collection[BrokerMetadata]) -> list[int]:
    """Broker ids taking one from each rack in turn (racks by name, brokers by id within a rack), so a
    round-robin walk over the list meets every rack before it meets any rack twice."""
    by_rack: dict[str, list[int]] = {}
    for broker in brokers:
        if broker.rack is None:
            raise AdminOperationError(
                "Not all brokers have rack information for replica rack aware assignment."
            )
        by_rack.setdefault(broker.rack, []).append(broker.node_id)
    queues = [sorted(by_rack[rack], reverse=True) for rack in sorted(by_rack)]
    alternated: list[int] = []
    while len(alternated) < len(brokers):
        for queue in queues:
            if queue:
                alternated.append(queue.pop())
    return alternated


def explicit_topic_assignment(assignments: Sequence[tuple[int, Sequence[int]]]) -> ReplicaAssignment:
    """CreateTopics' explicit ``assignments`` checked as Kafka's ZooKeeper mode does; returns them as a map.

    A partition index given twice keeps its last replica list (Kafka builds a map from the request).
    Kafka does not check here that the brokers exist ("this follows the existing logic in TopicCommand"):
    replicas on unknown brokers are accepted and the partition has no live replica until they register.
    """
    assignment: ReplicaAssignment = {}
    for partition_id, replicas in assignments:
        assignment[partition_id] = list(replicas)
    if len({len(replicas) for replicas in assignment.values()}) != 1:
        raise KafkaError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT, "All partitions should have the same number of replicas"
        )
    for replicas in assignment.values():
        if len(set(replicas)) != len(replicas):
            raise KafkaError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Duplicate replica assignment found: {_scala_map(assignment)}",
            )
    # Kafka compares the sum of the non-negative ids with 0+1+...+(n-1), which lets e.g. {-1, 1, 2, 3}
    # through; we ask for exactly 0..n-1 with the same message rather than create a partition -1.
    if set(assignment) != set(range(len(assignment))):
        raise KafkaError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "partitions should be a consecutive 0-based integer sequence",
        )
    return assignment


def new_partitions_assignment(
    topic: str,
    existing_assignment: Mapping[int, Sequence[int]],
    brokers: Collection[BrokerMetadata],
    count: int,
    assignments: Sequence[Sequence[int]] | None = None,
) -> ReplicaAssignment:
    """CreatePartitions for one topic: the replicas of partitions ``len(existing)``..``count - 1``.

    ``brokers`` are the registered brokers with their racks (checked with RackAwareMode.ENFORCED);
    ``assignments`` the request's explicit replica lists for the new partitions, or None to place them
    so that spreading continues from the existing partition 0's leader. The checks and their order are
    Kafka's, after the topic was found and no reassignment is in progress.
    """
    brokers = broker_metadatas(brokers, RackAwareMode.ENFORCED)
    current = len(existing_assignment)
    if count < current:
        raise KafkaError(
            ErrorCode.INVALID_PARTITIONS,
            f"Topic currently has {current} partitions, which is higher than the requested {count}.",
        )
    if count == current:
        raise KafkaError(ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partitions.")
    explicit: ReplicaAssignment | None = None
    if assignments is not None:
        explicit = _explicit_new_partitions(assignments, brokers, current, count - current)
    if 0 not in existing_assignment:
        raise AdminOperationError(
            f"Unexpected existing replica assignment for topic '{topic}', partition id 0 is missing. "
            f"Assignment: {_scala_map(existing_assignment)}"
        )
    partition0 = list(existing_assignment[0])
    if explicit is not None:
        _check_new_replicas(explicit, len(partition0))
        return explicit
    if not partition0:
        # Only a ZooKeeper-mode CreateTopics with empty replica lists leaves this; Kafka fails on it
        # with an unexpected exception, i.e. UNKNOWN_SERVER_ERROR.
        raise AdminOperationError(f"Partition 0 of topic '{topic}' has no replicas to continue from.")
    # Start where partition 0's leader sits in the id-ordered list (or at the next id up, if it left),
    # and use the same number as the shift, as Kafka passes one fixedStartIndex for both.
    leader = partition0[0]
    start_index = next((index for index, broker in enumerate(brokers) if broker.node_id >= leader), 0)
    return assign_replicas_to_brokers(
        brokers,
        count - current,
        len(partition0),
        start_index=start_index,
        replica_shift=start_index,
        start_partition_id=current,
    )


def _assign_rack_unaware(
    broker_ids: list[int],
    num_partitions: int,
    replication_factor: int,
    start_index: int,
    replica_shift: int,
    first_partition_id: int,
) -> ReplicaAssignment:
    brokers = len(broker_ids)
    assignment: ReplicaAssignment = {}
    for partition_id in range(first_partition_id, first_partition_id + num_partitions):
        # A new shift every round of n partitions, so the leader-follower pairs of one round are not
        # repeated by the next.
        if partition_id > 0 and partition_id % brokers == 0:
            replica_shift += 1
        first_replica_index = (partition_id + start_index) % brokers
        replicas = [broker_ids[first_replica_index]]
        for follower in range(replication_factor - 1):
            replicas.append(broker_ids[_replica_index(first_replica_index, replica_shift, follower, brokers)])
        assignment[partition_id] = replicas
    return assignment


def _assign_rack_aware(
    brokers: list[BrokerMetadata],
    num_partitions: int,
    replication_factor: int,
    start_index: int,
    replica_shift: int,
    first_partition_id: int,
) -> ReplicaAssignment:
    rack_of = {broker.node_id: broker.rack for broker in brokers}
    arranged = rack_alternated_brokers(brokers)
    racks = len(set(rack_of.values()))
    count = len(arranged)
    assignment: ReplicaAssignment = {}
    for partition_id in range(first_partition_id, first_partition_id + num_partitions):
        if partition_id > 0 and partition_id % count == 0:
            replica_shift += 1
        first_replica_index = (partition_id + start_index) % count
        leader = arranged[first_replica_index]
        replicas = [leader]
        racks_with_replicas = {rack_of[leader]}
        brokers_with_replicas = {leader}
        # One walk per partition over the brokers after the leader; the shift counts in whole rounds
        # of racks so a follower is not always the leader's rack-list neighbour.
        step = 0
        for _ in range(replication_factor - 1):
            while True:
                broker = arranged[_replica_index(first_replica_index, replica_shift * racks, step, count)]
                step += 1
                rack = rack_of[broker]
                # Skip a broker whose rack already has a replica while some rack has none, and a broker
                # that already has one while some broker has none.
                if (rack not in racks_with_replicas or len(racks_with_replicas) == racks) and (
                    broker not in brokers_with_replicas or len(brokers_with_replicas) == count
                ):
                    replicas.append(broker)
                    racks_with_replicas.add(rack)
                    brokers_with_replicas.add(broker)
                    break
        assignment[partition_id] = replicas
    return assignment


def _replica_index(first_replica_index: int, shift: int, follower: int, brokers: int) -> int:
    # Never 0 steps from the leader: the offset runs over 1..n-1.
    return (first_replica_index + 1 + (shift + follower) % (brokers - 1)) % brokers


def _explicit_new_partitions(
    assignments: Sequence[Sequence[int]], brokers: Sequence[BrokerMetadata], current: int, increment: int
) -> ReplicaAssignment:
    registered = {broker.node_id for broker in brokers}
    # Kafka prints a Scala Set, whose order is insertion order up to four elements; first appearance
    # order matches that and is stable beyond.
    unknown = list(dict.fromkeys(b for replicas in assignments for b in replicas if b not in registered))
    if unknown:
        raise KafkaError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            f"Unknown broker(s) in replica assignment: {', '.join(map(str, unknown))}.",
        )
    if len(assignments) != increment:
        raise KafkaError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            f"Increasing the number of partitions by {increment} "
            f"but {len(assignments)} assignments provided.",
        )
    return {current + index: list(replicas) for index, replicas in enumerate(assignments)}


def _check_new_replicas(assignment: ReplicaAssignment, replication_factor: int) -> None:
    # Brokers are known by now (checked first); what is left is each list's own shape, then the lists'
    # agreement with partition 0's replication factor.
    for partition_id, replicas in sorted(assignment.items()):
        if not replicas:
            raise KafkaError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Cannot have replication factor of 0 for partition id {partition_id}.",
            )
        if len(set(replicas)) != len(replicas):
            raise KafkaError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                "Duplicate brokers not allowed in replica assignment: "
                f"{', '.join(map(str, replicas))} for partition id {partition_id}.",
            )
    mismatched = [(p, len(r)) for p, r in sorted(assignment.items()) if len(r) != replication_factor]
    if mismatched:
        raise KafkaError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "Inconsistent replication factor between partitions, partition 0 has "
            f"{replication_factor} while partitions [{', '.join(str(p) for p, _ in mismatched)}] have "
            f"replication factors [{', '.join(str(n) for _, n in mismatched)}], respectively.",
        )


def _scala_map(assignment: Mapping[int, Sequence[int]]) -> str:
    # How Kafka (Scala 2.13) prints its mutable map of ArrayBuffers in these messages; small int keys
    # iterate in ascending order there.
    entries = ", ".join(
        f"{partition} -> ArrayBuffer({', '.join(map(str, replicas))})"
        for partition, replicas in sorted(assignment.items())
    )
    return f"HashMap({entries})"
