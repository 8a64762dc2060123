"""The classic group's rebalance machinery: join and sync phases, their deadlines, and session expiry.

This follows Kafka's GroupMetadataManager step by step (prepareRebalance, completeClassicGroupJoin,
schedulePendingSync, expireClassicGroupMemberHeartbeat ...), so that clients see the same errors at
the same moments. Three kinds of timer drive it, all on the broker's loop:
- `join-<group>`: the join phase ends when every member has rejoined, or at the group's rebalance
  timeout (the longest of its members'); the first rebalance of an empty group waits
  `group.initial.rebalance.delay.ms` (extended while members keep arriving) instead.
- `sync-<group>`: members that got a JoinGroup answer but send no SyncGroup within the rebalance
  timeout are removed, and the group rebalances again.
- `heartbeat-<group>-<member>`: a member not heard from (heartbeat, join, sync, commit) within its
  session timeout is removed; a new member's JoinGroup waits at most five minutes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from odradek.coordinator.classic_group import ClassicGroup, ClassicGroupState, ClassicMember
from odradek.coordinator.group_types import Group
from odradek.coordinator.records import CoordinatorRecord, MemberMetadata, group_metadata_record
from odradek.coordinator.result import CoordinatorResult
from odradek.coordinator.settings import GroupSettings
from odradek.coordinator.timer import CoordinatorTimer
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.join_group import JoinGroupResponse
from odradek.protocol.messages.sync_group import SyncGroupResponse

log = logging.getLogger("odradek.coordinator.classic")

S = ClassicGroupState
Result = CoordinatorResult[None] | None


def heartbeat_key(group_id: str, member_id: str) -> str:
    return f"heartbeat-{group_id}-{member_id}"


def join_key(group_id: str) -> str:
    return f"join-{group_id}"


def sync_key(group_id: str) -> str:
    return f"sync-{group_id}"


class ClassicRebalancer:
    def __init__(
        self,
        groups: dict[str, Group],
        timer: CoordinatorTimer,
        settings: GroupSettings,
        now_ms: Callable[[], int],
    ) -> None:
        self.groups = groups
        self.timer = timer
        self.settings = settings
        self.now_ms = now_ms

    def is_current(self, group: ClassicGroup) -> bool:
        """Whether `group` is still the live object under its id (timers may outlive it)."""
        return self.groups.get(group.group_id) is group

    # ----- join phase ----------------------------------------------------------------------------

    def maybe_prepare_rebalance_or_complete_join(self, group: ClassicGroup, reason: str) -> Result:
        if group.can_rebalance():
            return self.prepare_rebalance(group, reason)
        return self.maybe_complete_join_phase(group)

    def prepare_rebalance(self, group: ClassicGroup, reason: str) -> Result:
        if group.is_in(S.COMPLETING_REBALANCE):
            self.reset_and_propagate_assignment_with_error(group, ErrorCode.REBALANCE_IN_PROGRESS)
        self.remove_sync_expiration(group)
        initial = group.is_in(S.EMPTY)
        if initial:
            delay = self.settings.initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms() - delay, 0)
            self.timer.schedule(
                join_key(group.group_id),
                delay,
                lambda: self.try_complete_initial_rebalance_else_schedule(group, delay, remaining),
            )
        group.transition_to(S.PREPARING_REBALANCE)
        log.info(
            "preparing to rebalance group %s with old generation %d (%s)",
            group.group_id,
            group.generation_id,
            reason,
        )
        return None if initial else self.maybe_complete_join_else_schedule(group)

    def maybe_complete_join_else_schedule(self, group: ClassicGroup) -> Result:
        if group.has_all_members_joined():
            return self.complete_join(group)
        self.timer.schedule(
            join_key(group.group_id),
            group.rebalance_timeout_ms(),
            lambda: self._complete_join_if_current(group),
        )
        return None

    def try_complete_initial_rebalance_else_schedule(
        self, group: ClassicGroup, delay_ms: int, remaining_ms: int
    ) -> Result:
        if not self.is_current(group):
            return None
        if group.new_member_added and remaining_ms != 0:
            group.new_member_added = False
            new_delay = min(self.settings.initial_rebalance_delay_ms, remaining_ms)
            new_remaining = max(remaining_ms - delay_ms, 0)
            self.timer.schedule(
                join_key(group.group_id),
                new_delay,
                lambda: self.try_complete_initial_rebalance_else_schedule(group, new_delay, new_remaining),
            )
            return None
        return self.complete_join(group)

    def maybe_complete_join_phase(self, group: ClassicGroup) -> Result:
        if (
            group.is_in(S.PREPARING_REBALANCE)
            and group.has_all_members_joined()
            and group.previous_state is not S.EMPTY
        ):
            return self.complete_join(group)
        return None

    def _complete_join_if_current(self, group: ClassicGroup) -> Result:
        return self.complete_join(group) if self.is_current(group) else None

    def complete_join(self, group: ClassicGroup) -> Result:
        """End the join phase: drop dynamic members that did not rejoin, start the next generation."""
        self.timer.cancel(join_key(group.group_id))
        if not group.is_in(S.PREPARING_REBALANCE):
            return None
        gone = [m for m in group.not_yet_rejoined() if not m.is_static]
        for member in gone:
            group.remove(member.member_id)
            self.timer.cancel(heartbeat_key(group.group_id, member.member_id))
        if gone:
            log.info(
                "group %s removed members who did not rejoin: %s", group.group_id, [m.member_id for m in gone]
            )
        if not group.maybe_elect_new_joined_leader() and group.members:
            # Only static members that have not rejoined are left: wait for them (or their sessions).
            log.warning("group %s could not complete its rebalance: no member rejoined", group.group_id)
            self.timer.schedule(
                join_key(group.group_id),
                group.rebalance_timeout_ms(),
                lambda: self._complete_join_if_current(group),
            )
            return None
        group.init_next_generation()
        if group.is_in(S.EMPTY):
            log.info("group %s with generation %d is now empty", group.group_id, group.generation_id)
            return CoordinatorResult([self.group_metadata_record(group, {})], replay=False)
        log.info(
            "stabilized group %s generation %d (%d members)",
            group.group_id,
            group.generation_id,
            len(group.members),
        )
        for member in list(group.members.values()):
            response = JoinGroupResponse(
                error_code=ErrorCode.NONE,
                generation_id=group.generation_id,
                protocol_type=group.protocol_type,
                protocol_name=group.protocol_name,
                leader=group.leader_id or "",
                skip_assignment=False,
                member_id=member.member_id,
                members=group.current_members() if group.is_leader(member.member_id) else [],
            )
            group.complete_join(member, response)
            self.reschedule_heartbeat(group, member)
            member.is_new = False
            group.pending_sync_members.add(member.member_id)
        self.schedule_pending_sync(group)
        return None

    # ----- sync phase ----------------------------------------------------------------------------

    def schedule_pending_sync(self, group: ClassicGroup) -> None:
        generation = group.generation_id
        self.timer.schedule(
            sync_key(group.group_id),
            group.rebalance_timeout_ms(),
            lambda: self.expire_pending_sync(group, generation),
        )

    def expire_pending_sync(self, group: ClassicGroup, generation_id: int) -> Result:
        if not self.is_current(group) or generation_id != group.generation_id:
            return None
        if not group.is_in(S.COMPLETING_REBALANCE, S.STABLE) or not group.pending_sync_members:
            return None
        pending = sorted(group.pending_sync_members)
        for member_id in pending:
            group.remove(member_id)
            self.timer.cancel(heartbeat_key(group.group_id, member_id))
        log.info("group %s removed members who sent no SyncGroup: %s", group.group_id, pending)
        return self.prepare_rebalance(group, f"removing {pending} on pending sync request expiration")

    def remove_sync_expiration(self, group: ClassicGroup) -> None:
        group.pending_sync_members.clear()
        self.timer.cancel(sync_key(group.group_id))

    def remove_pending_sync_member(self, group: ClassicGroup, member_id: str) -> None:
        group.pending_sync_members.discard(member_id)
        if group.is_in(S.DEAD, S.EMPTY, S.PREPARING_REBALANCE) or not group.pending_sync_members:
            self.timer.cancel(sync_key(group.group_id))

    def reset_and_propagate_assignment_with_error(self, group: ClassicGroup, error: ErrorCode) -> None:
        for member in group.members.values():
            member.assignment = b""
        self.propagate_assignment(group, error)

    def set_and_propagate_assignment(self, group: ClassicGroup, assignment: dict[str, bytes]) -> None:
        for member in group.members.values():
            member.assignment = assignment.get(member.member_id, b"")
        self.propagate_assignment(group, ErrorCode.NONE)

    def propagate_assignment(self, group: ClassicGroup, error: ErrorCode) -> None:
        ok = error is ErrorCode.NONE
        for member in list(group.members.values()):
            response = SyncGroupResponse(
                error_code=error,
                protocol_type=group.protocol_type if ok else None,
                protocol_name=group.protocol_name if ok else None,
                assignment=member.assignment,
            )
            if group.complete_sync(member, response):
                self.reschedule_heartbeat(group, member)

    # ----- sessions ------------------------------------------------------------------------------

    def reschedule_heartbeat(
        self, group: ClassicGroup, member: ClassicMember, timeout_ms: int | None = None
    ) -> None:
        member_id = member.member_id
        self.timer.schedule(
            heartbeat_key(group.group_id, member_id),
            member.session_timeout_ms if timeout_ms is None else timeout_ms,
            lambda: self.expire_heartbeat(group, member_id),
        )

    def schedule_pending_member_expiry(
        self, group: ClassicGroup, member_id: str, session_timeout_ms: int
    ) -> None:
        self.timer.schedule(
            heartbeat_key(group.group_id, member_id),
            session_timeout_ms,
            lambda: self.expire_heartbeat(group, member_id),
        )

    def expire_heartbeat(self, group: ClassicGroup, member_id: str) -> Result:
        if not self.is_current(group) or group.is_in(S.DEAD):
            return None
        if group.is_pending_member(member_id):
            log.info("pending member %s of group %s expired", member_id, group.group_id)
            return self.remove_pending_member_and_update(group, member_id)
        member = group.members.get(member_id)
        if member is None or member.has_satisfied_heartbeat():
            return None
        log.info("member %s of group %s failed its session timeout; removing it", member_id, group.group_id)
        return self.remove_member_and_update(
            group, member, f"removing member {member_id} on heartbeat expiration"
        )

    def remove_member_and_update(self, group: ClassicGroup, member: ClassicMember, reason: str) -> Result:
        group.complete_join(member, JoinGroupResponse(error_code=ErrorCode.UNKNOWN_MEMBER_ID, member_id=""))
        group.remove(member.member_id)
        if group.is_in(S.STABLE, S.COMPLETING_REBALANCE):
            return self.maybe_prepare_rebalance_or_complete_join(group, reason)
        if group.is_in(S.PREPARING_REBALANCE) and group.has_all_members_joined():
            return self.complete_join(group)
        return None

    def remove_pending_member_and_update(self, group: ClassicGroup, member_id: str) -> Result:
        group.remove(member_id)
        if group.is_in(S.PREPARING_REBALANCE) and group.has_all_members_joined():
            return self.complete_join(group)
        return None

    # ----- records -------------------------------------------------------------------------------

    def group_metadata_record(self, group: ClassicGroup, assignment: dict[str, bytes]) -> CoordinatorRecord:
        """GroupMetadataValue of the group as it is, with `assignment` (every member must have one)."""
        members = [
            MemberMetadata(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                rebalance_timeout=m.rebalance_timeout_ms,
                session_timeout=m.session_timeout_ms,
                subscription=m.metadata(group.protocol_name),
                assignment=assignment[m.member_id],
            )
            for m in group.members.values()
        ]
        return group_metadata_record(
            group.group_id,
            group.protocol_type or "",
            group.generation_id,
            group.protocol_name,
            group.leader_id,
            -1 if group.state_timestamp_ms is None else group.state_timestamp_ms,
            members,
        )

    def empty_group_metadata_record(self, group: ClassicGroup) -> CoordinatorRecord:
        return group_metadata_record(group.group_id, "", 0, None, None, group.state_timestamp_ms or -1, [])
