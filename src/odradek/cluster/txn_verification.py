"""A leader's AddPartitionsToTxn (v4, `verify_only`) to the producer's transaction coordinator on another
broker (partition/ports.py's RemoteTxnCoordinators; Kafka's AddPartitionsToTxnManager): one connection
per coordinator broker, on the inter-broker listener with its security, request.timeout.ms and
socket.receive.buffer.bytes, as Kafka's verification network client."""

from __future__ import annotations

from collections.abc import Sequence

from odradek.cluster.broker_client import BrokerConnections, BrokerUnreachable, inter_broker_endpoint
from odradek.cluster.inter_broker_connection import PLAINTEXT, InterBrokerSecurity
from odradek.cluster.metadata import ClusterMetadata
from odradek.config.broker import BrokerConfig
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.add_partitions_to_txn import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    AddPartitionsToTxnTopic,
    AddPartitionsToTxnTransaction,
)

VERSION = 4


class InterBrokerTxnVerifier:
    def __init__(
        self,
        config: BrokerConfig,
        cluster: ClusterMetadata,
        node_id: int,
        security: InterBrokerSecurity = PLAINTEXT,
    ) -> None:
        self.config = config
        self.cluster = cluster
        self.connections = BrokerConnections.of_broker(config, node_id, "txn-verification", security)

    async def verify(
        self,
        node: int | None,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Sequence[tuple[str, int]],
    ) -> dict[tuple[str, int], ErrorCode]:
        """Coordinator `node`'s answer for each partition (COORDINATOR_NOT_AVAILABLE for all when it is
        not known or cannot be reached)."""
        endpoint = None if node is None else inter_broker_endpoint(self.config, self.cluster, node)
        if node is None or endpoint is None:
            return dict.fromkeys(partitions, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        by_topic: dict[str, list[int]] = {}
        for topic, partition in partitions:
            by_topic.setdefault(topic, []).append(partition)
        ask = AddPartitionsToTxnRequest(
            transactions=[
                AddPartitionsToTxnTransaction(
                    transactional_id=transactional_id,
                    producer_id=producer_id,
                    producer_epoch=producer_epoch,
                    verify_only=True,
                    topics=[AddPartitionsToTxnTopic(name=t, partitions=p) for t, p in by_topic.items()],
                )
            ]
        )
        try:
            response: AddPartitionsToTxnResponse = await self.connections.to(node, endpoint).request(
                ask, VERSION
            )
        except BrokerUnreachable:
            return dict.fromkeys(partitions, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if response.error_code != ErrorCode.NONE:
            return dict.fromkeys(partitions, ErrorCode(response.error_code))
        verdicts = dict.fromkeys(partitions, ErrorCode.COORDINATOR_NOT_AVAILABLE)  # unless answered
        for result in response.results_by_transaction:
            for topic_result in result.topic_results:
                for answered in topic_result.results_by_partition:
                    key = (topic_result.name, answered.partition_index)
                    if key in verdicts:
                        verdicts[key] = ErrorCode(answered.partition_error_code)
        return verdicts

    def close(self) -> None:
        self.connections.close()
