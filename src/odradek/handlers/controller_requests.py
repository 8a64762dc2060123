"""Requests the controller serves: ControlledShutdown (key 7, v0-3), ElectLeaders (key 43, v0-2),
AlterPartition (key 56, v0-3) and AllocateProducerIds (key 67, v0).

ZooKeeper mode only, except ElectLeaders, which a single node answers as the controller of a cluster of
one (Kafka 3.9's lone broker does): no election is ever needed there. Each broker of a cluster runs a
controller elector; only the active controller answers, every other broker says NOT_CONTROLLER (clients
and shutting-down brokers then look for the controller in Metadata). ControlledShutdown v0-1 carry no
broker epoch (-1 is never stale), v2+ do; the controller checks it. With an authorizer,
ControlledShutdown needs CLUSTER_ACTION and ElectLeaders ALTER on the cluster, as in Kafka. ElectLeaders
v0 has no election type (preferred); a null topic list means every partition, and then the answer leaves
out those that needed no election (KafkaApis does). AlterPartition, from partition leaders, needs
CLUSTER_ACTION too; v0-1 name topics, v2+ give their ids (UNKNOWN_TOPIC_ID for one the controller does
not know), v3 gives each new ISR member's broker epoch; the checks are in
cluster/controller/alter_partition.py. AllocateProducerIds, from Kafka's brokers (3.0-IV0 and later) in
a cluster that mixes them with odradek's, needs CLUSTER_ACTION; its checks are in
cluster/controller/producer_ids.py.
"""

from __future__ import annotations

from odradek.cluster.controller.context import TopicPartition
from odradek.cluster.controller.controller import NotControllerError
from odradek.cluster.controller.isr_changes import (
    UNKNOWN_BROKER_EPOCH,
    AlterPartitionResult,
    IsrChangeOutcome,
    IsrChangeRequest,
)
from odradek.cluster.controller.service import Controller
from odradek.cluster.metadata import BrokerMode
from odradek.handlers._common.authorization import authorize_cluster
from odradek.handlers._common.context import RequestContext
from odradek.handlers._common.registry import handles
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.allocate_producer_ids import (
    AllocateProducerIdsRequest,
    AllocateProducerIdsResponse,
)
from odradek.protocol.messages.alter_partition import (
    AlterPartitionRequest,
    AlterPartitionResponse,
    PartitionData,
    PartitionDataResult,
    TopicData,
    TopicDataResult,
)
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


def _active(context: RequestContext) -> Controller | None:
    controller = context.services.controller
    return controller if controller.is_active else None


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


@handles(ApiKey.ELECT_LEADERS, 0, 2)
async def handle_elect_leaders(request: ElectLeadersRequest, context: RequestContext) -> ElectLeadersResponse:
    asked = (
        None
        if request.topic_partitions is None
        else [TopicPartition(t.topic, p) for t in request.topic_partitions for p in t.partitions]
    )
    if not authorize_cluster(context, AclOperation.ALTER):
        refused = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return _elect_response(refused, {p: refused for p in asked or []})
    controller = _active(context)  # a single node's: the controller of a cluster of one
    try:
        if controller is None:
            raise NotControllerError()
        outcome = await controller.elect_leaders(
            request.election_type, asked, timeout=max(request.timeout_ms, 0) / 1000 or 60.0
        )
    except NotControllerError:
        outcome = {p: ErrorCode.NOT_CONTROLLER for p in asked or []}
        return _elect_response(ErrorCode.NOT_CONTROLLER, outcome)
    return _elect_response(ErrorCode.NONE, outcome, every_partition=asked is None)


#: The messages Kafka's controller gives these answers (the others carry none).
_ELECTION_MESSAGES = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: "The partition does not exist.",
    ErrorCode.INVALID_TOPIC_EXCEPTION: "The topic is being deleted",
    ErrorCode.ELECTION_NOT_NEEDED: "Leader election not needed for topic partition.",
}
#: A failed election's reason names the strategy of Kafka's partition state machine that failed.
_FAILED_STRATEGIES = {
    ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE: "PreferredReplicaPartitionLeaderElectionStrategy",
    ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE: "OfflinePartitionLeaderElectionStrategy(true)",
}


def _election_message(partition: TopicPartition, code: ErrorCode) -> str | None:
    strategy = _FAILED_STRATEGIES.get(code)
    if strategy is not None:
        where = f"{partition.topic}-{partition.partition}"
        return f"Failed to elect leader for partition {where} under strategy {strategy}"
    return _ELECTION_MESSAGES.get(code)


