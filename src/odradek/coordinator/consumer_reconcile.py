"""A consumer group member's way from its current assignment to its target (Kafka's
CurrentAssignmentBuilder).

A member first gives up what its target no longer holds (UNREVOKED_PARTITIONS, at its old epoch,
until it reports them gone), then moves to the target epoch and takes the new partitions that nobody
owns any more; partitions another member has not released yet come later (UNRELEASED_PARTITIONS).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import replace

from odradek.coordinator.consumer_group import ConsumerMember, MemberState, Partitions
from odradek.protocol.error_codes import ErrorCode, KafkaError

Owner = Callable[[uuid.UUID, int], str | None]


def reconcile(
    member: ConsumerMember,
    target_epoch: int,
    target: Partitions,
    subscribed_topic_ids: set[uuid.UUID],
    owner: Owner,
    owned: Partitions | None,
) -> ConsumerMember:
    """The member's next current assignment (itself when it cannot move on yet)."""
    if member.member_epoch == target_epoch and member.state is MemberState.STABLE:
        return member
    if member.state is MemberState.UNREVOKED_PARTITIONS and _owns_any(owned, member.pending_revocation):
        return member
    if member.state is MemberState.UNKNOWN:
        if owned is None or any(owned.values()):
            raise KafkaError(
                ErrorCode.FENCED_MEMBER_EPOCH,
                "The consumer group member is in a unknown state. "
                "The member must abandon all its partitions and rejoin.",
            )
        return _next(member, target_epoch, target, subscribed_topic_ids, owner, owned)
    return _next(member, member.member_epoch, target, subscribed_topic_ids, owner, owned, target_epoch)


def _next(
    member: ConsumerMember,
    member_epoch: int,
    target: Partitions,
    subscribed: set[uuid.UUID],
    owner: Owner,
    owned: Partitions | None,
    target_epoch: int | None = None,
) -> ConsumerMember:
    target_epoch = member_epoch if target_epoch is None else target_epoch
    assigned: Partitions = {}
    revoking: Partitions = {}
    to_assign: Partitions = {}
    unreleased = False
    for topic_id in set(target) | set(member.assigned):
        wanted = target.get(topic_id, frozenset()) if topic_id in subscribed else frozenset()
        current = member.assigned.get(topic_id, frozenset())
        keep = current & wanted
        revoke = current - keep
        pending = wanted - keep
        free = frozenset(p for p in pending if owner(topic_id, p) in (None, member.member_id))
        unreleased = unreleased or free != pending
        if keep:
            assigned[topic_id] = keep
        if revoke:
            revoking[topic_id] = revoke
        if free:
            to_assign[topic_id] = free
    if revoking and _owns_any(owned, revoking):
        return replace(
            member.with_epoch(member_epoch),
            state=MemberState.UNREVOKED_PARTITIONS,
            assigned=assigned,
            pending_revocation=revoking,
        )
    for topic_id, partitions in to_assign.items():
        assigned[topic_id] = assigned.get(topic_id, frozenset()) | partitions
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return replace(member.with_epoch(target_epoch), state=state, assigned=assigned, pending_revocation={})


def _owns_any(owned: Partitions | None, partitions: Partitions) -> bool:
    """Whether the member still reports any of `partitions` (not knowing counts as yes)."""
    if owned is None:
        return True
    return any(owned.get(topic_id, frozenset()) & numbers for topic_id, numbers in partitions.items())
