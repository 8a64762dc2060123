"""A KIP-932 share group: members, epochs, target assignments, rebuilt from records (types 10-15).

A share group has no revocation: every member may read every partition it is assigned at once (the
share partitions hand each record to one member at a time), so a member's epoch moves straight to
the target's. Which partitions have share-group state on the share coordinators is kept too (type
15): the coordinator initialises the state of a partition when the group is first assigned it.
"""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass, field, replace
from typing import Any, Final

from odradek.coordinator import share_records as sr
from odradek.coordinator.consumer_records import from_topic_partitions
from odradek.coordinator.records import CoordinatorRecord

Partitions = dict[uuid.UUID, frozenset[int]]
LEAVE_GROUP_MEMBER_EPOCH: Final = -1


@dataclass(frozen=True)
class ShareMember:
    member_id: str
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    member_epoch: int = 0
    previous_member_epoch: int = 0
    assigned: Partitions = field(default_factory=dict)

    def metadata_value(self) -> sr.ShareGroupMemberMetadataValue:
        return sr.ShareGroupMemberMetadataValue(
            rack_id=self.rack_id,
            client_id=self.client_id,
            client_host=self.client_host,
            subscribed_topic_names=sorted(self.subscribed_topic_names),
        )


class ShareGroupState(enum.Enum):
    EMPTY = "Empty"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(eq=False)
class ShareGroup:
    group_id: str
    group_epoch: int = 0
    metadata_hash: int = 0
    assignment_epoch: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)
    target: dict[str, Partitions] = field(default_factory=dict)
    #: Partitions whose share-group state the share coordinators hold, by topic id: (name, partitions).
    initialized: dict[uuid.UUID, tuple[str, frozenset[int]]] = field(default_factory=dict)

    @property
    def state(self) -> ShareGroupState:
        return ShareGroupState.STABLE if self.members else ShareGroupState.EMPTY

    @property
    def state_name(self) -> str:
        return self.state.value

    @property
    def is_empty(self) -> bool:
        return not self.members

    def subscribed_topic_names(self) -> set[str]:
        return {name for member in self.members.values() for name in member.subscribed_topic_names}

    def is_subscribed_to_topic(self, topic: str) -> bool:
        return topic in self.subscribed_topic_names()

    def uninitialized(self, assignment: Partitions) -> Partitions:
        """The partitions of `assignment` whose share-group state is not initialised yet."""
        missing: Partitions = {}
        for topic_id, partitions in assignment.items():
            known = self.initialized.get(topic_id, ("", frozenset()))[1]
            if partitions - known:
                missing[topic_id] = frozenset(partitions - known)
        return missing

    # ----- replay --------------------------------------------------------------------------------

    def replay(self, record: CoordinatorRecord) -> None:
        """One share group record (the caller has made or found the group)."""
        key: Any = record.key
        value: Any = record.value
        kind = record.record_type
        if kind == sr.SHARE_GROUP_METADATA:
            if value is not None:
                self.group_epoch = value.epoch
                self.metadata_hash = value.metadata_hash
        elif kind == sr.SHARE_GROUP_MEMBER_METADATA:
            self._replay_member_metadata(key.member_id, value)
        elif kind == sr.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA:
            if value is not None:
                self.assignment_epoch = value.assignment_epoch
        elif kind == sr.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER:
            if value is None:
                self.target.pop(key.member_id, None)
            else:
                self.target[key.member_id] = from_topic_partitions(value.topic_partitions)
        elif kind == sr.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT:
            self._replay_current_assignment(key.member_id, value)
        elif kind == sr.SHARE_GROUP_STATE_PARTITION_METADATA:
            self.initialized = {}
            for topic in [] if value is None else value.initialized_topics:
                self.initialized[topic.topic_id] = (topic.topic_name, frozenset(topic.partitions))

    def _replay_member_metadata(self, member_id: str, value: sr.ShareGroupMemberMetadataValue | None) -> None:
        if value is None:
            self.members.pop(member_id, None)
            return
        old = self.members.get(member_id, ShareMember(member_id))
        self.members[member_id] = replace(
            old,
            rack_id=value.rack_id,
            client_id=value.client_id,
            client_host=value.client_host,
            subscribed_topic_names=tuple(value.subscribed_topic_names),
        )

    def _replay_current_assignment(
        self, member_id: str, value: sr.ShareGroupCurrentMemberAssignmentValue | None
    ) -> None:
        old = self.members.get(member_id)
        if old is None:
            return  # its metadata is gone already
        if value is None:
            self.members[member_id] = replace(
                old,
                member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                previous_member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                assigned={},
            )
        else:
            self.members[member_id] = replace(
                old,
                member_epoch=value.member_epoch,
                previous_member_epoch=value.previous_member_epoch,
                assigned=from_topic_partitions(value.assigned_partitions),
            )
