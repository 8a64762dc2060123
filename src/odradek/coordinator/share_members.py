"""ShareGroupHeartbeat (KIP-932): share-group members join, heartbeat and leave; their assignments.

A heartbeat (1) creates or updates the member, bumping the group epoch when the membership, a
subscription or a subscribed topic's partitions change; (2) computes the target assignment when the
group epoch is ahead of it; (3) gives the member its target at once (there is nothing to revoke: the
share partitions hand each record to one member at a time). Only partitions whose share-group state
is initialised on the share coordinators are assigned (`ShareGroup.initialized`); the others are
initialised first (GroupCoordinator) and assigned at a later heartbeat, as in Kafka 4.x.

The assignor is Kafka 4.4's "simple" one (coordinator/share_assignor.py): the partitions are spread
over the members, a partition shared by several members only when members outnumber partitions.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from collections.abc import Callable, Iterable, MutableMapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from odradek.coordinator import share_assignor
from odradek.coordinator import share_records as sr
from odradek.coordinator.group_types import Group
from odradek.coordinator.records import CoordinatorRecord
from odradek.coordinator.result import CoordinatorResult
from odradek.coordinator.settings import GroupSettings
from odradek.coordinator.share_assignor import MemberSpec
from odradek.coordinator.share_group import LEAVE_GROUP_MEMBER_EPOCH, Partitions, ShareGroup, ShareMember
from odradek.coordinator.timer import Operation
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.protocol.messages.share_group_heartbeat import (
    Assignment,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
    TopicPartitions,
)

log = logging.getLogger("odradek.coordinator.share")

Result = CoordinatorResult[ShareGroupHeartbeatResponse]
SIMPLE_ASSIGNOR = "simple"


class TopicDescription(Protocol):
    """What the share assignor needs of a topic in the metadata cache."""

    @property
    def name(self) -> str: ...

    @property
    def topic_id(self) -> uuid.UUID: ...

    @property
    def partitions(self) -> Sequence[object]: ...


class TopicsMetadata(Protocol):
    """The broker's metadata cache, as far as share groups read it."""

    def topic(self, name: str) -> TopicDescription | None: ...

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicDescription | None: ...


class Timer(Protocol):
    def schedule(self, key: str, delay_ms: float, operation: Operation) -> None: ...

    def cancel(self, key: str) -> None: ...


@dataclass(frozen=True, slots=True)
class PartitionsToInitialize:
    """Share partitions a group is subscribed to whose state is not on the share coordinators yet."""

    group_id: str
    group_epoch: int
    partitions: dict[uuid.UUID, tuple[str, frozenset[int]]]


def session_key(group_id: str, member_id: str) -> str:
    return f"share-session-timeout-{group_id}-{member_id}"


