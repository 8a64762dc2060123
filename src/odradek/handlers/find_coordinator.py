"""FindCoordinator (key 10): which broker coordinates a group (or a transactional id).

Version notes:
- v0 asks for a group by key; v1 adds the key type (0 group, 1 transaction) and an error message
  (Kafka sends the error's name, "NONE" on success); v3 flexible.
- v4+ batch keys (`coordinator_keys`) and answer one entry per key; v5 adds TRANSACTION_ABORTABLE
  (not produced here); v6 adds key type 2 (share groups), the share coordinator of a share partition's
  state (a broker's request): the key is `group:topicId:partition` (topic id in Kafka's base64), else
  INVALID_REQUEST; an unknown topic id is not checked here (the state RPCs answer it
  UNKNOWN_TOPIC_OR_PARTITION), as Kafka's. With an authorizer it needs CLUSTER_ACTION
  (CLUSTER_AUTHORIZATION_FAILED). Its coordinator leads the key's `__share_group_state` partition
  (the Java hash of the key modulo `share.coordinator.state.topic.num.partitions`), the topic created
  on first use.
- A group's coordinator is the leader of its `__consumer_offsets` partition (Java's hash of the group
  id modulo `offsets.topic.num.partitions`); if the topic does not exist yet its creation starts here,
  in the background (a single node creates it at start-up). While it is missing or being created, or
  has no leader, the answer is COORDINATOR_NOT_AVAILABLE (node -1), which clients retry.
- A transactional id's coordinator is the leader of its `__transaction_state` partition (the same
  hash modulo `transaction.state.log.num.partitions`); COORDINATOR_NOT_AVAILABLE until it exists.
"""

from __future__ import annotations

from odradek.cluster.metadata import BrokerEndpoint
from odradek.handlers._common.authorization import authorize, authorize_cluster, require_group
from odradek.handlers._common.context import RequestContext
from odradek.handlers._common.coordinators import group_coordinator, transaction_coordinator
from odradek.handlers._common.registry import handles
from odradek.partition.share.persister import SharePartitionKey
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.protocol.messages.find_coordinator import (
    Coordinator,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from odradek.security.acl import AclOperation, ResourceType

GROUP_KEY = 0
TRANSACTION_KEY = 1
SHARE_KEY = 2


@handles(ApiKey.FIND_COORDINATOR, 0, 6)
async def handle_find_coordinator(
    request: FindCoordinatorRequest, context: RequestContext
) -> FindCoordinatorResponse:
    if context.api_version >= 4:
        answers = [_find(key, request.key_type, context) for key in request.coordinator_keys]
        return FindCoordinatorResponse(coordinators=answers)
    answer = _find(request.key, request.key_type, context)
    return FindCoordinatorResponse(
        error_code=answer.error_code,
        error_message=answer.error_message,
        node_id=answer.node_id,
        host=answer.host,
        port=answer.port,
    )


def _find(key: str, key_type: int, context: RequestContext) -> Coordinator:
    try:
        endpoint = _coordinator(key, key_type, context)
    except KafkaError as error:
        return Coordinator(
            key=key,
            node_id=-1,
            host="",
            port=-1,
            error_code=error.error_code,
            error_message=error.error_message or error.error_code.message,
        )
    return Coordinator(
        key=key,
        node_id=endpoint.node_id,
        host=endpoint.host,
        port=endpoint.port,
        error_code=ErrorCode.NONE,
        error_message="NONE",
    )


def _coordinator(key: str, key_type: int, context: RequestContext) -> BrokerEndpoint:
    services = context.services
    if key_type == TRANSACTION_KEY:
        if not authorize(context, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, key):
            raise KafkaError(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        node_id = transaction_coordinator(context).coordinator_node(key)
    elif key_type == GROUP_KEY:
        require_group(context, key, AclOperation.DESCRIBE)
        node_id = group_coordinator(context).coordinator_node(key)
    elif key_type == SHARE_KEY and context.api_version >= 6:
        node_id = _share_coordinator_node(key, context)
    else:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unknown coordinator type: {key_type}")
    for endpoint in services.advertised_brokers(context.listener):
        if endpoint.node_id == node_id:
            return endpoint
    raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE)


def _share_coordinator_node(key: str, context: RequestContext) -> int | None:
    if not authorize_cluster(context, AclOperation.CLUSTER_ACTION):
        raise KafkaError(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    try:
        SharePartitionKey.from_coordinator_key(key)
    except ValueError as error:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Invalid share partition key: {error}") from None
    coordinator = context.services.share_coordinator
    if coordinator is None:
        raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    return coordinator.coordinator_node(key)
