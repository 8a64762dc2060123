"""Requests the controller serves: ControlledShutdown (key 7, v0-3) and ElectLeaders (key 43, v0-2).

ZooKeeper mode only. Each broker runs a controller elector; only the active controller answers, every
other broker says NOT_CONTROLLER (clients and shutting-down brokers then look for the controller in
Metadata). ControlledShutdown v0-1 carry no broker epoch (-1 is never stale), v2+ do; the controller
checks it. With an authorizer, ControlledShutdown needs CLUSTER_ACTION and ElectLeaders ALTER on the
cluster, as in Kafka. ElectLeaders v0 has no election type (preferred); a null topic list means every
partition.
"""

from __future__ import annotations

from odradek.cluster.controller.context import TopicPartition
from odradek.cluster.controller.controller import KafkaController, NotControllerError
from odradek.cluster.metadata import BrokerMode
from odradek.handlers.authorization import authorize_cluster
from odradek.handlers.context import RequestContext
from odradek.handlers.registry import handles
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.controlled_shutdown import (
    ControlledShutdownRequest,
    ControlledShutdownResponse,
    RemainingPartition,
)
from odradek.protocol.messages.elect_leaders import (
    ElectLeadersRequest,
    ElectLeadersResponse,
    PartitionResult,
    ReplicaElectionResult,
)
from odradek.security.acl import AclOperation

CLUSTER_ONLY = frozenset({BrokerMode.ZOOKEEPER})


def _active(context: RequestContext) -> KafkaController | None:
    controller = context.services.controller
    return controller if controller is not None and controller.is_active else None


@handles(ApiKey.CONTROLLED_SHUTDOWN, 0, 3, modes=CLUSTER_ONLY)
async def handle_controlled_shutdown(
    request: ControlledShutdownRequest, context: RequestContext
) -> ControlledShutdownResponse:
    if not authorize_cluster(context, AclOperation.CLUSTER_ACTION):
        return ControlledShutdownResponse(
            error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, remaining_partitions=[]
        )
    controller = _active(context)
    if controller is None:
        return ControlledShutdownResponse(error_code=ErrorCode.NOT_CONTROLLER, remaining_partitions=[])
    result = await controller.controlled_shutdown(request.broker_id, request.broker_epoch)
    return ControlledShutdownResponse(
        error_code=result.error,
        remaining_partitions=[
            RemainingPartition(topic_name=p.topic, partition_index=p.partition) for p in result.remaining
        ],
    )


@handles(ApiKey.ELECT_LEADERS, 0, 2, modes=CLUSTER_ONLY)
async def handle_elect_leaders(request: ElectLeadersRequest, context: RequestContext) -> ElectLeadersResponse:
    asked = (
        None
        if request.topic_partitions is None
        else [TopicPartition(t.topic, p) for t in request.topic_partitions for p in t.partitions]
    )
    if not authorize_cluster(context, AclOperation.ALTER):
        refused = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return _elect_response(refused, {p: refused for p in asked or []})
    controller = _active(context)
    try:
        if controller is None:
            raise NotControllerError()
        outcome = await controller.elect_leaders(
            request.election_type, asked, timeout=max(request.timeout_ms, 0) / 1000 or 60.0
        )
    except NotControllerError:
        outcome = {p: ErrorCode.NOT_CONTROLLER for p in asked or []}
        return _elect_response(ErrorCode.NOT_CONTROLLER, outcome)
    return _elect_response(ErrorCode.NONE, outcome)


def _elect_response(error: ErrorCode, outcome: dict[TopicPartition, ErrorCode]) -> ElectLeadersResponse:
    by_topic: dict[str, list[PartitionResult]] = {}
    for partition, code in sorted(outcome.items()):
        by_topic.setdefault(partition.topic, []).append(
            PartitionResult(partition_id=partition.partition, error_code=code, error_message=None)
        )
    return ElectLeadersResponse(
        throttle_time_ms=0,
        error_code=error,
        replica_election_results=[
            ReplicaElectionResult(topic=topic, partition_result=results)
            for topic, results in by_topic.items()
        ],
    )
