"""The replica sets of a reassignment (Kafka's ReplicaAssignment): RS, adding, removing, origin, target."""

from __future__ import annotations

from odradek.cluster.controller.replica_assignment import ReplicaAssignment


def test_rs_is_the_target_then_the_original_replicas_it_drops() -> None:
    moving = ReplicaAssignment.of([1, 2, 3]).reassign_to([4, 5, 6])
    assert moving == ReplicaAssignment((4, 5, 6, 1, 2, 3), (4, 5, 6), (1, 2, 3))
    assert (moving.origin_replicas, moving.target_replicas) == ([1, 2, 3], [4, 5, 6])
    assert moving.is_being_reassigned


def test_overlapping_targets_keep_the_replicas_they_share() -> None:
    moving = ReplicaAssignment.of([1, 2, 3]).reassign_to([3, 4, 2])
    assert moving == ReplicaAssignment((3, 4, 2, 1), (4,), (1,))


def test_a_new_target_starts_from_the_original_replicas_not_the_ones_being_added() -> None:
    replaced = ReplicaAssignment.of([1]).reassign_to([2]).reassign_to([3])
    assert replaced == ReplicaAssignment((3, 1), (3,), (1,))


def test_cancelling_is_reassigning_to_the_original_replicas() -> None:
    cancelled = ReplicaAssignment.of([1, 2]).reassign_to([2, 3]).reassign_to([1, 2])
    assert cancelled == ReplicaAssignment((1, 2), (), ())
    assert not cancelled.is_being_reassigned
