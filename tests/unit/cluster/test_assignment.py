"""Replica assignment: exact placements worked out by hand from Kafka 3.9's AdminUtils, the spreading
properties Kafka's own tests check, and every check of explicit assignments with Kafka's code and text."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from odradek.cluster.assignment import (
    AdminOperationError,
    BrokerMetadata,
    RackAwareMode,
    ReplicaAssignment,
    assign_replicas_to_brokers,
    broker_metadatas,
    explicit_topic_assignment,
    new_partitions_assignment,
    rack_alternated_brokers,
)
from odradek.protocol.error_codes import ErrorCode, KafkaError


def unracked(*ids: int) -> list[BrokerMetadata]:
    return [BrokerMetadata(node_id) for node_id in ids]


def racked(racks: dict[int, str]) -> list[BrokerMetadata]:
    return [BrokerMetadata(node_id, rack) for node_id, rack in racks.items()]


# --- exact placements, worked out by hand from Kafka's algorithm -----------------------------------


def test_rack_unaware_matches_kafkas_table_for_five_brokers() -> None:
    # Kafka's AdminUtils documents this table (start index 0, shift 0): the first round of five
    # partitions has followers 1 and 2 brokers on; at p5 the shift becomes 1, so followers are 2 and 3 on.
    assignment = assign_replicas_to_brokers(unracked(0, 1, 2, 3, 4), 10, 3, start_index=0, replica_shift=0)
    assert assignment == {
        0: [0, 1, 2],
        1: [1, 2, 3],
        2: [2, 3, 4],
        3: [3, 4, 0],
        4: [4, 0, 1],
        5: [0, 2, 3],
        6: [1, 3, 4],
        7: [2, 4, 0],
        8: [3, 0, 1],
        9: [4, 1, 2],
    }


def test_rack_unaware_start_index_and_shift_over_brokers_given_out_of_order() -> None:
    # n=4, ids ordered 10,20,30,40. p0: first index (0+2)%4=2 -> 30, follower index 2+1+(3+0)%3=3 -> 40.
    # p4 starts a new round: shift 4, first index 2 -> 30, follower 2+1+(4%3)=4%4=0 -> 10.
    brokers = unracked(40, 10, 30, 20)
    assignment = assign_replicas_to_brokers(brokers, 6, 2, start_index=2, replica_shift=3)
    assert assignment == {0: [30, 40], 1: [40, 10], 2: [10, 20], 3: [20, 30], 4: [30, 10], 5: [40, 20]}


def test_rack_alternated_list_takes_one_broker_per_rack_in_turn() -> None:
    # Racks by name (rack1, rack2, rack3), brokers by id within each.
    brokers = racked({0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"})
    assert rack_alternated_brokers(brokers) == [0, 3, 1, 5, 4, 2]
    uneven = racked({0: "a", 1: "b", 2: "c", 3: "a", 4: "a"})
    assert rack_alternated_brokers(uneven) == [0, 1, 2, 3, 4]


def test_rack_aware_matches_kafkas_documented_example() -> None:
    # Round-robin over 0,3,1,5,4,2 for p0-p5; at p6 the shift becomes 1, counted in rounds of 3 racks,
    # so p6's followers start 1+3 places after the leader: 4 then 2 (Kafka's doc: "6 -> 0,4,2").
    brokers = racked({0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"})
    assignment = assign_replicas_to_brokers(brokers, 7, 3, start_index=0, replica_shift=0)
    assert assignment == {
        0: [0, 3, 1],
        1: [3, 1, 5],
        2: [1, 5, 4],
        3: [5, 4, 2],
        4: [4, 2, 0],
        5: [2, 0, 3],
        6: [0, 4, 2],
    }


def test_rack_aware_skips_brokers_of_a_rack_that_has_a_replica_until_every_rack_has_one() -> None:
    # List 0,1,2,3,4 (a,b,c,a,a); leader 3 (a). Walk: 4 (a, skipped), 0 (a, skipped), 1 (b), 2 (c);
    # every rack now has a replica, so the walk wraps to 4, a broker without one.
    brokers = racked({0: "a", 1: "b", 2: "c", 3: "a", 4: "a"})
    assert assign_replicas_to_brokers(brokers, 1, 4, start_index=3, replica_shift=0) == {0: [3, 1, 2, 4]}


def test_start_index_and_shift_are_drawn_from_the_given_rng_start_first() -> None:
    brokers = unracked(0, 1, 2, 3, 4, 5)
    draws = random.Random(7)
    start, shift = draws.randrange(6), draws.randrange(6)
    expected = assign_replicas_to_brokers(brokers, 20, 3, start_index=start, replica_shift=shift)
    assert assign_replicas_to_brokers(brokers, 20, 3, rng=random.Random(7)) == expected


def test_random_start_index_puts_partition_0_on_every_broker_eventually() -> None:
    rng = random.Random(1)
    leaders = {assign_replicas_to_brokers(unracked(0, 1, 2), 1, 1, rng=rng)[0][0] for _ in range(100)}
    assert leaders == {0, 1, 2}


# --- CreatePartitions: the spread continues ----------------------------------------------------------


def test_new_partitions_continue_from_partition_0s_leader() -> None:
    # The topic was placed with start index and shift 2, so partition 0 leads on broker 2; the new
    # partitions 5-7 start from index 2 with shift 2, and p5 begins a new round (shift 3):
    # p5 first index (5+2)%5=2 -> 2, follower 2+1+3%4=6%5=1 -> 1.
    brokers = unracked(0, 1, 2, 3, 4)
    existing = assign_replicas_to_brokers(brokers, 5, 2, start_index=2, replica_shift=2)
    assert existing[0][0] == 2
    added = new_partitions_assignment("t", existing, brokers, 8)
    assert added == {5: [2, 1], 6: [3, 2], 7: [4, 3]}
    assert added == {
        p: r
        for p, r in assign_replicas_to_brokers(brokers, 8, 2, start_index=2, replica_shift=2).items()
        if p >= 5
    }


def test_new_partitions_start_at_the_next_broker_up_when_partition_0s_leader_left() -> None:
    # Broker 2 led partition 0 and is gone: the first id at or above 2 is 3, at index 2 of 0,1,3,4.
    existing = {0: [2, 0], 1: [3, 1]}
    added = new_partitions_assignment("t", existing, unracked(0, 1, 3, 4), 4)
    assert added == assign_replicas_to_brokers(
        unracked(0, 1, 3, 4), 2, 2, start_index=2, replica_shift=2, start_partition_id=2
    )
    # No id at or above the old leader: start from index 0.
    assert new_partitions_assignment("t", {0: [9]}, unracked(1, 2), 2) == {1: [2]}


def test_new_partitions_use_racks_when_every_broker_has_one() -> None:
    brokers = racked({0: "r1", 1: "r2", 2: "r1", 3: "r2"})
    added = new_partitions_assignment("t", {0: [0, 1], 1: [1, 2]}, brokers, 10)
    for replicas in added.values():
        assert {dict(brokers)[b] for b in replicas} == {"r1", "r2"}


def test_explicit_new_partitions_are_numbered_after_the_existing_ones() -> None:
    added = new_partitions_assignment("t", {0: [0, 1]}, unracked(0, 1, 2), 3, [[2, 0], [1, 2]])
    assert added == {1: [2, 0], 2: [1, 2]}


# --- errors -------------------------------------------------------------------------------------------


def check(error: pytest.ExceptionInfo[KafkaError], code: ErrorCode, message: str | None) -> None:
    assert error.value.error_code is code
    assert error.value.error_message == message


@pytest.mark.parametrize(
    ("partitions", "replication_factor", "code", "message"),
    [
        (0, 1, ErrorCode.INVALID_PARTITIONS, "Number of partitions must be larger than 0."),
        (-1, 0, ErrorCode.INVALID_PARTITIONS, "Number of partitions must be larger than 0."),
        (3, 0, ErrorCode.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0."),
        (
            3,
            4,
            ErrorCode.INVALID_REPLICATION_FACTOR,
            "Replication factor: 4 larger than available brokers: 3.",
        ),
    ],
)
def test_placement_rejects_counts_as_kafka_does(
    partitions: int, replication_factor: int, code: ErrorCode, message: str
) -> None:
    with pytest.raises(KafkaError) as error:
        assign_replicas_to_brokers(unracked(0, 1, 2), partitions, replication_factor)
    check(error, code, message)


def test_no_brokers_at_all_is_a_replication_factor_error() -> None:
    with pytest.raises(KafkaError) as error:
        assign_replicas_to_brokers([], 1, 1)
    check(
        error, ErrorCode.INVALID_REPLICATION_FACTOR, "Replication factor: 1 larger than available brokers: 0."
    )


def test_create_topics_with_some_brokers_racked_is_an_unknown_server_error_without_a_message() -> None:
    # Kafka's AdminOperationException is no API error: CreateTopics answers UNKNOWN_SERVER_ERROR and
    # hides the text; the replication factor is checked before the racks.
    brokers = [BrokerMetadata(0, "a"), BrokerMetadata(1, None), BrokerMetadata(2, "b")]
    with pytest.raises(AdminOperationError) as error:
        assign_replicas_to_brokers(brokers, 3, 2)
    check(error, ErrorCode.UNKNOWN_SERVER_ERROR, None)
    assert error.value.reason == "Not all brokers have rack information for replica rack aware assignment."
    assert "Not all brokers have rack information" in str(error.value)
    with pytest.raises(KafkaError) as first:
        assign_replicas_to_brokers(brokers, 3, 4)
    assert first.value.error_code is ErrorCode.INVALID_REPLICATION_FACTOR


def test_broker_metadatas_by_rack_aware_mode() -> None:
    mixed = [BrokerMetadata(2, "a"), BrokerMetadata(0, None), BrokerMetadata(1, "b")]
    with pytest.raises(AdminOperationError) as error:
        broker_metadatas(mixed)
    check(error, ErrorCode.UNKNOWN_SERVER_ERROR, None)
    assert error.value.reason == (
        "Not all brokers have rack information. Add --disable-rack-aware in command line to make "
        "replica assignment without rack information."
    )
    without_racks = unracked(0, 1, 2)
    assert broker_metadatas(mixed, RackAwareMode.SAFE) == without_racks
    assert broker_metadatas(mixed, RackAwareMode.DISABLED) == without_racks
    full = racked({1: "b", 0: "a"})
    assert broker_metadatas(full) == racked({0: "a", 1: "b"})
    assert broker_metadatas(full, RackAwareMode.SAFE) == racked({0: "a", 1: "b"})
    assert broker_metadatas(full, RackAwareMode.DISABLED) == unracked(0, 1)
    assert broker_metadatas(unracked(1, 0)) == unracked(0, 1)


def test_create_partitions_with_some_brokers_racked_fails_even_with_an_explicit_assignment() -> None:
    mixed = [BrokerMetadata(0, "a"), BrokerMetadata(1, None)]
    with pytest.raises(AdminOperationError):
        new_partitions_assignment("t", {0: [0]}, mixed, 2, [[1]])


@pytest.mark.parametrize(
    ("assignments", "message"),
    [
        ([(0, [1, 2]), (1, [1])], "All partitions should have the same number of replicas"),
        (
            [(0, [1, 2]), (1, [2, 2])],
            "Duplicate replica assignment found: HashMap(0 -> ArrayBuffer(1, 2), 1 -> ArrayBuffer(2, 2))",
        ),
        ([(1, [1]), (2, [2])], "partitions should be a consecutive 0-based integer sequence"),
        ([(0, [1]), (2, [2])], "partitions should be a consecutive 0-based integer sequence"),
        # Kafka's sum check would let this one through; a partition -1 is never created here.
        (
            [(-1, [1]), (1, [1]), (2, [1]), (3, [1])],
            "partitions should be a consecutive 0-based integer sequence",
        ),
        ([], "All partitions should have the same number of replicas"),
    ],
)
def test_explicit_topic_assignment_errors(assignments: list[tuple[int, list[int]]], message: str) -> None:
    with pytest.raises(KafkaError) as error:
        explicit_topic_assignment(assignments)
    check(error, ErrorCode.INVALID_REPLICA_ASSIGNMENT, message)


def test_explicit_topic_assignment_is_accepted_as_kafkas_zookeeper_mode_accepts_it() -> None:
    # Unknown brokers are not checked at CreateTopics in ZooKeeper mode, and a repeated index keeps
    # its last list.
    assert explicit_topic_assignment([(1, [7, 8]), (0, [9, 7]), (1, [8, 9])]) == {1: [8, 9], 0: [9, 7]}


@pytest.mark.parametrize(
    ("count", "assignments", "code", "message"),
    [
        (
            1,
            None,
            ErrorCode.INVALID_PARTITIONS,
            "Topic currently has 2 partitions, which is higher than the requested 1.",
        ),
        (2, None, ErrorCode.INVALID_PARTITIONS, "Topic already has 2 partitions."),
        (2, [[0]], ErrorCode.INVALID_PARTITIONS, "Topic already has 2 partitions."),
        (
            4,
            [[5, 0], [6, 7]],
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "Unknown broker(s) in replica assignment: 5, 6, 7.",
        ),
        (
            4,
            [[0, 1]],
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "Increasing the number of partitions by 2 but 1 assignments provided.",
        ),
        (
            4,
            [],
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "Increasing the number of partitions by 2 but 0 assignments provided.",
        ),
        (
            4,
            [[0, 1], []],
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "Cannot have replication factor of 0 for partition id 3.",
        ),
        (
            4,
            [[0, 1], [2, 1, 2]],
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "Duplicate brokers not allowed in replica assignment: 2, 1, 2 for partition id 3.",
        ),
        (
            5,
            [[0], [0, 1], [0, 1, 2]],
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "Inconsistent replication factor between partitions, partition 0 has 2 while partitions [2, 4] "
            "have replication factors [1, 3], respectively.",
        ),
    ],
)
def test_create_partitions_errors(
    count: int, assignments: list[list[int]] | None, code: ErrorCode, message: str
) -> None:
    with pytest.raises(KafkaError) as error:
        new_partitions_assignment("t", {0: [0, 1], 1: [1, 2]}, unracked(0, 1, 2), count, assignments)
    check(error, code, message)


def test_create_partitions_with_too_few_brokers_for_the_replication_factor() -> None:
    with pytest.raises(KafkaError) as error:
        new_partitions_assignment("t", {0: [0, 1, 2]}, unracked(0, 1), 2)
    check(
        error, ErrorCode.INVALID_REPLICATION_FACTOR, "Replication factor: 3 larger than available brokers: 2."
    )


def test_create_partitions_without_partition_0_is_an_unknown_server_error() -> None:
    with pytest.raises(AdminOperationError) as error:
        new_partitions_assignment("t", {1: [0]}, unracked(0, 1), 3)
    check(error, ErrorCode.UNKNOWN_SERVER_ERROR, None)
    assert error.value.reason.startswith(
        "Unexpected existing replica assignment for topic 't', partition id 0 is missing."
    )


# --- properties, as Kafka's RackAwareTest checks them ----------------------------------------------


def check_replicas_on_distinct_brokers(
    assignment: ReplicaAssignment, brokers: list[BrokerMetadata], first: int, partitions: int, factor: int
) -> None:
    ids = {broker.node_id for broker in brokers}
    assert sorted(assignment) == list(range(first, first + partitions))
    for replicas in assignment.values():
        assert len(replicas) == factor
        assert len(set(replicas)) == factor
        assert set(replicas) <= ids


def check_leaders_even(assignment: ReplicaAssignment, brokers: list[BrokerMetadata]) -> None:
    leaders = Counter(replicas[0] for replicas in assignment.values())
    counts = [leaders.get(broker.node_id, 0) for broker in brokers]
    assert max(counts) - min(counts) <= 1


broker_ids = st.lists(st.integers(0, 1000), min_size=1, max_size=12, unique=True)


@settings(max_examples=150, deadline=None)
@given(data=st.data(), ids=broker_ids, partitions=st.integers(1, 200), seed=st.integers(0, 2**32))
def test_rack_unaware_spreads_leaders_and_replicas(
    data: st.DataObject, ids: list[int], partitions: int, seed: int
) -> None:
    brokers = unracked(*ids)
    factor = data.draw(st.integers(1, len(ids)))
    assignment = assign_replicas_to_brokers(brokers, partitions, factor, rng=random.Random(seed))
    check_replicas_on_distinct_brokers(assignment, brokers, 0, partitions, factor)
    check_leaders_even(assignment, brokers)
    if partitions % len(ids) == 0:
        # Each round of n partitions is a rotation: every broker holds the factor's share of it.
        held = Counter(b for replicas in assignment.values() for b in replicas)
        assert set(held.values()) == {partitions * factor // len(ids)}


rack_names = st.sampled_from(["r1", "r2", "r3", "r4", "zone-a", "zone-b"])


@settings(max_examples=150, deadline=None)
@given(data=st.data(), ids=broker_ids, partitions=st.integers(1, 200), seed=st.integers(0, 2**32))
def test_rack_aware_puts_replicas_on_distinct_racks_while_racks_remain(
    data: st.DataObject, ids: list[int], partitions: int, seed: int
) -> None:
    racks = {node_id: data.draw(rack_names) for node_id in ids}
    brokers = racked(racks)
    factor = data.draw(st.integers(1, len(ids)))
    assignment = assign_replicas_to_brokers(brokers, partitions, factor, rng=random.Random(seed))
    check_replicas_on_distinct_brokers(assignment, brokers, 0, partitions, factor)
    check_leaders_even(assignment, brokers)
    rack_count = len(set(racks.values()))
    for replicas in assignment.values():
        assert len({racks[b] for b in replicas}) == min(factor, rack_count)


@settings(max_examples=100, deadline=None)
@given(
    rack_count=st.integers(1, 4),
    per_rack=st.integers(1, 3),
    rounds=st.integers(1, 8),
    seed=st.integers(0, 2**32),
)
def test_rack_aware_is_even_over_brokers_and_racks_when_racks_match_the_factor(
    rack_count: int, per_rack: int, rounds: int, seed: int
) -> None:
    # Kafka's promise: replicas as many as racks, racks of equal size -> even over brokers and racks.
    racks = {
        rack * per_rack + index: f"rack{rack}" for rack in range(rack_count) for index in range(per_rack)
    }
    brokers = racked(racks)
    partitions = rounds * len(racks)
    assignment = assign_replicas_to_brokers(brokers, partitions, rack_count, rng=random.Random(seed))
    held = Counter(b for replicas in assignment.values() for b in replicas)
    assert set(held.values()) == {partitions * rack_count // len(racks)}
    led_by_rack = Counter(racks[replicas[0]] for replicas in assignment.values())
    assert set(led_by_rack.values()) == {partitions // rack_count}
    held_by_rack = Counter(racks[b] for replicas in assignment.values() for b in replicas)
    assert set(held_by_rack.values()) == {partitions}


@settings(max_examples=150, deadline=None)
@given(
    data=st.data(),
    ids=broker_ids,
    existing=st.integers(1, 100),
    added=st.integers(1, 100),
    with_racks=st.booleans(),
)
def test_adding_partitions_continues_the_spread(
    data: st.DataObject, ids: list[int], existing: int, added: int, with_racks: bool
) -> None:
    brokers = racked({node_id: data.draw(rack_names) for node_id in ids}) if with_racks else unracked(*ids)
    factor = data.draw(st.integers(1, len(ids)))
    index = data.draw(st.integers(0, len(ids) - 1))
    created = assign_replicas_to_brokers(brokers, existing, factor, start_index=index, replica_shift=index)
    grown = new_partitions_assignment("t", created, brokers, existing + added)
    check_replicas_on_distinct_brokers(grown, brokers, existing, added, factor)
    check_leaders_even(grown, brokers)
    if not with_racks:
        # Without racks partition 0 leads on the broker at the start index of the id-ordered list, so the
        # leaders continue the round-robin where creating the bigger topic at once would have gone. The
        # followers need not: Kafka restarts the shift at the start index instead of counting the rounds
        # already placed. (With racks Kafka looks the leader up in the id-ordered list but walks the
        # rack-alternated one, so only the leaders' evenness among the new partitions holds.)
        whole = assign_replicas_to_brokers(
            brokers, existing + added, factor, start_index=index, replica_shift=index
        )
        assert {p: r[0] for p, r in grown.items()} == {p: whole[p][0] for p in grown}
        check_leaders_even({**created, **grown}, brokers)


def test_new_partitions_restart_the_follower_shift_at_the_start_index() -> None:
    # Created with start 0, shift 0 on 0,1,2: p3 began a second round (shift 1) and got [0, 2]. Growing
    # to 5 restarts the shift at 0 and p4 (no new round) gets followers 1 place on: [1, 2], where
    # creating 5 partitions at once would have given [1, 0]. Kafka does the same.
    brokers = unracked(0, 1, 2)
    created = assign_replicas_to_brokers(brokers, 4, 2, start_index=0, replica_shift=0)
    assert created == {0: [0, 1], 1: [1, 2], 2: [2, 0], 3: [0, 2]}
    assert new_partitions_assignment("t", created, brokers, 5) == {4: [1, 2]}
    assert assign_replicas_to_brokers(brokers, 5, 2, start_index=0, replica_shift=0)[4] == [1, 0]
