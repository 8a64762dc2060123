"""A single node refused acks=all with NOT_ENOUGH_REPLICAS when min.insync.replicas was above 1. Kafka
3.9 checks the effective minimum, min(min.insync.replicas, replication factor) (Partition's
effectiveMinIsr): a partition of one replica, in sync with itself, takes acks=all, and so does a
single odradek node, as the cluster's leaders already did."""

from __future__ import annotations

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.produce import ProduceRequest
from tests.support.handler_services import HandlerBroker
from tests.unit.handlers.cluster_member import produce_request


async def test_acks_all_on_a_single_node_with_min_insync_replicas_two_is_written(
    handler_broker: HandlerBroker,
) -> None:
    await handler_broker.create_topic("orders", configs={"min.insync.replicas": "2"})
    request: ProduceRequest = produce_request(0)
    request.acks = -1
    request.topic_data[0].name = "orders"
    response = await handler_broker.call(request, 9)
    answer = response.responses[0].partition_responses[0]
    assert (answer.error_code, answer.base_offset) == (ErrorCode.NONE, 0)
    assert handler_broker.log("orders").log_end_offset == 1
