"""What a replica fetcher works with (replica_fetcher.py): its replica.* settings, what it needs from
its broker, and each followed partition's state."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from odradek.cluster.inter_broker_connection import InterBrokerSecurity
from odradek.cluster.replication.fetch_session import Position
from odradek.cluster.replication.replication_quota import ReplicationQuota, ReplicationQuotas
from odradek.partition.follower_append import FollowerAppends
from odradek.partition.hosted_partition import PartitionKey
from odradek.storage.log import Log

#: Fetch v17 is Kafka 3.9's inter-broker version (topic ids, replica_state with the broker epoch); a
#: lower inter.broker.protocol.version lowers it (FetcherSettings.fetch_version).
FETCH_VERSION = 17
LIST_OFFSETS_VERSION = 9


@dataclass(frozen=True, slots=True)
class FetcherSettings:
    """The replica.* settings a fetcher works with."""

    fetch_max_bytes: int
    fetch_min_bytes: int
    fetch_wait_max_ms: int
    fetch_response_max_bytes: int
    fetch_backoff_ms: int
    socket_timeout_ms: int
    socket_receive_buffer_bytes: int
    #: inter.broker.protocol.version's Fetch and ListOffsets versions.
    fetch_version: int = FETCH_VERSION
    list_offsets_version: int = LIST_OFFSETS_VERSION


@dataclass(slots=True)
class FetchState:
    """One followed partition: where the next fetch starts, at which leader epoch."""

    topic: str
    partition: int
    topic_id: uuid.UUID | None
    leader_epoch: int
    log: Log
    #: Monotonic time before which the partition is not fetched (after an error).
    delayed_until: float = 0.0
    #: How far the leader's high watermark was past this log's end at the last answer applied (Kafka's
    #: PartitionFetchState.lag); None before the first. 0 is in sync: never throttled.
    lag: int | None = None

    @property
    def key(self) -> PartitionKey:
        return (self.topic, self.partition)


def position(state: FetchState) -> Position:
    """Where the partition's next fetch starts, as a fetch session compares it."""
    latest = state.log.latest_epoch
    return (state.log.log_end_offset, state.log.log_start_offset, latest if latest is not None else -1)


@dataclass(frozen=True, slots=True)
class FetcherContext:
    """What a fetcher needs from its broker."""

    node_id: int
    broker_epoch: Callable[[], int]
    #: The leader's inter-broker (host, port), or None while no live broker has that id.
    endpoint: Callable[[int], tuple[str, int] | None]
    local_host: str | None
    #: What appends to and truncates the followed logs (partition/follower_append.py).
    followers: FollowerAppends
    #: The inter-broker listener's TLS and SASL.
    security: InterBrokerSecurity = field(default_factory=InterBrokerSecurity)
    #: The follower's replication quota (follower.replication.throttled.rate).
    quota: ReplicationQuota = field(default_factory=lambda: ReplicationQuotas.unbounded().follower)
