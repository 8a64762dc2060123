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
    all_partitions = [(t, p) for t in sorted(topics) for p in range(topics[t]) if subscribers[t]]
    # Each member's fair share: its topics' partitions divided among their subscribers.
    share = {
        m: sum(topics[t] / len(subscribers[t]) for t in members[m].subscribed_topic_ids if subscribers.get(t))
        for m in ids
    }
    quota = {m: int(share[m]) for m in ids}
    extra = len(all_partitions) - sum(quota.values())
    for m in sorted(ids, key=lambda m: (-(share[m] - quota[m]), m)):
        if extra <= 0:
            break
        quota[m] += 1
        extra -= 1
    owner: dict[tuple[uuid.UUID, int], str] = {}
    load = dict.fromkeys(ids, 0)
    for m in ids:  # keep what was theirs, up to the quota
        spec = members[m]
        for t in sorted(spec.previous):
            if t not in topics or t not in spec.subscribed_topic_ids:
                continue
            for p in sorted(spec.previous[t]):
                if p < topics[t] and (t, p) not in owner and load[m] < quota[m]:
                    owner[(t, p)] = m
                    load[m] += 1
    # The rest go to the least loaded eligible member (fewest choices first, so nothing is stranded).
    remaining = [tp for tp in all_partitions if tp not in owner]
    remaining.sort(key=lambda tp: (len(subscribers[tp[0]]), tp))
    for t, p in remaining:
        candidates = subscribers[t]
        under = [m for m in candidates if load[m] < quota[m]]
        chosen = min(under or candidates, key=lambda m: (load[m], m))
        owner[(t, p)] = chosen
        load[chosen] += 1
    return _collect(ids, owner)


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
