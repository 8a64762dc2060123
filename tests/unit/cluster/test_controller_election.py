"""Kafka's leader election rules (Election.scala, ReplicaStateMachine), as the controller applies them."""

from __future__ import annotations

from odradek.cluster.controller.context import TopicPartition
from odradek.cluster.controller.election import (
    Elected,
    controlled_shutdown_leader,
    isr_without_replica,
    new_partition_leader,
    offline_partition_leader,
    preferred_replica_leader,
)
from odradek.cluster.controller.rebalance import imbalanced_partitions


def test_a_new_partition_is_led_by_its_first_live_replica_with_every_live_replica_in_sync() -> None:
    assert new_partition_leader([3, 1, 2], {1, 2, 3}) == Elected(3, [3, 1, 2])
    assert new_partition_leader([3, 1, 2], {1, 2}) == Elected(1, [1, 2])
    assert new_partition_leader([3], {1, 2}) is None


def test_offline_election_takes_the_first_live_isr_replica_in_assignment_order() -> None:
    # assignment order, not ISR order, decides
    assert offline_partition_leader([1, 2, 3], [3, 2], {2, 3}) == Elected(2, [3, 2])
    # the ISR keeps only its live members
    assert offline_partition_leader([1, 2, 3], [1, 2, 3], {3}) == Elected(3, [3])
    # a live replica outside the ISR is never elected while unclean election is off
    assert offline_partition_leader([1, 2, 3], [1], {2, 3}) is None


def test_unclean_offline_election_takes_any_live_replica_alone() -> None:
    assert offline_partition_leader([1, 2, 3], [1], {3, 2}, unclean=True) == Elected(2, [2])
    assert offline_partition_leader([1, 2, 3], [1, 3], {2, 3}, unclean=True) == Elected(3, [3])
    assert offline_partition_leader([1, 2], [1], set(), unclean=True) is None


def test_preferred_election_only_elects_the_first_replica_when_live_and_in_sync() -> None:
    assert preferred_replica_leader([2, 1], [1, 2], {1, 2}) == Elected(2, [1, 2])
    assert preferred_replica_leader([2, 1], [1], {1, 2}) is None
    assert preferred_replica_leader([2, 1], [1, 2], {1}) is None
    assert preferred_replica_leader([], [1], {1}) is None


def test_controlled_shutdown_election_skips_brokers_shutting_down_and_drops_them_from_the_isr() -> None:
    assert controlled_shutdown_leader([1, 2, 3], [1, 2, 3], {1, 2, 3}, {1}) == Elected(2, [2, 3])
    assert controlled_shutdown_leader([1, 2, 3], [1, 3], {1, 2, 3}, {1}) == Elected(3, [3])
    assert controlled_shutdown_leader([1, 2], [1, 2], {1, 2}, {1, 2}) is None


def test_a_failed_replica_leaves_the_isr_but_the_last_member_stays() -> None:
    assert isr_without_replica(1, [1, 2, 3], 2) == (1, [1, 3])
    assert isr_without_replica(2, [1, 2], 2) == (-1, [1])
    # the last ISR member is kept so the partition's last in-sync copy is known; no leader meanwhile
    assert isr_without_replica(2, [2], 2) == (-1, [2])


def test_auto_rebalance_moves_a_brokers_partitions_back_once_its_imbalance_is_above_the_percentage() -> None:
    a0, a1, a2, b0 = (
        TopicPartition("a", 0),
        TopicPartition("a", 1),
        TopicPartition("a", 2),
        TopicPartition("b", 0),
    )
    replicas = {a0: [1, 2], a1: [1, 2], a2: [1, 2], b0: [2, 1]}
    # broker 1 should lead 3 partitions and leads 2: 1/3 imbalance
    leaders = {a0: 1, a1: 1, a2: 2, b0: 2}
    assert imbalanced_partitions(replicas, leaders, 10, {1, 2}) == [a2]
    assert imbalanced_partitions(replicas, leaders, 34, {1, 2}) == []  # 33% is within 34%
    assert imbalanced_partitions(replicas, leaders, 10, {2}) == []  # broker 1 cannot lead
    # a partition without a state is not counted
    assert imbalanced_partitions(replicas, {a2: 2}, 10, {1, 2}) == [a2]
    leaders = {a0: 2, a1: 2, a2: 2, b0: 1}
    assert imbalanced_partitions(replicas, leaders, 10, {1, 2}) == [a0, a1, a2, b0]
