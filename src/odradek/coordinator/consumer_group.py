"""A KIP-848 consumer group: members, epochs, target and current assignments, rebuilt from records.

Everything here is the replay of the group's records (types 3, 5, 6, 7, 8, 16): the group epoch moves
when membership or subscriptions change, the target assignment is computed for that epoch, and each
member reconciles towards its target (revoking first, then taking partitions nobody owns any more),
which its own epoch and state track. A regex subscription counts with the topics its last resolution
found (consumer_regexes), not with a match made at each heartbeat.
"""

from __future__ import annotations

import enum
import uuid
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Final

from odradek.coordinator.consumer_records import (
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupRegularExpressionValue,
    from_topic_partitions,
)

Partitions = dict[uuid.UUID, frozenset[int]]
LEAVE_GROUP_MEMBER_EPOCH: Final = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH: Final = -2


class MemberState(enum.IntEnum):
    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127


@dataclass(frozen=True)
class ConsumerMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned: Partitions = field(default_factory=dict)
    pending_revocation: Partitions = field(default_factory=dict)

    def metadata_value(self) -> ConsumerGroupMemberMetadataValue:
        return ConsumerGroupMemberMetadataValue(
            instance_id=self.instance_id,
            rack_id=self.rack_id,
            client_id=self.client_id,
            client_host=self.client_host,
            subscribed_topic_names=sorted(self.subscribed_topic_names),
            subscribed_topic_regex=self.subscribed_topic_regex,
            rebalance_timeout_ms=self.rebalance_timeout_ms,
            server_assignor=self.server_assignor,
        )

    def same_metadata(self, other: ConsumerMember) -> bool:
        return self.metadata_value() == other.metadata_value()

    def same_assignment(self, other: ConsumerMember) -> bool:
        return (
            self.member_epoch == other.member_epoch
            and self.previous_member_epoch == other.previous_member_epoch
            and self.state == other.state
            and self.assigned == other.assigned
            and self.pending_revocation == other.pending_revocation
        )

    def with_epoch(self, epoch: int) -> ConsumerMember:
        """Kafka's updateMemberEpoch: the previous epoch remembers where the member came from."""
        return replace(self, previous_member_epoch=self.member_epoch, member_epoch=epoch)


@dataclass(frozen=True)
class ResolvedRegex:
    """A subscribed regex's topics, as last resolved."""

    topics: frozenset[str]
    #: The cache's topic creation count it was resolved at; -1 when read back from the log (another
    #: broker's count, or an earlier run's): resolved again at the next chance.
    version: int
    timestamp_ms: int


