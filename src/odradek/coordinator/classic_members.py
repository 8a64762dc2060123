"""SyncGroup, Heartbeat and LeaveGroup for classic groups.

SyncGroup from the leader in CompletingRebalance writes the group's GroupMetadata record (with every
member's assignment; a member the leader left out gets an empty one) and, once it is appended, answers
every waiting member and makes the group Stable. Followers wait for that; in Stable everyone gets their
assignment at once.
"""

from __future__ import annotations

import asyncio
import logging

from odradek.coordinator.classic_group import ClassicGroup, ClassicGroupState
from odradek.coordinator.classic_rebalance import ClassicRebalancer, Result, heartbeat_key
from odradek.coordinator.result import CoordinatorResult
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.protocol.messages.heartbeat import HeartbeatRequest
from odradek.protocol.messages.join_group import JoinGroupResponse
from odradek.protocol.messages.leave_group import LeaveGroupRequest, MemberIdentity, MemberResponse
from odradek.protocol.messages.sync_group import SyncGroupRequest, SyncGroupResponse

log = logging.getLogger("odradek.coordinator.classic")

S = ClassicGroupState


def classic_group(rb: ClassicRebalancer, group_id: str) -> ClassicGroup:
    """The classic group `group_id`; UNKNOWN_MEMBER_ID when there is none (as Kafka answers)."""
    group = rb.groups.get(group_id)
    if group is None or not isinstance(group, ClassicGroup):
        raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"Classic group {group_id} not found.")
    return group


# ----- SyncGroup ----------------------------------------------------------------------------------


def sync_group(
    rb: ClassicRebalancer, request: SyncGroupRequest, future: asyncio.Future[SyncGroupResponse]
) -> Result:
    try:
        group = classic_group(rb, request.group_id)
        error = _validate_sync(group, request)
    except KafkaError as failure:
        error = failure.error_code
    if error is not None:
        future.set_result(SyncGroupResponse(error_code=error, assignment=b""))
        return None
    member_id = request.member_id
    if group.is_in(S.EMPTY):
        future.set_result(SyncGroupResponse(error_code=ErrorCode.UNKNOWN_MEMBER_ID, assignment=b""))
        return None
    if group.is_in(S.PREPARING_REBALANCE):
        future.set_result(SyncGroupResponse(error_code=ErrorCode.REBALANCE_IN_PROGRESS, assignment=b""))
        return None
    member = group.member(member_id)
    if group.is_in(S.STABLE):
        rb.remove_pending_sync_member(group, member_id)
        rb.reschedule_heartbeat(group, member)
        future.set_result(
            SyncGroupResponse(
                error_code=ErrorCode.NONE,
                protocol_type=group.protocol_type,
                protocol_name=group.protocol_name,
                assignment=member.assignment,
            )
        )
        return None
    # CompletingRebalance: wait for the leader's assignment.
    member.sync_future = future
    rb.remove_pending_sync_member(group, member_id)
    if not group.is_leader(member_id):
        return None
    assignment = {a.member_id: bytes(a.assignment) for a in request.assignments}
    missing = [m for m in group.members if m not in assignment]
    for member_id_without in missing:
        assignment[member_id_without] = b""
    if missing:
        log.warning(
            "group %s generation %d: empty assignments for %s", group.group_id, group.generation_id, missing
        )
    generation = request.generation_id

    def stored(error: ErrorCode | None) -> None:
        # Another member may have joined meanwhile: only the same generation, still completing, moves on.
        if not group.is_in(S.COMPLETING_REBALANCE) or group.generation_id != generation:
            return
        if error is not None:
            rb.reset_and_propagate_assignment_with_error(group, error)
            rb.maybe_prepare_rebalance_or_complete_join(group, f"error {error.name} storing the assignment")
            return
        rb.set_and_propagate_assignment(group, assignment)
        group.transition_to(S.STABLE)

    log.info(
        "group %s generation %d: assignment received from leader %s (%d members)",
        group.group_id,
        group.generation_id,
        member_id,
        len(group.members),
    )
    return CoordinatorResult([rb.group_metadata_record(group, assignment)], replay=False, on_appended=stored)


