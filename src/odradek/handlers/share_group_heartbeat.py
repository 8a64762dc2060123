"""ShareGroupHeartbeat (76) and ShareGroupDescribe (77): KIP-932 share groups' membership.

Version notes:
- v1 of both only: v0 was Kafka 4.0's early access and Kafka 4.1 removed it. The client names its
  own member id (an empty one is INVALID_REQUEST). Member epoch 0 joins (with the topics it subscribes
  to), -1 leaves; there is no static membership.
- Served when "share" is in `group.coordinator.rebalance.protocols`, else UNSUPPORTED_VERSION, as from
  Kafka 4.0 with share groups off; and only with the share coordinator (the `SharePersister` the group
  coordinator was given), which keeps each share partition's state.
- Assignments come from the "simple" assignor: every member gets every partition of its topics whose
  share-group state is initialised (coordinator/share_members.py); a partition newly subscribed to is
  assigned from the heartbeat after its state is initialised.
- Groups use the broker-wide `group.share.session.timeout.ms`, `.heartbeat.interval.ms` and
  `.max.size`; per-group overrides (GROUP config resources) are not supported.
- With an authorizer (as Kafka 4): a heartbeat needs READ on the group, a describe DESCRIBE on each
  group; else GROUP_AUTHORIZATION_FAILED. A heartbeat subscribing to a topic the principal may not
  DESCRIBE gets TOPIC_AUTHORIZATION_FAILED; a described group whose members are assigned a topic the
  caller may not DESCRIBE is answered TOPIC_AUTHORIZATION_FAILED, without its members.
"""

from __future__ import annotations

from odradek.coordinator.group_coordinator import GroupCoordinator
from odradek.handlers._common.authorization import authorize, require_group
from odradek.handlers._common.context import RequestContext
from odradek.handlers._common.group_describe import describe_groups
from odradek.handlers._common.registry import handles
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.protocol.messages.share_group_describe import (
    DescribedGroup,
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
)
from odradek.protocol.messages.share_group_heartbeat import (
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
)
from odradek.security.acl import AclOperation, ResourceType

_DISABLED = "Share groups are disabled (group.coordinator.rebalance.protocols has no 'share')."


@handles(ApiKey.SHARE_GROUP_HEARTBEAT, 1, 1)
async def handle_share_group_heartbeat(
    request: ShareGroupHeartbeatRequest, context: RequestContext
) -> ShareGroupHeartbeatResponse:
    try:
        coordinator = _coordinator(context)
        if not coordinator.share.enabled:
            return ShareGroupHeartbeatResponse(
                error_code=ErrorCode.UNSUPPORTED_VERSION, error_message=_DISABLED
            )
        require_group(context, request.group_id)
    except KafkaError as error:
        return ShareGroupHeartbeatResponse(error_code=error.error_code)
    if any(not _may_describe(context, name) for name in set(request.subscribed_topic_names or ())):
        return ShareGroupHeartbeatResponse(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    return await coordinator.share.heartbeat(request, context.client_id or "", f"/{context.client_host}")


@handles(ApiKey.SHARE_GROUP_DESCRIBE, 1, 1)
async def handle_share_group_describe(
    request: ShareGroupDescribeRequest, context: RequestContext
) -> ShareGroupDescribeResponse:
    try:
        coordinator = _coordinator(context)
        if not coordinator.share.enabled:
            raise KafkaError(ErrorCode.UNSUPPORTED_VERSION)
    except KafkaError as error:
        return ShareGroupDescribeResponse(
            groups=[DescribedGroup(error_code=error.error_code, group_id=g) for g in request.group_ids]
        )
    groups = describe_groups(
        context,
        request.group_ids,
        request.include_authorized_operations,
        coordinator.share.describe,
        lambda group: (t.topic_name for m in group.members for t in m.assignment.topic_partitions),
        DescribedGroup,
    )
    return ShareGroupDescribeResponse(groups=groups)


def _coordinator(context: RequestContext) -> GroupCoordinator:
    coordinator = context.services.groups
    if coordinator is None:
        raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    return coordinator


def _may_describe(context: RequestContext, topic: str) -> bool:
    return authorize(context, AclOperation.DESCRIBE, ResourceType.TOPIC, topic)