class ConsumerGroupState(enum.Enum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(eq=False)
class ConsumerGroup:
    group_id: str
    group_epoch: int = 0
    metadata_hash: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    target: dict[str, Partitions] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)
    #: Who currently owns each partition (assigned or still revoking it).
    owners: dict[tuple[uuid.UUID, int], str] = field(default_factory=dict)
    #: The members' regexes as last resolved (records of type 16).
    resolved_regexes: dict[str, ResolvedRegex] = field(default_factory=dict)

    @property
    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        for member in self.members.values():
            if member.member_epoch != self.assignment_epoch or member.state is not MemberState.STABLE:
                return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    @property
    def state_name(self) -> str:
        return self.state.value

    @property
    def is_empty(self) -> bool:
        return not self.members

    def static_member(self, instance_id: str) -> ConsumerMember | None:
        member_id = self.static_members.get(instance_id)
        return self.members.get(member_id) if member_id is not None else None

    def subscribed_topic_names(self) -> set[str]:
        """Every topic a member subscribes to, by name or through its regex's last resolution."""
        names = {name for m in self.members.values() for name in m.subscribed_topic_names}
        for regex in self.subscribed_regexes():
            resolved = self.resolved_regexes.get(regex)
            if resolved is not None:
                names |= resolved.topics
        return names

    def is_subscribed_to_topic(self, topic: str) -> bool:
        return topic in self.subscribed_topic_names()

    def subscribed_regexes(self, members: Iterable[ConsumerMember] | None = None) -> Counter[str]:
        """How many of the members (the group's by default) subscribe to each regex."""
        chosen = self.members.values() if members is None else members
        return Counter(m.subscribed_topic_regex for m in chosen if m.subscribed_topic_regex)

    @property
    def last_regex_refresh_ms(self) -> int | None:
        """When the regexes were last resolved (they are resolved together); None if never."""
        return max((r.timestamp_ms for r in self.resolved_regexes.values()), default=None)

    def regexes_resolved_before(self, version: int) -> bool:
        """Whether a resolution predates the cache's topic creation count `version`."""
        return any(r.version < version for r in self.resolved_regexes.values())

    def owner(self, topic_id: uuid.UUID, partition: int) -> str | None:
        return self.owners.get((topic_id, partition))

    # ----- replay --------------------------------------------------------------------------------

    def replay_member_metadata(self, member_id: str, value: ConsumerGroupMemberMetadataValue | None) -> None:
        if value is None:
            self._remove_member(member_id)
            return
        old = self.members.get(member_id, ConsumerMember(member_id))
        member = replace(
            old,
            instance_id=value.instance_id,
            rack_id=value.rack_id,
            client_id=value.client_id,
            client_host=value.client_host,
            subscribed_topic_names=tuple(value.subscribed_topic_names),
            subscribed_topic_regex=value.subscribed_topic_regex,
            rebalance_timeout_ms=value.rebalance_timeout_ms,
            server_assignor=value.server_assignor,
        )
        self._put_member(member)

    def replay_current_assignment(
        self, member_id: str, value: ConsumerGroupCurrentMemberAssignmentValue | None
    ) -> None:
        old = self.members.get(member_id)
        if old is None:
            return  # its metadata is gone already (compaction may drop the order's first half)
        if value is None:
            member = replace(
                old,
                member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                previous_member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                assigned={},
                pending_revocation={},
            )
        else:
            member = replace(
                old,
                member_epoch=value.member_epoch,
                previous_member_epoch=value.previous_member_epoch,
                state=MemberState(value.state)
                if value.state in MemberState._value2member_map_
                else MemberState.UNKNOWN,
                assigned=from_topic_partitions(value.assigned_partitions),
                pending_revocation=from_topic_partitions(value.partitions_pending_revocation),
            )
        self._put_member(member)

    def replay_resolved_regex(self, regex: str, value: ConsumerGroupRegularExpressionValue | None) -> None:
        if value is None:
            self.resolved_regexes.pop(regex, None)
        else:
            self.resolved_regexes[regex] = ResolvedRegex(
                frozenset(value.topics), value.version, value.timestamp
            )

    def forget_regex_versions(self) -> None:
        """After a load: the versions read are not this cache's, so each regex is resolved again."""
        self.resolved_regexes = {
            regex: replace(resolved, version=-1) for regex, resolved in self.resolved_regexes.items()
        }

    def replay_target_assignment(self, member_id: str, assignment: Partitions | None) -> None:
        if assignment is None:
            self.target.pop(member_id, None)
        else:
            self.target[member_id] = assignment

    def _put_member(self, member: ConsumerMember) -> None:
        old = self.members.get(member.member_id)
        if old is not None:
            self._release(old)
            if old.instance_id is not None and self.static_members.get(old.instance_id) == old.member_id:
                del self.static_members[old.instance_id]
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id
        for partitions in (member.assigned, member.pending_revocation):
            for topic_id, numbers in partitions.items():
                for number in numbers:
                    self.owners[(topic_id, number)] = member.member_id

    def _remove_member(self, member_id: str) -> None:
        member = self.members.pop(member_id, None)
        if member is None:
            return
        self._release(member)
        if member.instance_id is not None and self.static_members.get(member.instance_id) == member_id:
            del self.static_members[member.instance_id]

    def _release(self, member: ConsumerMember) -> None:
        for partitions in (member.assigned, member.pending_revocation):
            for topic_id, numbers in partitions.items():
                for number in numbers:
                    if self.owners.get((topic_id, number)) == member.member_id:
                        del self.owners[(topic_id, number)]
