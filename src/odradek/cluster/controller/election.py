"""Kafka's leader election rules (kafka/controller/Election.scala), as pure functions.

Each returns the new leader and ISR, or None when no replica may lead: the partition then stays (or
goes) offline. Only replicas in the ISR are ever elected, unless `unclean.leader.election.enable`
allows an offline partition to take any live replica (and accept losing what it had not copied).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

#: ElectLeaders election_type values (ElectionType.java).
PREFERRED_ELECTION = 0
UNCLEAN_ELECTION = 1


@dataclass(frozen=True, slots=True)
class Elected:
    leader: int
    isr: list[int]


def new_partition_leader(assignment: Sequence[int], live: Collection[int]) -> Elected | None:
    """A new partition (PartitionStateMachine.initializeLeaderAndIsrForPartitions): the first live
    replica leads, every live replica is in the ISR (they are all empty, hence in sync)."""
    live_replicas = [r for r in assignment if r in live]
    if not live_replicas:
        return None
    return Elected(live_replicas[0], live_replicas)


def offline_partition_leader(
    assignment: Sequence[int], isr: Sequence[int], live: Collection[int], unclean: bool = False
) -> Elected | None:
    """Election.leaderForOffline: the first replica, in assignment order, that is live and in the ISR;
    the ISR keeps its live members. With unclean election only, else the first live replica alone."""
    leader = next((r for r in assignment if r in live and r in isr), None)
    if leader is not None:
        return Elected(leader, [r for r in isr if r in live])
    if unclean:
        leader = next((r for r in assignment if r in live), None)
        if leader is not None:
            return Elected(leader, [leader])
    return None


def preferred_replica_leader(
    assignment: Sequence[int], isr: Sequence[int], live: Collection[int]
) -> Elected | None:
    """Election.leaderForPreferredReplica: replicas[0] if it is live and in the ISR; the ISR stays."""
    if not assignment:
        return None
    preferred = assignment[0]
    if preferred in live and preferred in isr:
        return Elected(preferred, list(isr))
    return None


def controlled_shutdown_leader(
    assignment: Sequence[int], isr: Sequence[int], live: Collection[int], shutting_down: Collection[int]
) -> Elected | None:
    """Election.leaderForControlledShutdown: the first live ISR replica, in assignment order, that is
    not shutting down; the brokers shutting down leave the ISR."""
    leader = next((r for r in assignment if r in live and r in isr and r not in shutting_down), None)
    if leader is None:
        return None
    return Elected(leader, [r for r in isr if r not in shutting_down])


def isr_without_replica(leader: int, isr: Sequence[int], replica: int) -> tuple[int, list[int]]:
    """ReplicaStateMachine.doRemoveReplicasFromIsr: the replica leaves the ISR (unless it is the last
    member: Kafka keeps it, so that the partition's last in-sync copy is known) and, if it led, the
    partition has no leader (-1) until a replica of the ISR is back."""
    new_leader = -1 if leader == replica else leader
    new_isr = list(isr) if len(isr) == 1 else [r for r in isr if r != replica]
    return new_leader, new_isr


def election_not_needed(
    election_type: int, leader: int, assignment: Sequence[int], live: Collection[int]
) -> bool:
    """KafkaController.processReplicaLeaderElection's split: a preferred election is not needed where
    the first replica leads, an unclean one where a live broker leads."""
    if election_type == PREFERRED_ELECTION:
        return bool(assignment) and leader == assignment[0]
    return leader in live
