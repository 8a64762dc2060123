"""WriteTxnMarkers to other brokers for the transaction coordinator (coordinator/ports.py's
TxnMarkerSender) over the inter-broker client: one connection per destination broker, on the
inter-broker listener with its security, request.timeout.ms and socket.receive.buffer.bytes, as Kafka's
TransactionMarkerChannelManager's network client."""

from __future__ import annotations

from odradek.cluster.broker_client import BrokerConnections, BrokerUnreachable, inter_broker_endpoint
from odradek.cluster.inter_broker_connection import PLAINTEXT, InterBrokerSecurity
from odradek.cluster.metadata import ClusterMetadata
from odradek.config.broker import BrokerConfig
from odradek.coordinator.ports import BrokerUnavailable
from odradek.protocol.messages.write_txn_markers import WriteTxnMarkersRequest, WriteTxnMarkersResponse


class InterBrokerTxnMarkerSender:
    def __init__(
        self,
        config: BrokerConfig,
        cluster: ClusterMetadata,
        node_id: int,
        security: InterBrokerSecurity = PLAINTEXT,
    ) -> None:
        self.config = config
        self.cluster = cluster
        self.connections = BrokerConnections.of_broker(config, node_id, "txn-markers", security)

    def reachable(self, broker: int) -> bool:
        return inter_broker_endpoint(self.config, self.cluster, broker) is not None

    async def write_txn_markers(
        self, broker: int, request: WriteTxnMarkersRequest, version: int
    ) -> WriteTxnMarkersResponse:
        endpoint = inter_broker_endpoint(self.config, self.cluster, broker)
        if endpoint is None:
            raise BrokerUnavailable(f"broker {broker} is not alive on the inter-broker listener")
        try:
            response: WriteTxnMarkersResponse = await self.connections.to(broker, endpoint).request(
                request, version
            )
        except BrokerUnreachable as unreachable:
            raise BrokerUnavailable(str(unreachable)) from unreachable
        return response

    def close(self) -> None:
        self.connections.close()