class ShareGroupManager:
    def __init__(
        self,
        groups: MutableMapping[str, Group],
        settings: GroupSettings,
        timer: Timer,
        topics: TopicsMetadata,
        now_ms: Callable[[], int],
    ) -> None:
        self.groups = groups
        self.now_ms = now_ms
        self.settings = settings
        self.timer = timer
        self.topics = topics

    # ----- heartbeat -------------------------------------------------------------------------------

    def heartbeat(self, request: ShareGroupHeartbeatRequest, client_id: str, client_host: str) -> Result:
        _validate(request)
        if request.member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
            return self._leave(request)
        records: list[CoordinatorRecord] = []
        group = self.group_for(request.group_id, create=request.member_epoch == 0)
        member_id = request.member_id
        max_size = self.settings.share_max_size
        if member_id not in group.members and len(group.members) >= max_size:
            raise KafkaError(
                ErrorCode.GROUP_MAX_SIZE_REACHED,
                f"The share group has reached its maximum capacity of {max_size} members.",
            )
        member = self._member_for(group, member_id, request.member_epoch)
        is_new = member_id not in group.members
        updated = replace(
            member,
            rack_id=request.rack_id if request.rack_id is not None else member.rack_id,
            subscribed_topic_names=tuple(sorted(set(request.subscribed_topic_names)))
            if request.subscribed_topic_names is not None
            else member.subscribed_topic_names,
            client_id=client_id,
            client_host=client_host,
        )
        if is_new or updated.metadata_value() != member.metadata_value():
            records.append(sr.member_metadata_record(group.group_id, member_id, updated.metadata_value()))
        members = dict(group.members)
        members[member_id] = updated
        topics_hash = self._metadata_hash(members.values())
        group_epoch = group.group_epoch
        if (
            group_epoch == 0
            or is_new
            or updated.subscribed_topic_names != member.subscribed_topic_names
            or topics_hash != group.metadata_hash
        ):
            group_epoch += 1
            records.append(sr.group_epoch_record(group.group_id, group_epoch, topics_hash))
        target = group.target.get(member_id, {})
        target_epoch = group.assignment_epoch
        if group_epoch > target_epoch:
            for other, partitions in self._targets(group, members).items():
                if partitions != group.target.get(other, {}) or (other == member_id and is_new):
                    records.append(sr.target_assignment_record(group.group_id, other, partitions))
                if other == member_id:
                    target = partitions
            records.append(sr.target_assignment_epoch_record(group.group_id, group_epoch, self.now_ms()))
            target_epoch = group_epoch
        reconciled = updated
        if updated.member_epoch != target_epoch or updated.assigned != target or is_new:
            reconciled = replace(
                updated,
                previous_member_epoch=updated.member_epoch,
                member_epoch=target_epoch,
                assigned=target,
            )
            records.append(
                sr.current_assignment_record(
                    group.group_id,
                    member_id,
                    reconciled.member_epoch,
                    reconciled.previous_member_epoch,
                    reconciled.assigned,
                )
            )
        self._schedule_session_timeout(group.group_id, member_id)
        response = ShareGroupHeartbeatResponse(
            error_code=ErrorCode.NONE,
            member_id=member_id,
            member_epoch=reconciled.member_epoch,
            heartbeat_interval_ms=self.settings.share_group(group.group_id).heartbeat_interval_ms,
        )
        if request.member_epoch == 0 or reconciled.assigned != member.assigned:
            response.assignment = Assignment(topic_partitions=_topic_partitions(reconciled.assigned))
        return CoordinatorResult(records, response, replay=True)

    def to_initialize(self, group_id: str, busy: Partitions) -> PartitionsToInitialize | None:
        """The partitions the group subscribes to whose share-group state is not initialised, less the
        ones being initialised already (`busy`); None if there are none."""
        group = self.groups.get(group_id)
        if not isinstance(group, ShareGroup) or not group.members:
            return None
        missing: dict[uuid.UUID, tuple[str, frozenset[int]]] = {}
        subscribed = self._subscribed_partitions(group.members.values())
        for topic_id, partitions in group.uninitialized(subscribed).items():
            described = self.topics.topic_by_id(topic_id)
            left = partitions - busy.get(topic_id, frozenset())
            if described is not None and left:
                missing[topic_id] = (described.name, left)
        return PartitionsToInitialize(group_id, group.group_epoch, missing) if missing else None

    def mark_initialized(
        self, group_id: str, done: dict[uuid.UUID, tuple[str, frozenset[int]]]
    ) -> CoordinatorResult[None]:
        """Record that the share coordinators hold these partitions' state, and bump the group epoch
        so that the members are assigned them at their next heartbeat."""
        group = self.groups.get(group_id)
        if not isinstance(group, ShareGroup) or not done:
            return CoordinatorResult([], None)
        initialized = dict(group.initialized)
        for topic_id, (name, partitions) in done.items():
            initialized[topic_id] = (name, initialized.get(topic_id, (name, frozenset()))[1] | partitions)
        records = [sr.state_partition_metadata_record(group_id, initialized)]
        if group.members:
            records.append(sr.group_epoch_record(group_id, group.group_epoch + 1, group.metadata_hash))
        return CoordinatorResult(records, None, replay=True)

    def mark_uninitialized(self, group_id: str, topic_ids: set[uuid.UUID]) -> CoordinatorResult[None]:
        """Record that the share coordinators no longer hold these topics' state for the group
        (DeleteShareGroupOffsets); a member subscribing to them again initialises them again."""
        group = self.groups.get(group_id)
        if not isinstance(group, ShareGroup) or not topic_ids & set(group.initialized):
            return CoordinatorResult([], None)
        kept = {t: v for t, v in group.initialized.items() if t not in topic_ids}
        return CoordinatorResult([sr.state_partition_metadata_record(group_id, kept)], None, replay=True)

    def group_for(self, group_id: str, create: bool) -> ShareGroup:
        group = self.groups.get(group_id)
        if isinstance(group, ShareGroup):
            return group
        if group is None and not create:
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Share group {group_id} not found.")
        if group is None:
            return ShareGroup(group_id)
        # As Kafka: the group types share one namespace and a group never changes type.
        raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.")

    def _member_for(self, group: ShareGroup, member_id: str, epoch: int) -> ShareMember:
        existing = group.members.get(member_id)
        if existing is None:
            if epoch != 0:
                raise KafkaError(
                    ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of the group."
                )
            return ShareMember(member_id)
        if epoch == 0:
            return existing  # rejoining with its own id: it is given its assignment again
        if epoch > existing.member_epoch or (
            epoch < existing.member_epoch and epoch != existing.previous_member_epoch
        ):
            raise KafkaError(
                ErrorCode.FENCED_MEMBER_EPOCH,
                f"The share group member has epoch {epoch}, the group coordinator knows "
                f"{existing.member_epoch}. The member must rejoin.",
            )
        return existing

    # ----- leaving and fencing ---------------------------------------------------------------------

    def _leave(self, request: ShareGroupHeartbeatRequest) -> Result:
        group = self.group_for(request.group_id, create=False)
        member = group.members.get(request.member_id)
        if member is None:
            raise KafkaError(
                ErrorCode.UNKNOWN_MEMBER_ID, f"Member {request.member_id} is not a member of the group."
            )
        log.info("member %s left share group %s", member.member_id, group.group_id)
        response = ShareGroupHeartbeatResponse(
            error_code=ErrorCode.NONE, member_id=member.member_id, member_epoch=LEAVE_GROUP_MEMBER_EPOCH
        )
        return CoordinatorResult(self.fence(group, member), response, replay=True)

    def fence(self, group: ShareGroup, member: ShareMember) -> list[CoordinatorRecord]:
        """Remove `member`: its records' tombstones and a group epoch bump."""
        self.timer.cancel(session_key(group.group_id, member.member_id))
        remaining = [m for m in group.members.values() if m.member_id != member.member_id]
        return [
            *sr.member_tombstones(group.group_id, member.member_id),
            sr.group_epoch_record(group.group_id, group.group_epoch + 1, self._metadata_hash(remaining)),
        ]

    def _fence_by_timer(self, group_id: str, member_id: str) -> CoordinatorResult[None] | None:
        group = self.groups.get(group_id)
        if not isinstance(group, ShareGroup):
            return None
        member = group.members.get(member_id)
        if member is None:
            return None
        log.info("member %s of share group %s fenced: its session expired", member_id, group_id)
        return CoordinatorResult(self.fence(group, member), None, replay=True)

    def _schedule_session_timeout(self, group_id: str, member_id: str) -> None:
        self.timer.schedule(
            session_key(group_id, member_id),
            self.settings.share_group(group_id).session_timeout_ms,
            lambda: self._fence_by_timer(group_id, member_id),
        )

    # ----- hooks used by the shard -----------------------------------------------------------------

    def on_loaded(self, group: ShareGroup) -> None:
        for member_id in group.members:
            self._schedule_session_timeout(group.group_id, member_id)

    def on_removed(self, group: ShareGroup) -> None:
        for member_id in group.members:
            self.timer.cancel(session_key(group.group_id, member_id))

    def tombstones(self, group: ShareGroup) -> list[CoordinatorRecord]:
        """DeleteGroups of an empty share group: what is left of its members, then the group's own."""
        records: list[CoordinatorRecord] = []
        for member_id in set(group.target) | set(group.members):
            records += sr.member_tombstones(group.group_id, member_id)
        return [*records, *sr.group_tombstones(group.group_id)]

    # ----- assignment ------------------------------------------------------------------------------

    def _targets(self, group: ShareGroup, members: dict[str, ShareMember]) -> dict[str, Partitions]:
        """The initialised partitions of the subscribed topics, spread over the members."""
        subscribed = self._subscribed_partitions(members.values())
        assignable = {
            topic_id: assignable
            for topic_id, partitions in subscribed.items()
            if (assignable := partitions & group.initialized.get(topic_id, ("", frozenset()))[1])
        }
        specs = {
            member_id: MemberSpec(
                frozenset(
                    t for name in member.subscribed_topic_names if (t := self._topic_id(name)) is not None
                ),
                group.target.get(member_id, {}),
            )
            for member_id, member in members.items()
        }
        return share_assignor.assign(specs, assignable)

    def _topic_id(self, name: str) -> uuid.UUID | None:
        described = self.topics.topic(name)
        return None if described is None else described.topic_id

    def _subscribed_partitions(self, members: Iterable[ShareMember]) -> Partitions:
        partitions: Partitions = {}
        for name in {n for m in members for n in m.subscribed_topic_names}:
            described = self.topics.topic(name)
            if described is not None:
                partitions[described.topic_id] = frozenset(range(len(described.partitions)))
        return partitions

    def _metadata_hash(self, members: Iterable[ShareMember]) -> int:
        """A hash of the subscribed topics (name, id, partition count): a change rebalances the group."""
        digest = hashlib.blake2b(digest_size=8)
        for name in sorted({n for m in members for n in m.subscribed_topic_names}):
            described = self.topics.topic(name)
            if described is not None:
                digest.update(f"{name}\0{described.topic_id}\0{len(described.partitions)}\n".encode())
        return int.from_bytes(digest.digest(), "big", signed=True)


def _validate(request: ShareGroupHeartbeatRequest) -> None:
    """Kafka's throwIfShareGroupHeartbeatRequestIsInvalid."""
    if not request.group_id:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "GroupId can't be empty.")
    if request.rack_id == "":
        raise KafkaError(ErrorCode.INVALID_REQUEST, "RackId can't be empty.")
    if not request.member_id:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "MemberId can't be empty.")
    if request.member_epoch == 0:
        if not request.subscribed_topic_names:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "SubscribedTopicNames must be set in first request.")
    elif request.member_epoch < LEAVE_GROUP_MEMBER_EPOCH:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "MemberEpoch is invalid.")


def _topic_partitions(assigned: Partitions) -> list[TopicPartitions]:
    return [
        TopicPartitions(topic_id=topic_id, partitions=sorted(partitions))
        for topic_id, partitions in sorted(assigned.items())
        if partitions
    ]
