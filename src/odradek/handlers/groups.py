"""JoinGroup (11), SyncGroup (14), Heartbeat (12), LeaveGroup (13): the classic group protocol.

Version notes:
- JoinGroup v0 has no rebalance timeout (the session timeout stands in); v1 adds it; v2 throttle
  time; v4+ a member joining without an id first gets MEMBER_ID_REQUIRED and a member id to rejoin
  with (KIP-394); v5 group.instance.id (static membership, KIP-345); v6 flexible; v7 the protocol type
  in the response; v8 the join reason (logged); v9 skip_assignment, set for a static leader rejoining
  a stable group (it keeps its assignment and must not compute a new one).
- SyncGroup v3 group.instance.id; v4 flexible; v5 protocol type and name, checked against the
  group's (INCONSISTENT_GROUP_PROTOCOL) and sent back.
- Heartbeat v3 group.instance.id; v4 flexible. While `__consumer_offsets` is loading a heartbeat is
  answered NONE, as Kafka does.
- LeaveGroup v0-2 name one member (its error is the top-level error); v3+ a batch of members by
  member id and/or group.instance.id, each answered separately; v4 flexible; v5 a reason per member.
A JoinGroup or SyncGroup waits (its connection answers nothing else meanwhile, as in Kafka) until the
group's join or sync phase completes. Client host is reported Kafka's way, "/<address>".
With an authorizer each needs READ on the group, else GROUP_AUTHORIZATION_FAILED (as Kafka).
"""

from __future__ import annotations

from odradek.handlers._common.authorization import require_group
from odradek.handlers._common.context import RequestContext
from odradek.handlers._common.coordinators import client_host, group_coordinator
from odradek.handlers._common.registry import handles
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.protocol.messages.heartbeat import HeartbeatRequest, HeartbeatResponse
from odradek.protocol.messages.join_group import JoinGroupRequest, JoinGroupResponse
from odradek.protocol.messages.leave_group import LeaveGroupRequest, LeaveGroupResponse, MemberIdentity
from odradek.protocol.messages.sync_group import SyncGroupRequest, SyncGroupResponse


@handles(ApiKey.JOIN_GROUP, 0, 9)
async def handle_join_group(request: JoinGroupRequest, context: RequestContext) -> JoinGroupResponse:
    try:
        require_group(context, request.group_id)
        coordinator = group_coordinator(context)
    except KafkaError as error:
        return JoinGroupResponse(
            error_code=error.error_code,
            member_id=request.member_id,
            protocol_name=None if context.api_version >= 7 else "",
        )
    response = await coordinator.join_group(
        request, context.api_version, context.client_id or "", client_host(context)
    )
    if context.api_version < 7 and response.protocol_name is None:
        response.protocol_name = ""  # nullable only from v7
    return response


@handles(ApiKey.SYNC_GROUP, 0, 5)
async def handle_sync_group(request: SyncGroupRequest, context: RequestContext) -> SyncGroupResponse:
    try:
        require_group(context, request.group_id)
        coordinator = group_coordinator(context)
    except KafkaError as error:
        return SyncGroupResponse(error_code=error.error_code, assignment=b"")
    return await coordinator.sync_group(request)


@handles(ApiKey.HEARTBEAT, 0, 4)
async def handle_heartbeat(request: HeartbeatRequest, context: RequestContext) -> HeartbeatResponse:
    try:
        require_group(context, request.group_id)
        error = group_coordinator(context).heartbeat(request)
    except KafkaError as failure:
        error = failure.error_code
    return HeartbeatResponse(error_code=error)


@handles(ApiKey.LEAVE_GROUP, 0, 5)
async def handle_leave_group(request: LeaveGroupRequest, context: RequestContext) -> LeaveGroupResponse:
    if context.api_version < 3:
        members = [MemberIdentity(member_id=request.member_id, group_instance_id=None)]
    else:
        members = list(request.members)
    try:
        require_group(context, request.group_id)
        error, responses = group_coordinator(context).leave_group(request, members)
    except KafkaError as failure:
        return LeaveGroupResponse(error_code=failure.error_code)
    if context.api_version < 3 and error is ErrorCode.NONE and responses:
        error = ErrorCode(responses[0].error_code)
    return LeaveGroupResponse(error_code=error, members=responses)
