"""The server-side assignors of KIP-848 groups: balanced, complete, sticky where they can be."""

from __future__ import annotations

import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from odradek.coordinator.assignors import MemberSpec, range_assignor, uniform

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)


def flat(assignment: dict[uuid.UUID, frozenset[int]]) -> set[tuple[uuid.UUID, int]]:
    return {(t, p) for t, ps in assignment.items() for p in ps}


def test_uniform_splits_evenly_and_keeps_partitions_when_a_member_joins() -> None:
    members = {m: MemberSpec(frozenset({T1})) for m in ("a", "b", "c")}
    first = uniform(members, {T1: 6})
    assert sorted(len(flat(a)) for a in first.values()) == [2, 2, 2]
    members = {m: MemberSpec(frozenset({T1}), first.get(m, {})) for m in ("a", "b", "c", "d")}
    second = uniform(members, {T1: 6})
    moved = sum(len(flat(first[m]) - flat(second[m])) for m in ("a", "b", "c"))
    assert moved == 1  # d takes one partition from someone, nothing else moves
    assert set().union(*(flat(a) for a in second.values())) == {(T1, p) for p in range(6)}


def test_uniform_gives_each_topic_only_to_its_subscribers() -> None:
    members = {
        "a": MemberSpec(frozenset({T1})),
        "b": MemberSpec(frozenset({T1, T2})),
        "c": MemberSpec(frozenset({T2})),
    }
    result = uniform(members, {T1: 4, T2: 2})
    assert all(t == T1 for t, _ in flat(result["a"]))
    assert all(t == T2 for t, _ in flat(result["c"]))
    assert sorted(len(flat(a)) for a in result.values()) == [2, 2, 2]


def test_range_gives_consecutive_ranges_first_members_one_more() -> None:
    members = {m: MemberSpec(frozenset({T1, T2})) for m in ("b", "a", "c")}
    result = range_assignor(members, {T1: 7, T2: 3})
    assert result["a"] == {T1: frozenset({0, 1, 2}), T2: frozenset({0})}
    assert result["b"] == {T1: frozenset({3, 4}), T2: frozenset({1})}
    assert result["c"] == {T1: frozenset({5, 6}), T2: frozenset({2})}


@settings(max_examples=60, deadline=None)
@given(
    members=st.integers(1, 6),
    partitions=st.lists(st.integers(1, 12), min_size=1, max_size=3),
    subscriptions=st.data(),
)
def test_every_subscribed_partition_has_exactly_one_owner(
    members: int, partitions: list[int], subscriptions: st.DataObject
) -> None:
    topics = {uuid.UUID(int=i + 1): n for i, n in enumerate(partitions)}
    specs = {
        f"m{i}": MemberSpec(
            frozenset(subscriptions.draw(st.sets(st.sampled_from(sorted(topics)), min_size=1)))
        )
        for i in range(members)
    }
    subscribed = {t for spec in specs.values() for t in spec.subscribed_topic_ids}
    wanted = {(t, p) for t in subscribed for p in range(topics[t])}
    for assignor in (uniform, range_assignor):
        result = assignor(specs, topics)
        owned = [tp for a in result.values() for tp in flat(a)]
        assert sorted(owned) == sorted(wanted)
        for member, assignment in result.items():
            assert all(t in specs[member].subscribed_topic_ids for t in assignment)
    if all(spec.subscribed_topic_ids == frozenset(topics) for spec in specs.values()):
        loads = [len(flat(a)) for a in uniform(specs, topics).values()]
        assert max(loads) - min(loads) <= 1
