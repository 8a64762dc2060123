"""How a cluster member's replica manager makes its replica fetchers (Kafka's ReplicaManager creates
its ReplicaFetcherManager): where a follower finds its leaders, and what it tells about itself.

As server/controlled_shutdown.py: a leader is reached on its endpoint for the inter-broker listener
(`inter.broker.listener.name`, else `security.inter.broker.protocol`) as the metadata cache knows it,
and connections leave from this broker's own address on that listener.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from odradek.cluster.inter_broker_connection import InterBrokerSecurity
from odradek.cluster.metadata import ClusterMetadata
from odradek.cluster.replication.fetch_state import FetcherContext
from odradek.cluster.replication.fetcher_manager import ReplicaFetcherManager
from odradek.cluster.replication.replication_quota import ReplicationQuota
from odradek.config.broker import BrokerConfig
from odradek.partition.follower_append import FollowerAppends

#: Hosts that name no single address: outgoing connections then leave from wherever the OS picks.
_ANY_HOST = ("", "0.0.0.0", "::")


@dataclass(frozen=True)
class FollowerSettings:
    """What a cluster member's replica manager makes its fetchers with."""

    config: BrokerConfig
    #: The configuration as AlterConfigs last left it (num.replica.fetchers is read at each change).
    live_config: Callable[[], BrokerConfig]
    #: The follower's replication throttle (follower.replication.throttled.rate).
    quota: ReplicationQuota
    security: InterBrokerSecurity


def replica_fetcher_manager(
    settings: FollowerSettings,
    cluster: ClusterMetadata,
    node_id: int,
    broker_epoch: Callable[[], int],
    followers: FollowerAppends,
) -> ReplicaFetcherManager:
    config = settings.config
    listener = config.inter_broker_listener_name or config.security_inter_broker_protocol

    def endpoint(broker_id: int) -> tuple[str, int] | None:
        broker = cluster.live_brokers.get(broker_id)
        found = broker.endpoints.get(listener) if broker is not None else None
        return (found.host, found.port) if found is not None else None

    own = [e.host for e in config.listener_endpoints() if e.listener_name == listener]
    local_host = own[0] if own and own[0] not in _ANY_HOST else None
    context = FetcherContext(
        node_id=node_id,
        broker_epoch=broker_epoch,
        endpoint=endpoint,
        local_host=local_host,
        followers=followers,
        security=settings.security,
        quota=settings.quota,
    )
    return ReplicaFetcherManager(settings.live_config, cluster, context)
