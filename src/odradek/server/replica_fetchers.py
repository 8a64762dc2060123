"""Wiring of the replica fetchers: where a follower finds its leaders, and what it tells about itself.

As server/controlled_shutdown.py: a leader is reached on its endpoint for the inter-broker listener
(`inter.broker.listener.name`, else `security.inter.broker.protocol`) as the metadata cache knows it,
and connections leave from this broker's own address on that listener.
"""

from __future__ import annotations

from collections.abc import Callable

from odradek.cluster.inter_broker_connection import PLAINTEXT, InterBrokerSecurity
from odradek.cluster.replica_manager import ReplicaManager
from odradek.cluster.replication.fetch_state import FetcherContext
from odradek.cluster.replication.fetcher_manager import ReplicaFetcherManager
from odradek.config.broker import BrokerConfig
from odradek.handlers._common.services import Services
from odradek.storage.log_manager import LogManager

#: Hosts that name no single address: outgoing connections then leave from wherever the OS picks.
_ANY_HOST = ("", "0.0.0.0", "::")


def replica_fetchers(
    config: BrokerConfig,
    live_config: Callable[[], BrokerConfig],
    services: Services,
    logs: LogManager,
    replicas: ReplicaManager,
    security: InterBrokerSecurity = PLAINTEXT,
) -> ReplicaFetcherManager:
    listener = config.inter_broker_listener_name or config.security_inter_broker_protocol
    cluster = services.cluster

    def endpoint(broker_id: int) -> tuple[str, int] | None:
        broker = cluster.live_brokers.get(broker_id)
        found = broker.endpoints.get(listener) if broker is not None else None
        return (found.host, found.port) if found is not None else None

    own = [e.host for e in config.listener_endpoints() if e.listener_name == listener]
    local_host = own[0] if own and own[0] not in _ANY_HOST else None
    context = FetcherContext(
        node_id=replicas.node_id,
        broker_epoch=lambda: replicas.broker_epoch,
        endpoint=endpoint,
        local_host=local_host,
        on_appended=services.appends.notify,
        schedule_deletion=logs.deletions.schedule_deletion,
        truncation_checkpoints=replicas.truncation_checkpoints,
        security=security,
        quota=services.replication_quotas.follower,
    )
    return ReplicaFetcherManager(live_config, cluster, context)
