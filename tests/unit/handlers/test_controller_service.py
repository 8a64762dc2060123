"""The controller's client-facing APIs ask the controller the broker was built with (`services.controller`),
never which mode the broker runs in: a single node's is the controller of a cluster of one, always
active (Kafka 3.9's lone broker is its own controller); a cluster member's is its controller elector.
Put a controller that is not active in a single node's place and ElectLeaders, AlterPartitionReassignments,
ListPartitionReassignments and UpdateFeatures answer NOT_CONTROLLER, as a cluster member that is not the
controller does: the answer is the service's, not a mode check's."""

from __future__ import annotations

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.alter_partition_reassignments import (
    AlterPartitionReassignmentsRequest,
    ReassignablePartition,
    ReassignableTopic,
)
from odradek.protocol.messages.elect_leaders import ElectLeadersRequest, TopicPartitions
from odradek.protocol.messages.list_partition_reassignments import ListPartitionReassignmentsRequest
from odradek.protocol.messages.update_features import FeatureUpdateKey, UpdateFeaturesRequest
from tests.support.handler_services import NODE_ID, HandlerBroker


class _NotController:
    """A controller elector that lost the election: it is asked nothing but whether it is active."""

    is_active = False


async def _answers(broker: HandlerBroker) -> list[int]:
    await broker.create_topic("orders")
    elected = await broker.call(
        ElectLeadersRequest(
            election_type=0,
            topic_partitions=[TopicPartitions(topic="orders", partitions=[0])],
            timeout_ms=1000,
        ),
        2,
    )
    reassign = ReassignableTopic(
        name="orders", partitions=[ReassignablePartition(partition_index=0, replicas=[NODE_ID])]
    )
    altered = await broker.call(AlterPartitionReassignmentsRequest(topics=[reassign]), 0)
    listed = await broker.call(ListPartitionReassignmentsRequest(topics=None), 0)
    features = await broker.call(
        UpdateFeaturesRequest(
            feature_updates=[FeatureUpdateKey(feature="metadata.version", max_version_level=1)]
        ),
        1,
    )
    return [elected.error_code, altered.error_code, listed.error_code, features.error_code]


async def test_a_single_node_answers_as_the_controller_of_a_cluster_of_one(
    handler_broker: HandlerBroker,
) -> None:
    assert handler_broker.services.controller.is_active
    assert await _answers(handler_broker) == [ErrorCode.NONE] * 4


async def test_the_controller_apis_ask_the_controller_service_not_the_mode(
    handler_broker: HandlerBroker,
) -> None:
    handler_broker.services.controller = _NotController()  # type: ignore[assignment]
    assert await _answers(handler_broker) == [ErrorCode.NOT_CONTROLLER] * 4
