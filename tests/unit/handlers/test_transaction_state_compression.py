"""`__transaction_state` is created with compression.type=uncompressed, as Kafka's
TransactionStateManager creates it (`producer` kept whatever a batch came in; the coordinator writes
uncompressed batches, and the topic's setting now says so whatever writes it). `__consumer_offsets`
keeps `producer`, as Kafka's GroupCoordinator creates it (offsets.topic.compression.codec compresses
the coordinator's own batches)."""

from __future__ import annotations

import pytest

from odradek.coordinator.txn_coordinator import TransactionCoordinator
from odradek.coordinator.txn_state_log import TRANSACTION_STATE_TOPIC
from tests.support.handler_services import HandlerBroker

pytestmark = pytest.mark.timeout(30)


async def test_the_transaction_state_topic_is_created_uncompressed_as_kafka_creates_it(
    handler_broker: HandlerBroker,
) -> None:
    services = handler_broker.services
    coordinator = TransactionCoordinator(
        services.config,
        services.cluster,
        services.topics,
        services.logs,
        services.node_id,
        services.producer_ids,
        None,
    )
    await coordinator.start(single_node=True)
    try:
        assert handler_broker.log(TRANSACTION_STATE_TOPIC, 0).config.compression_type == "uncompressed"
    finally:
        coordinator.stop()