def _validate_sync(group: ClassicGroup, request: SyncGroupRequest) -> ErrorCode | None:
    if group.is_in(S.DEAD):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    try:
        group.validate_member(request.member_id, request.group_instance_id)
    except KafkaError as error:
        return error.error_code
    if request.generation_id != group.generation_id:
        return ErrorCode.ILLEGAL_GENERATION
    if _inconsistent(request.protocol_type, group.protocol_type) or _inconsistent(
        request.protocol_name, group.protocol_name
    ):
        return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    return None


def _inconsistent(requested: str | None, current: str | None) -> bool:
    return requested is not None and current is not None and requested != current


# ----- Heartbeat ------------------------------------------------------------------------------------


def heartbeat(rb: ClassicRebalancer, request: HeartbeatRequest) -> ErrorCode:
    group = classic_group(rb, request.group_id)
    if group.is_in(S.DEAD):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    group.validate_member(request.member_id, request.group_instance_id)
    if request.generation_id != group.generation_id:
        return ErrorCode.ILLEGAL_GENERATION
    if group.is_in(S.EMPTY):
        return ErrorCode.UNKNOWN_MEMBER_ID
    rb.reschedule_heartbeat(group, group.member(request.member_id))
    if group.is_in(S.PREPARING_REBALANCE):
        return ErrorCode.REBALANCE_IN_PROGRESS
    return ErrorCode.NONE


# ----- LeaveGroup -----------------------------------------------------------------------------------


def leave_group(
    rb: ClassicRebalancer, request: LeaveGroupRequest, members: list[MemberIdentity]
) -> tuple[ErrorCode, list[MemberResponse], Result]:
    """Remove `members` (v0-2's single member id comes as one identity): (error, per member, records)."""
    group = classic_group(rb, request.group_id)
    if group.is_in(S.DEAD):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, [], None
    responses: list[MemberResponse] = []
    left: list[str] = []
    for identity in members:
        error = _leave_one(rb, group, identity)
        responses.append(
            MemberResponse(
                member_id=identity.member_id, group_instance_id=identity.group_instance_id, error_code=error
            )
        )
        if error is ErrorCode.NONE:
            left.append(identity.member_id or str(identity.group_instance_id))
    result: Result = None
    if left:
        reason = f"explicit LeaveGroup for {left}"
        if group.is_in(S.STABLE, S.COMPLETING_REBALANCE):
            result = rb.maybe_prepare_rebalance_or_complete_join(group, reason)
        elif group.is_in(S.PREPARING_REBALANCE):
            result = rb.maybe_complete_join_phase(group)
    return ErrorCode.NONE, responses, result


def _leave_one(rb: ClassicRebalancer, group: ClassicGroup, identity: MemberIdentity) -> ErrorCode:
    member_id = identity.member_id
    instance_id = identity.group_instance_id
    if member_id == "":
        # Administrative removal of a static member by its instance id.
        existing = group.static_member_id(instance_id) if instance_id is not None else None
        if existing is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        _remove_current_member(rb, group, existing, identity.reason)
        return ErrorCode.NONE
    if group.is_pending_member(member_id):
        group.remove(member_id)
        rb.timer.cancel(heartbeat_key(group.group_id, member_id))
        log.info("pending member %s left group %s", member_id, group.group_id)
        return ErrorCode.NONE
    try:
        group.validate_member(member_id, instance_id)
    except KafkaError as error:
        return error.error_code
    _remove_current_member(rb, group, member_id, identity.reason)
    return ErrorCode.NONE


def _remove_current_member(
    rb: ClassicRebalancer, group: ClassicGroup, member_id: str, reason: str | None
) -> None:
    member = group.member(member_id)
    rb.timer.cancel(heartbeat_key(group.group_id, member_id))
    log.info("member %s left group %s (reason: %s)", member_id, group.group_id, reason or "not provided")
    group.complete_join(member, JoinGroupResponse(error_code=ErrorCode.UNKNOWN_MEMBER_ID, member_id=""))
    group.remove(member_id)
