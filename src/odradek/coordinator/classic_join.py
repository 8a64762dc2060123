"""JoinGroup for classic groups: new members (dynamic and static), rejoining members, group creation.

The caller's future is completed with the JoinGroup response, at once (errors, MEMBER_ID_REQUIRED, a
follower rejoining a stable group unchanged) or when the join phase completes. What is returned are
the records to append (a new group's empty GroupMetadata, a static member's new id).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from odradek.coordinator.classic_group import (
    ClassicGroup,
    ClassicGroupState,
    ClassicMember,
    generate_member_id,
)
from odradek.coordinator.classic_rebalance import ClassicRebalancer, Result, heartbeat_key, join_key, sync_key
from odradek.coordinator.result import CoordinatorResult
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.protocol.messages.join_group import JoinGroupRequest, JoinGroupResponse

log = logging.getLogger("odradek.coordinator.classic")

S = ClassicGroupState
UNKNOWN_MEMBER_ID = ""


@dataclass(frozen=True, slots=True)
class JoinContext:
    api_version: int
    client_id: str
    client_host: str

    @property
    def requires_known_member_id(self) -> bool:
        return self.api_version >= 4

    @property
    def supports_skip_assignment(self) -> bool:
        return self.api_version >= 9


def join_group(
    rb: ClassicRebalancer,
    request: JoinGroupRequest,
    context: JoinContext,
    future: asyncio.Future[JoinGroupResponse],
) -> Result:
    """Handle one JoinGroup (group id and session timeout already validated by the caller)."""
    member_id = request.member_id
    is_unknown = member_id == UNKNOWN_MEMBER_ID
    existing = rb.groups.get(request.group_id)
    if existing is not None and not isinstance(existing, ClassicGroup):
        _fail(future, ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id)
        return None
    if existing is None and not is_unknown:
        _fail(future, ErrorCode.UNKNOWN_MEMBER_ID, member_id)
        return None
    group = (
        existing
        if existing is not None
        else ClassicGroup(request.group_id, clock=rb.now_ms, state_timestamp_ms=rb.now_ms())
    )
    if existing is None:
        rb.groups[group.group_id] = group
    if not _accept_joining_member(rb, group, member_id):
        _fail(future, ErrorCode.GROUP_MAX_SIZE_REACHED, UNKNOWN_MEMBER_ID)
        result: Result = None
    elif is_unknown:
        result = _join_new_member(rb, request, context, group, future)
    else:
        result = _join_existing_member(rb, request, context, group, future)
    if existing is None and (result is None or not result.records):
        # A new group is committed to the log with an empty GroupMetadata record; if that write
        # fails, the group never existed.
        def created(error: ErrorCode | None) -> None:
            if error is not None:
                _fail(future, error, UNKNOWN_MEMBER_ID)
                if rb.groups.get(group.group_id) is group:
                    del rb.groups[group.group_id]
                    for member_id in [*group.members, *group.pending_join_members]:
                        rb.timer.cancel(heartbeat_key(group.group_id, member_id))
                    rb.timer.cancel(join_key(group.group_id))
                    rb.timer.cancel(sync_key(group.group_id))

        return CoordinatorResult(
            [rb.empty_group_metadata_record(group)], replay=False, on_appended=created
        ).then(result)
    return result


def protocols_of(request: JoinGroupRequest) -> list[tuple[str, bytes]]:
    return [(p.name, bytes(p.metadata)) for p in request.protocols]


def _fail(future: asyncio.Future[JoinGroupResponse], error: ErrorCode, member_id: str) -> None:
    if not future.done():
        future.set_result(JoinGroupResponse(error_code=error, member_id=member_id))


def _accept_joining_member(rb: ClassicRebalancer, group: ClassicGroup, member_id: str) -> bool:
    max_size = rb.settings.max_size
    if group.is_in(S.EMPTY, S.DEAD):
        return True
    if group.is_in(S.PREPARING_REBALANCE):
        member = group.members.get(member_id)
        return (member is not None and member.is_awaiting_join) or group.num_awaiting_join < max_size
    return member_id in group.members or len(group.members) < max_size


def _join_new_member(
    rb: ClassicRebalancer,
    request: JoinGroupRequest,
    context: JoinContext,
    group: ClassicGroup,
    future: asyncio.Future[JoinGroupResponse],
) -> Result:
    if group.is_in(S.DEAD):
        _fail(future, ErrorCode.COORDINATOR_NOT_AVAILABLE, UNKNOWN_MEMBER_ID)
        return None
    if not group.supports_protocols(request.protocol_type, (p.name for p in request.protocols)):
        _fail(future, ErrorCode.INCONSISTENT_GROUP_PROTOCOL, UNKNOWN_MEMBER_ID)
        return None
    instance_id = request.group_instance_id
    new_member_id = generate_member_id(instance_id if instance_id is not None else context.client_id)
    if instance_id is not None:
        existing_member_id = group.static_member_id(instance_id)
        if existing_member_id is not None:
            log.info(
                "static member %s of group %s rejoins in state %s; replacing member id %s",
                instance_id,
                group.group_id,
                group.state.value,
                existing_member_id,
            )
            return _update_static_member(
                rb, request, context, group, existing_member_id, new_member_id, future
            )
        return _add_member(rb, request, context, group, new_member_id, future)
    if context.requires_known_member_id:
        # The member must come back with this id: until it does (or its session runs out) the
        # group waits for it before completing a join phase.
        group.pending_join_members.add(new_member_id)
        rb.schedule_pending_member_expiry(group, new_member_id, request.session_timeout_ms)
        if not future.done():
            future.set_result(
                JoinGroupResponse(error_code=ErrorCode.MEMBER_ID_REQUIRED, member_id=new_member_id)
            )
        return None
    return _add_member(rb, request, context, group, new_member_id, future)


def _join_existing_member(
    rb: ClassicRebalancer,
    request: JoinGroupRequest,
    context: JoinContext,
    group: ClassicGroup,
    future: asyncio.Future[JoinGroupResponse],
) -> Result:
    member_id = request.member_id
    if group.is_in(S.DEAD):
        _fail(future, ErrorCode.COORDINATOR_NOT_AVAILABLE, member_id)
        return None
    if not group.supports_protocols(request.protocol_type, (p.name for p in request.protocols)):
        _fail(future, ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id)
        return None
    if group.is_pending_member(member_id):
        if request.group_instance_id is not None:
            _fail(future, ErrorCode.INVALID_REQUEST, member_id)
            return None
        return _add_member(rb, request, context, group, member_id, future)
    try:
        group.validate_member(member_id, request.group_instance_id)
    except KafkaError as error:
        _fail(future, error.error_code, member_id)
        return None
    member = group.member(member_id)
    protocols = protocols_of(request)
    if group.is_in(S.PREPARING_REBALANCE):
        return _update_member(rb, request, group, member, future, "member joining during PreparingRebalance")
    if group.is_in(S.COMPLETING_REBALANCE):
        if member.matches(protocols):
            # The member lost its JoinGroup answer: give it the current generation again.
            future.set_result(_current_generation(group, member_id, group.is_leader(member_id)))
            return None
        return _update_member(rb, request, group, member, future, "member metadata changed")
    if group.is_in(S.STABLE):
        if group.is_leader(member_id):
            return _update_member(rb, request, group, member, future, "leader rejoining")
        if not member.matches(protocols):
            return _update_member(rb, request, group, member, future, "member metadata changed")
        future.set_result(_current_generation(group, member_id, False))
        return None
    _fail(future, ErrorCode.UNKNOWN_MEMBER_ID, member_id)
    return None


def _current_generation(group: ClassicGroup, member_id: str, with_members: bool) -> JoinGroupResponse:
    return JoinGroupResponse(
        error_code=ErrorCode.NONE,
        generation_id=group.generation_id,
        protocol_type=group.protocol_type,
        protocol_name=group.protocol_name,
        leader=group.leader_id or "",
        skip_assignment=False,
        member_id=member_id,
        members=group.current_members() if with_members else [],
    )


def _add_member(
    rb: ClassicRebalancer,
    request: JoinGroupRequest,
    context: JoinContext,
    group: ClassicGroup,
    member_id: str,
    future: asyncio.Future[JoinGroupResponse],
) -> Result:
    member = ClassicMember(
        member_id=member_id,
        group_instance_id=request.group_instance_id,
        client_id=context.client_id,
        client_host=context.client_host,
        rebalance_timeout_ms=request.rebalance_timeout_ms,
        session_timeout_ms=request.session_timeout_ms,
        protocol_type=request.protocol_type,
        protocols=protocols_of(request),
        is_new=True,
    )
    if group.is_in(S.PREPARING_REBALANCE) and group.previous_state is S.EMPTY:
        group.new_member_added = True
    group.add(member, future)
    # A parked JoinGroup cannot heartbeat and its disconnect goes unnoticed: bound the wait instead.
    rb.reschedule_heartbeat(group, member, rb.settings.new_member_join_timeout_ms)
    return rb.maybe_prepare_rebalance_or_complete_join(group, f"adding new member {member_id}")


def _update_member(
    rb: ClassicRebalancer,
    request: JoinGroupRequest,
    group: ClassicGroup,
    member: ClassicMember,
    future: asyncio.Future[JoinGroupResponse],
    reason: str,
) -> Result:
    group.update_member(
        member, protocols_of(request), request.rebalance_timeout_ms, request.session_timeout_ms, future
    )
    return rb.maybe_prepare_rebalance_or_complete_join(group, reason)


def _update_static_member(
    rb: ClassicRebalancer,
    request: JoinGroupRequest,
    context: JoinContext,
    group: ClassicGroup,
    old_member_id: str,
    new_member_id: str,
    future: asyncio.Future[JoinGroupResponse],
) -> Result:
    instance_id = request.group_instance_id
    assert instance_id is not None
    current_leader = group.leader_id
    member = group.replace_static_member(instance_id, old_member_id, new_member_id)
    rb.timer.cancel(heartbeat_key(group.group_id, old_member_id))
    rb.reschedule_heartbeat(group, member)
    old_rebalance, old_session, old_protocols = (
        member.rebalance_timeout_ms,
        member.session_timeout_ms,
        member.protocols,
    )
    group.update_member(
        member, protocols_of(request), request.rebalance_timeout_ms, request.session_timeout_ms, future
    )
    if group.is_in(S.STABLE):
        if group.protocol_name != group.select_protocol():
            return rb.maybe_prepare_rebalance_or_complete_join(
                group, f"static member {instance_id} changed protocols"
            )
        # Same protocol: no rebalance. Persist the new member id, then answer from the current generation.
        assignment = {m.member_id: m.assignment for m in group.members.values()}

        def stored(error: ErrorCode | None) -> None:
            if error is not None:
                group.update_member(member, old_protocols, old_rebalance, old_session, None)
                old = group.replace_static_member(instance_id, new_member_id, old_member_id)
                rb.timer.cancel(heartbeat_key(group.group_id, new_member_id))
                rb.reschedule_heartbeat(group, old)
                if not future.done():
                    future.set_result(
                        JoinGroupResponse(
                            error_code=error,
                            member_id=UNKNOWN_MEMBER_ID,
                            generation_id=group.generation_id,
                            protocol_type=group.protocol_type,
                            protocol_name=group.protocol_name,
                            leader=current_leader or "",
                        )
                    )
                return
            is_leader = group.is_leader(new_member_id)
            skip = context.supports_skip_assignment and is_leader
            response = JoinGroupResponse(
                error_code=ErrorCode.NONE,
                generation_id=group.generation_id,
                protocol_type=group.protocol_type,
                protocol_name=group.protocol_name,
                leader=(group.leader_id or "")
                if context.supports_skip_assignment
                else (current_leader or ""),
                skip_assignment=skip,
                member_id=new_member_id,
                members=group.current_members() if skip else [],
            )
            group.complete_join(member, response)

        return CoordinatorResult(
            [rb.group_metadata_record(group, assignment)], replay=False, on_appended=stored
        )
    if group.is_in(S.COMPLETING_REBALANCE):
        # The leader may be assigning to the old member id: rebalance so the new id gets partitions.
        return rb.prepare_rebalance(group, f"static member {instance_id} rejoined during CompletingRebalance")
    return rb.maybe_complete_join_phase(group)
