"""Server-side assignors of KIP-848 consumer groups: "uniform" (the default) and "range".

Both take each member's subscribed topic ids and previous target assignment and the partition count of
every subscribed topic, and return every member's new target (a member may get nothing).

- uniform: spreads all partitions as evenly as the subscriptions allow, keeping each member's previous
  partitions where that stays balanced (sticky), so a rebalance moves as few partitions as it can.
- range: per topic, its subscribers sorted by member id take consecutive ranges, the first ones one
  partition more (co-partitioned topics land on the same member, as with the client-side range).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

Partitions = dict[uuid.UUID, frozenset[int]]


@dataclass(frozen=True)
class MemberSpec:
    subscribed_topic_ids: frozenset[uuid.UUID]
    previous: Partitions = field(default_factory=dict)


Assignor = Callable[[Mapping[str, MemberSpec], Mapping[uuid.UUID, int]], dict[str, Partitions]]


def uniform(members: Mapping[str, MemberSpec], topics: Mapping[uuid.UUID, int]) -> dict[str, Partitions]:
    ids = sorted(members)
    subscribers: dict[uuid.UUID, list[str]] = {
        t: [m for m in ids if t in members[m].subscribed_topic_ids] for t in sorted(topics)
    }
    owner: dict[tuple[uuid.UUID, int], str] = {}
    owned: dict[str, set[tuple[uuid.UUID, int]]] = {m: set() for m in ids}
    for m in ids:  # sticky: keep what was theirs and still exists and is subscribed
        spec = members[m]
        for t, numbers in spec.previous.items():
            if t in topics and t in spec.subscribed_topic_ids:
                for p in numbers:
                    if p < topics[t] and (t, p) not in owner:
                        owner[(t, p)] = m
                        owned[m].add((t, p))
    # New partitions go to the least loaded subscriber (fewest choices first: nothing gets stranded).
    remaining = [
        (t, p) for t in sorted(topics) for p in range(topics[t]) if subscribers[t] and (t, p) not in owner
    ]
    remaining.sort(key=lambda tp: (len(subscribers[tp[0]]), tp))
    for t, p in remaining:
        chosen = min(subscribers[t], key=lambda m: (len(owned[m]), m))
        owner[(t, p)] = chosen
        owned[chosen].add((t, p))
    _balance(ids, members, owner, owned)
    return _collect(ids, owner)


def _balance(
    ids: list[str],
    members: Mapping[str, MemberSpec],
    owner: dict[tuple[uuid.UUID, int], str],
    owned: dict[str, set[tuple[uuid.UUID, int]]],
) -> None:
    """Move single partitions from heavier to lighter subscribers until no move narrows the gap."""
    moved = True
    while moved:
        moved = False
        for heavy in sorted(ids, key=lambda m: (-len(owned[m]), m)):
            for t, p in sorted(owned[heavy], reverse=True):
                lighter = [
                    m
                    for m in ids
                    if t in members[m].subscribed_topic_ids and len(owned[m]) + 1 < len(owned[heavy])
                ]
                if lighter:
                    target = min(lighter, key=lambda m: (len(owned[m]), m))
                    owned[heavy].discard((t, p))
                    owned[target].add((t, p))
                    owner[(t, p)] = target
                    moved = True
                    break
            if moved:
                break


def range_assignor(
    members: Mapping[str, MemberSpec], topics: Mapping[uuid.UUID, int]
) -> dict[str, Partitions]:
    ids = sorted(members)
    owner: dict[tuple[uuid.UUID, int], str] = {}
    for t in sorted(topics):
        subscribed = [m for m in ids if t in members[m].subscribed_topic_ids]
        if not subscribed:
            continue
        count = topics[t]
        base, extra = divmod(count, len(subscribed))
        start = 0
        for i, m in enumerate(subscribed):
            size = base + (1 if i < extra else 0)
            for p in range(start, start + size):
                owner[(t, p)] = m
            start += size
    return _collect(ids, owner)


ASSIGNORS: dict[str, Assignor] = {"uniform": uniform, "range": range_assignor}


def _collect(ids: list[str], owner: Mapping[tuple[uuid.UUID, int], str]) -> dict[str, Partitions]:
    result: dict[str, dict[uuid.UUID, set[int]]] = {m: {} for m in ids}
    for (t, p), m in owner.items():
        result[m].setdefault(t, set()).add(p)
    return {m: {t: frozenset(ps) for t, ps in topics.items()} for m, topics in result.items()}
