"""The share-group assignor ("simple", KIP-932) as Kafka 4.4 runs it: partitions spread over members.

With at least as many partitions as members, each partition goes to one member and the members get
counts that differ by at most one. With more members than partitions, a partition is shared: each is
given to ceil(members / partitions) members, so that every member gets one. The previous target is
kept where it still fits (sticky): a member over its count, or a partition over its sharing, gives up
the excess, and what is left unassigned is handed round-robin to the members still short.

When every member subscribes to the same topics the spread is over all their partitions together (as
Kafka's SimpleHomogeneousAssignmentBuilder); otherwise each topic is spread over the members that
subscribe to it (as its heterogeneous builder). Kafka takes members in its hash map's order; we take
them sorted by id, so the result does not depend on the order the members joined in.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass

Partitions = dict[uuid.UUID, frozenset[int]]
TopicPartition = tuple[uuid.UUID, int]


@dataclass(frozen=True)
class MemberSpec:
    """What the assignor needs of a member: what it subscribes to and its current target."""

    subscribed_topic_ids: frozenset[uuid.UUID]
    assigned: Partitions


def assign(
    members: Mapping[str, MemberSpec], assignable: Mapping[uuid.UUID, frozenset[int]]
) -> dict[str, Partitions]:
    """The new target of every member, given the partitions that may be assigned, by topic id."""
    order = sorted(members)
    if not order:
        return {}
    subscriptions = {members[m].subscribed_topic_ids for m in order}
    if len(subscriptions) == 1:
        topics = next(iter(subscriptions))
        spread = _spread(order, _partitions_of(topics, assignable), members)
    else:
        spread = {m: set() for m in order}
        for topic_id in sorted({t for s in subscriptions for t in s}):
            subscribers = [m for m in order if topic_id in members[m].subscribed_topic_ids]
            for member_id, got in _spread(
                subscribers, _partitions_of({topic_id}, assignable), members
            ).items():
                spread[member_id] |= got
    return {member_id: _by_topic(spread[member_id]) for member_id in order}


def _spread(
    order: list[str], targets: list[TopicPartition], members: Mapping[str, MemberSpec]
) -> dict[str, set[TopicPartition]]:
    """Spread `targets` over the members in `order`, keeping what each already holds where it fits."""
    holds: dict[str, set[TopicPartition]] = {m: set() for m in order}
    if not targets:
        return holds
    sharing = -(-len(order) // len(targets))  # members per partition: ceil(M / P)
    slots = sharing * len(targets)
    # Each member's count: the slots split as evenly as integers allow, the larger counts first.
    desired = {
        m: -(-slots * (i + 1) // len(order)) - -(-slots * i // len(order)) for i, m in enumerate(order)
    }
    wanted = set(targets)
    holders: dict[TopicPartition, list[str]] = {tp: [] for tp in targets}
    for member_id in order:
        kept = sorted(
            tp for t, ps in members[member_id].assigned.items() for p in ps if (tp := (t, p)) in wanted
        )
        for tp in kept[: desired[member_id]]:  # a member over its count gives up the excess
            holds[member_id].add(tp)
            holders[tp].append(member_id)
    for tp, held_by in holders.items():
        for member_id in held_by[sharing:]:  # a partition over its sharing gives up the excess
            holds[member_id].discard(tp)
        del held_by[sharing:]
    unfilled = [m for m in order if len(holds[m]) < desired[m]]
    cursor = 0
    for tp in targets:
        misses = 0
        while len(holders[tp]) < sharing and unfilled and misses < len(unfilled):
            cursor %= len(unfilled)
            member_id = unfilled[cursor]
            if tp in holds[member_id]:
                cursor += 1
                misses += 1
                continue
            holds[member_id].add(tp)
            holders[tp].append(member_id)
            misses = 0
            if len(holds[member_id]) >= desired[member_id]:
                unfilled.pop(cursor)
            else:
                cursor += 1
    return holds


def _partitions_of(
    topic_ids: frozenset[uuid.UUID] | set[uuid.UUID], assignable: Mapping[uuid.UUID, frozenset[int]]
) -> list[TopicPartition]:
    return [(t, p) for t in sorted(topic_ids) for p in sorted(assignable.get(t, frozenset()))]


def _by_topic(partitions: set[TopicPartition]) -> Partitions:
    by_topic: dict[uuid.UUID, set[int]] = {}
    for topic_id, partition in partitions:
        by_topic.setdefault(topic_id, set()).add(partition)
    return {topic_id: frozenset(ps) for topic_id, ps in by_topic.items()}
