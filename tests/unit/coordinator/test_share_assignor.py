"""The share assignor spreads partitions over members as Kafka 4.4's SimpleAssignor does: counts that
differ by at most one, a partition shared by ceil(members / partitions) members when members outnumber
partitions, the previous target kept where it fits."""

from __future__ import annotations

import uuid
from collections import Counter

from odradek.coordinator.share_assignor import MemberSpec, Partitions, assign

T1 = uuid.UUID(int=1)
T2 = uuid.UUID(int=2)


def member(*topics: uuid.UUID, assigned: Partitions | None = None) -> MemberSpec:
    return MemberSpec(frozenset(topics), assigned or {})


def holders(result: dict[str, Partitions]) -> Counter[tuple[uuid.UUID, int]]:
    return Counter((t, p) for got in result.values() for t, ps in got.items() for p in ps)


def test_more_partitions_than_members_gives_each_partition_to_one_member_and_counts_within_one() -> None:
    result = assign({m: member(T1) for m in "abc"}, {T1: frozenset(range(8))})
    assert holders(result) == Counter({(T1, p): 1 for p in range(8)})
    assert sorted(len(got[T1]) for got in result.values()) == [2, 3, 3]


def test_more_members_than_partitions_shares_each_partition_and_gives_every_member_one() -> None:
    result = assign({m: member(T1) for m in "abcde"}, {T1: frozenset(range(2))})
    # ceil(5 / 2) = 3 members per partition, six slots over five members.
    assert holders(result) == Counter({(T1, 0): 3, (T1, 1): 3})
    assert all(got.get(T1) for got in result.values())
    assert sorted(len(got[T1]) for got in result.values()) == [1, 1, 1, 1, 2]


def test_a_new_member_takes_only_the_excess_of_the_others() -> None:
    before = {"a": member(T1, assigned={T1: frozenset(range(4))})}
    before["b"] = member(T1)
    result = assign(before, {T1: frozenset(range(4))})
    assert len(result["a"][T1]) == 2 and result["a"][T1] < frozenset(range(4))
    assert result["b"][T1] == frozenset(range(4)) - result["a"][T1]


def test_a_member_leaving_hands_its_partitions_to_the_rest_without_moving_theirs() -> None:
    first = assign({m: member(T1) for m in "abc"}, {T1: frozenset(range(6))})
    left = {m: member(T1, assigned=first[m]) for m in "ab"}
    result = assign(left, {T1: frozenset(range(6))})
    assert result["a"][T1] >= first["a"][T1] and result["b"][T1] >= first["b"][T1]
    assert holders(result) == Counter({(T1, p): 1 for p in range(6)})


def test_partitions_not_assignable_any_more_are_taken_back() -> None:
    result = assign({"a": member(T1, assigned={T1: frozenset({0, 1, 5})})}, {T1: frozenset({0, 1})})
    assert result == {"a": {T1: frozenset({0, 1})}}


def test_different_subscriptions_spread_each_topic_over_its_own_subscribers() -> None:
    members = {"a": member(T1), "b": member(T1, T2), "c": member(T2)}
    result = assign(members, {T1: frozenset(range(2)), T2: frozenset(range(4))})
    assert holders(result) == Counter({**{(T1, p): 1 for p in range(2)}, **{(T2, p): 1 for p in range(4)}})
    assert T2 not in result["a"] and T1 not in result["c"]
    assert len(result["a"][T1]) == 1 and len(result["c"][T2]) == 2


def test_no_partitions_or_no_members_assign_nothing() -> None:
    assert assign({"a": member(T1)}, {}) == {"a": {}}
    assert assign({}, {T1: frozenset({0})}) == {}
