"""A single node's transaction coordinator on a HandlerBroker's services, not yet started."""

from __future__ import annotations

from odradek.cluster.internal_topics import SingleNodeInternalTopics
from odradek.coordinator.txn_coordinator import TransactionCoordinator
from odradek.partition.leadership import Leadership
from odradek.server.txn_marker_sender import InterBrokerTxnMarkerSender
from tests.support.handler_services import HandlerBroker


def single_node_transactions(
    broker: HandlerBroker, leadership: Leadership | None = None
) -> TransactionCoordinator:
    """`leadership`: the replica manager it appends through (the broker's by default)."""
    services = broker.services
    return TransactionCoordinator(
        services.config,
        services.cluster,
        SingleNodeInternalTopics(services.topics, services.cluster),
        services.logs,
        services.node_id,
        services.producer_ids,
        None,
        leadership=leadership if leadership is not None else services.leadership,
        marker_sender=InterBrokerTxnMarkerSender(services.config, services.cluster, services.node_id),
    )
