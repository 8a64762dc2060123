"""DescribeCluster (key 60): the cluster id, the controller and the brokers (KIP-700).

Version notes:
- v0 (flexible from the start): brokers as this listener advertises them, the controller, and the
  cluster's authorized operations when asked (no authorizer: every cluster operation).
- v1 adds the endpoint type (KIP-919): this is a broker endpoint, so asking for controllers is
  MISMATCHED_ENDPOINT_TYPE and any other type UNSUPPORTED_ENDPOINT_TYPE (v0: INVALID_REQUEST).
- v2 adds include_fenced_brokers and each broker's is_fenced (KIP-1073): a broker that answers is
  never fenced, so every broker listed is unfenced.
- The controller id is -1 when it is not among the brokers listed, as in Kafka.
- With an authorizer the cluster's authorized operations are the principal's (0 without DESCRIBE on
  the cluster), as Kafka answers; nothing else is checked.
"""

from __future__ import annotations

from odradek.handlers._common.authorization import authorize_cluster, authorized_operations
from odradek.handlers._common.authorized_operations import OMITTED
from odradek.handlers._common.context import RequestContext
from odradek.handlers._common.registry import handles
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.describe_cluster import (
    DescribeClusterBroker,
    DescribeClusterRequest,
    DescribeClusterResponse,
)
from odradek.security.acl import CLUSTER_NAME, AclOperation, ResourceType

BROKER_ENDPOINT = 1
CONTROLLER_ENDPOINT = 2


@handles(ApiKey.DESCRIBE_CLUSTER, 0, 2)
async def handle_describe_cluster(
    request: DescribeClusterRequest, context: RequestContext
) -> DescribeClusterResponse:
    services = context.services
    wanted = request.endpoint_type
    if wanted != BROKER_ENDPOINT:
        if wanted == CONTROLLER_ENDPOINT:
            code = ErrorCode.MISMATCHED_ENDPOINT_TYPE
            message = "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type "
            message += "CONTROLLER"
        else:
            code = ErrorCode.UNSUPPORTED_ENDPOINT_TYPE
            message = f"Unsupported endpoint type {wanted}"
        return DescribeClusterResponse(
            error_code=ErrorCode.INVALID_REQUEST if context.api_version == 0 else code,
            error_message=message,
            cluster_id="",
            brokers=[],
        )
    await services.await_first_metadata()
    brokers = [
        DescribeClusterBroker(broker_id=b.node_id, host=b.host, port=b.port, rack=b.rack, is_fenced=False)
        for b in services.advertised_brokers(context.listener)
    ]
    controller_id = services.cluster.controller_id
    return DescribeClusterResponse(
        error_code=ErrorCode.NONE,
        error_message=None,
        endpoint_type=BROKER_ENDPOINT,
        cluster_id=services.cluster.cluster_id,
        controller_id=controller_id if any(b.broker_id == controller_id for b in brokers) else -1,
        brokers=brokers,
        cluster_authorized_operations=_cluster_operations(request, context),
    )


def _cluster_operations(request: DescribeClusterRequest, context: RequestContext) -> int:
    if not request.include_cluster_authorized_operations:
        return OMITTED
    if not authorize_cluster(context, AclOperation.DESCRIBE):
        return 0
    return authorized_operations(context, ResourceType.CLUSTER, CLUSTER_NAME)
