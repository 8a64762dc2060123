"""KIP-392's replica selectors: which replica a consumer should fetch a partition from.

Kafka's two selectors, by their class names (`replica.selector.class`):
- LeaderSelector (and no selector, Kafka's default): always the leader, so no preferred read replica.
- RackAwareReplicaSelector: for a client that sent a rack (Fetch v11+ `rack_id`), the leader when it is
  in that rack, else the most caught-up candidate in that rack (highest log end, then the one caught up
  most recently); the leader when no candidate is in the rack.
The candidates are the leader and the followers in the ISR whose log end reaches the fetch offset (the
leader's ReplicaManager.findPreferredReadReplica filters them); only a follower is ever named.
Pure rules, no I/O: LeaderReplication feeds them the followers' progress.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from odradek.config.catalog_cluster import RACK_AWARE_SELECTOR

#: Fetch's preferred_read_replica when the consumer should stay where it is.
NO_PREFERRED_REPLICA = -1


@dataclass(frozen=True, slots=True)
class ReplicaView:
    """One candidate replica as the selector sees it (Kafka's ReplicaView)."""

    broker_id: int
    rack: str | None
    log_end_offset: int
    time_since_caught_up_ms: int


def select_read_replica(
    selector_class: str | None, client_rack: str, leader: ReplicaView, followers: Iterable[ReplicaView]
) -> int:
    """The follower the client should fetch from, or NO_PREFERRED_REPLICA (stay on the leader)."""
    if selector_class != RACK_AWARE_SELECTOR or not client_rack:
        return NO_PREFERRED_REPLICA
    if leader.rack == client_rack:
        return NO_PREFERRED_REPLICA
    same_rack = [f for f in followers if f.rack == client_rack]
    if not same_rack:
        return NO_PREFERRED_REPLICA
    best = max(same_rack, key=lambda f: (f.log_end_offset, -f.time_since_caught_up_ms))
    return best.broker_id