def _elect_response(
    error: ErrorCode, outcome: dict[TopicPartition, ErrorCode], every_partition: bool = False
) -> ElectLeadersResponse:
    by_topic: dict[str, list[PartitionResult]] = {}
    for partition, code in sorted(outcome.items()):
        if every_partition and code == ErrorCode.ELECTION_NOT_NEEDED:
            continue  # asked for every partition, Kafka names only those elected or failed
        by_topic.setdefault(partition.topic, []).append(
            PartitionResult(
                partition_id=partition.partition,
                error_code=code,
                error_message=_election_message(partition, code),
            )
        )
    return ElectLeadersResponse(
        throttle_time_ms=0,
        error_code=error,
        replica_election_results=[
            ReplicaElectionResult(topic=topic, partition_result=results)
            for topic, results in by_topic.items()
        ],
    )


@handles(ApiKey.ALTER_PARTITION, 0, 3, modes=CLUSTER_ONLY)
async def handle_alter_partition(
    request: AlterPartitionRequest, context: RequestContext
) -> AlterPartitionResponse:
    version = context.api_version
    if not authorize_cluster(context, AclOperation.CLUSTER_ACTION):
        return _alter_partition_response(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    controller = _active(context)
    if controller is None:
        return _alter_partition_response(ErrorCode.NOT_CONTROLLER)
    changes = [
        _isr_change(topic, partition, version) for topic in request.topics for partition in topic.partitions
    ]
    result = await controller.alter_partition(request.broker_id, request.broker_epoch, changes)
    if result.error != ErrorCode.NONE:
        return _alter_partition_response(result.error)
    return _alter_partition_response(ErrorCode.NONE, request.topics, result, version)


def _isr_change(topic: TopicData, partition: PartitionData, version: int) -> IsrChangeRequest:
    if version >= 3:
        isr = tuple(member.broker_id for member in partition.new_isr_with_epochs)
        epochs = tuple(member.broker_epoch for member in partition.new_isr_with_epochs)
    else:
        isr = tuple(partition.new_isr)
        epochs = (UNKNOWN_BROKER_EPOCH,) * len(isr)
    return IsrChangeRequest(
        topic=topic.topic_name if version < 2 else None,
        topic_id=topic.topic_id if version >= 2 else None,
        partition=partition.partition_index,
        leader_epoch=partition.leader_epoch,
        new_isr=isr,
        member_epochs=epochs,
        leader_recovery_state=partition.leader_recovery_state,
        partition_epoch=partition.partition_epoch,
    )


def _alter_partition_response(
    error: ErrorCode,
    asked: list[TopicData] | None = None,
    result: AlterPartitionResult | None = None,
    version: int = 0,
) -> AlterPartitionResponse:
    topics: list[TopicDataResult] = []
    outcomes = iter(result.outcomes if result is not None else [])
    for topic in asked or []:
        answered = [_partition_result(p.partition_index, next(outcomes), version) for p in topic.partitions]
        topics.append(
            TopicDataResult(
                topic_name=topic.topic_name if version < 2 else "",
                topic_id=topic.topic_id,
                partitions=answered,
            )
        )
    return AlterPartitionResponse(throttle_time_ms=0, error_code=error, topics=topics)


def _partition_result(partition: int, outcome: IsrChangeOutcome, version: int) -> PartitionDataResult:
    state = outcome.state
    if outcome.error != ErrorCode.NONE or state is None:
        error = outcome.error
        if error == ErrorCode.INELIGIBLE_REPLICA and version < 2:
            error = ErrorCode.OPERATION_NOT_ATTEMPTED  # as Kafka: INELIGIBLE_REPLICA came with v2 (KIP-841)
        return PartitionDataResult(
            partition_index=partition, error_code=error, leader_id=-1, leader_epoch=-1, isr=[]
        )
    return PartitionDataResult(
        partition_index=partition,
        error_code=ErrorCode.NONE,
        leader_id=state.leader,
        leader_epoch=state.znode.leader_epoch,
        isr=list(state.isr),
        leader_recovery_state=state.znode.leader_recovery_state,
        partition_epoch=state.partition_epoch,
    )


@handles(ApiKey.ALLOCATE_PRODUCER_IDS, 0, 0, modes=CLUSTER_ONLY)
async def handle_allocate_producer_ids(
    request: AllocateProducerIdsRequest, context: RequestContext
) -> AllocateProducerIdsResponse:
    if not authorize_cluster(context, AclOperation.CLUSTER_ACTION):
        return _allocate_response(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    controller = _active(context)
    if controller is None:
        return _allocate_response(ErrorCode.NOT_CONTROLLER)
    result = await controller.allocate_producer_ids(request.broker_id, request.broker_epoch)
    if result.block is None:
        return _allocate_response(result.error)
    return AllocateProducerIdsResponse(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        producer_id_start=result.block.first_producer_id,
        producer_id_len=result.block.size,
    )


def _allocate_response(error: ErrorCode) -> AllocateProducerIdsResponse:
    return AllocateProducerIdsResponse(
        throttle_time_ms=0, error_code=error, producer_id_start=0, producer_id_len=0
    )
