"""AlterPartitionReassignments (key 45, v0-1) and ListPartitionReassignments (key 46, v0).

Served by the controller as in Kafka 3.9's ZooKeeper mode: clients send them to the broker Metadata
names as controller, any other broker answers NOT_CONTROLLER (a top-level error) and the client looks
again. A single node answers them as the controller of a cluster of one (Kafka 3.9's lone broker does):
a partition can only be "reassigned" to the broker it is on, which is done at once. v0 and v1 are
flexible; v1 adds allow_replication_factor_change (KIP-860: when false, a target with another number of
replicas is INVALID_REPLICA_ASSIGNMENT). A null replica list cancels the partition's reassignment. The
answer comes once a reassignment has started; it completes when the new replicas are in sync
(ListPartitionReassignments shows it until then). Alter needs ALTER on the cluster, List DESCRIBE, as in
Kafka.
"""

from __future__ import annotations

from odradek.cluster.controller.context import TopicPartition
from odradek.cluster.controller.controller import NotControllerError
from odradek.handlers._common.authorization import authorize_cluster
from odradek.handlers._common.context import RequestContext
from odradek.handlers._common.registry import handles
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.alter_partition_reassignments import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    ReassignablePartitionResponse,
    ReassignableTopicResponse,
)
from odradek.protocol.messages.list_partition_reassignments import (
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
    OngoingPartitionReassignment,
    OngoingTopicReassignment,
)
from odradek.security.acl import AclOperation


@handles(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, 1)
async def handle_alter_partition_reassignments(
    request: AlterPartitionReassignmentsRequest, context: RequestContext
) -> AlterPartitionReassignmentsResponse:
    if not authorize_cluster(context, AclOperation.ALTER):
        return _alter_refused(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    asked = {
        TopicPartition(topic.name, p.partition_index): p.replicas
        for topic in request.topics
        for p in topic.partitions
    }
    controller = context.services.controller  # a single node's: the controller of a cluster of one
    try:
        if not controller.is_active:
            raise NotControllerError()
        results = await controller.alter_partition_reassignments(
            asked, request.allow_replication_factor_change, timeout=_timeout(request.timeout_ms)
        )
    except NotControllerError:
        return _alter_refused(request, ErrorCode.NOT_CONTROLLER)
    except TimeoutError:
        return _alter_refused(request, ErrorCode.REQUEST_TIMED_OUT)
    by_topic: dict[str, list[ReassignablePartitionResponse]] = {}
    for tp, result in sorted(results.items()):
        by_topic.setdefault(tp.topic, []).append(
            ReassignablePartitionResponse(
                partition_index=tp.partition, error_code=result.code, error_message=result.message
            )
        )
    return AlterPartitionReassignmentsResponse(
        throttle_time_ms=0,
        allow_replication_factor_change=request.allow_replication_factor_change,
        error_code=ErrorCode.NONE,
        error_message=None,
        responses=[ReassignableTopicResponse(name=t, partitions=ps) for t, ps in by_topic.items()],
    )


@handles(ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, 0)
async def handle_list_partition_reassignments(
    request: ListPartitionReassignmentsRequest, context: RequestContext
) -> ListPartitionReassignmentsResponse:
    if not authorize_cluster(context, AclOperation.DESCRIBE):
        return _list_refused(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    asked = (
        None
        if request.topics is None
        else [TopicPartition(t.name, p) for t in request.topics for p in t.partition_indexes]
    )
    controller = context.services.controller
    try:
        if not controller.is_active:
            raise NotControllerError()
        ongoing = await controller.list_partition_reassignments(asked, timeout=_timeout(request.timeout_ms))
    except NotControllerError:
        return _list_refused(ErrorCode.NOT_CONTROLLER)
    except TimeoutError:
        return _list_refused(ErrorCode.REQUEST_TIMED_OUT)
    by_topic: dict[str, list[OngoingPartitionReassignment]] = {}
    for tp, moving in sorted(ongoing.items()):
        by_topic.setdefault(tp.topic, []).append(
            OngoingPartitionReassignment(
                partition_index=tp.partition,
                replicas=list(moving.replicas),
                adding_replicas=list(moving.adding),
                removing_replicas=list(moving.removing),
            )
        )
    return ListPartitionReassignmentsResponse(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        error_message=None,
        topics=[OngoingTopicReassignment(name=t, partitions=ps) for t, ps in by_topic.items()],
    )


def _timeout(timeout_ms: int) -> float:
    # the request's own bound on how long the controller may take (60 s when it sends none)
    return timeout_ms / 1000 if timeout_ms > 0 else 60.0


def _alter_refused(
    request: AlterPartitionReassignmentsRequest, error: ErrorCode
) -> AlterPartitionReassignmentsResponse:
    # a top-level error, no partitions: as Kafka's KafkaApis answers a refused request
    return AlterPartitionReassignmentsResponse(
        throttle_time_ms=0,
        allow_replication_factor_change=request.allow_replication_factor_change,
        error_code=error,
        error_message=error.message,
        responses=[],
    )


def _list_refused(error: ErrorCode) -> ListPartitionReassignmentsResponse:
    return ListPartitionReassignmentsResponse(
        throttle_time_ms=0, error_code=error, error_message=error.message, topics=[]
    )
