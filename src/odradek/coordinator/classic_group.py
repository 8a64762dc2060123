"""A classic group (JoinGroup/SyncGroup protocol): its members, generation, leader and state.

States and the transitions Kafka allows (anything else is a bug and raises):

    Empty ──join──► PreparingRebalance ──all joined──► CompletingRebalance ──leader's sync──► Stable
      ▲                 ▲   │ (no members left)              │ (member change)               │
      └─────────────────┼───┘                                ▼                               │
                        └────────────────────────────────────┴───────────(member change)─────┘
    any state ──(deleted, or unloaded)──► Dead

Members wait in futures: a JoinGroup for the join phase to complete, a SyncGroup for the leader's
assignment. The futures are completed by the coordinator (never awaited here).
"""

from __future__ import annotations

import asyncio
import enum
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Final

from odradek.protocol.codec import decode_from
from odradek.protocol.codec_error import CodecError
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.protocol.messages.consumer_protocol_subscription import ConsumerProtocolSubscription
from odradek.protocol.messages.join_group import JoinGroupResponse, JoinGroupResponseMember
from odradek.protocol.messages.sync_group import SyncGroupResponse

CONSUMER_PROTOCOL_TYPE: Final = "consumer"


class ClassicGroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


_S = ClassicGroupState
VALID_PREVIOUS_STATES: Final[dict[ClassicGroupState, frozenset[ClassicGroupState]]] = {
    _S.EMPTY: frozenset({_S.PREPARING_REBALANCE}),
    _S.PREPARING_REBALANCE: frozenset({_S.STABLE, _S.COMPLETING_REBALANCE, _S.EMPTY}),
    _S.COMPLETING_REBALANCE: frozenset({_S.PREPARING_REBALANCE}),
    _S.STABLE: frozenset({_S.COMPLETING_REBALANCE}),
    _S.DEAD: frozenset(ClassicGroupState),
}


@dataclass(eq=False)
class ClassicMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    #: (name, metadata) in the member's order of preference.
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    join_future: asyncio.Future[JoinGroupResponse] | None = None
    sync_future: asyncio.Future[SyncGroupResponse] | None = None
    #: Joined but not yet through a join phase: expires after the new-member timeout, not the session.
    is_new: bool = False

    @property
    def is_awaiting_join(self) -> bool:
        return self.join_future is not None

    @property
    def is_awaiting_sync(self) -> bool:
        return self.sync_future is not None

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    def metadata(self, protocol: str | None) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        return b""

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        return self.protocols == protocols

    def vote(self, candidates: set[str]) -> str:
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise ValueError(f"member {self.member_id} supports none of {sorted(candidates)}")

    def has_satisfied_heartbeat(self) -> bool:
        """Whether a session expiry should spare the member (it is parked in a rebalance)."""
        if self.is_new:
            return False
        return self.is_awaiting_join or self.is_awaiting_sync


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


@dataclass(eq=False)
class ClassicGroup:
    group_id: str
    #: The coordinator's clock (state timestamps decide when an empty group's offsets expire).
    clock: Callable[[], int] = field(default=wall_clock_ms, repr=False)
    state: ClassicGroupState = ClassicGroupState.EMPTY
    previous_state: ClassicGroupState = ClassicGroupState.DEAD
    state_timestamp_ms: int | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None
    generation_id: int = 0
    leader_id: str | None = None
    members: dict[str, ClassicMember] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)
    pending_join_members: set[str] = field(default_factory=set)
    pending_sync_members: set[str] = field(default_factory=set)
    num_awaiting_join: int = 0
    supported_protocols: Counter[str] = field(default_factory=Counter)
    #: Topics the members subscribe to (consumer protocol), None when unknown.
    subscribed_topics: set[str] | None = None
    #: A member joined during the initial delayed rebalance: extend the delay.
    new_member_added: bool = False

    # ----- state ---------------------------------------------------------------------------------

    def is_in(self, *states: ClassicGroupState) -> bool:
        return self.state in states

    def transition_to(self, state: ClassicGroupState) -> None:
        if self.state not in VALID_PREVIOUS_STATES[state]:
            raise RuntimeError(
                f"group {self.group_id}: illegal transition {self.state.value} -> {state.value}"
            )
        self.previous_state = self.state
        self.state = state
        self.state_timestamp_ms = self.clock()

    def can_rebalance(self) -> bool:
        return self.state in VALID_PREVIOUS_STATES[ClassicGroupState.PREPARING_REBALANCE]

    @property
    def is_empty(self) -> bool:
        return self.state is ClassicGroupState.EMPTY

    @property
    def uses_consumer_protocol(self) -> bool:
        return self.protocol_type == CONSUMER_PROTOCOL_TYPE

    # ----- members -------------------------------------------------------------------------------

    def member(self, member_id: str) -> ClassicMember:
        return self.members[member_id]

    def has_member(self, member_id: str) -> bool:
        return member_id in self.members

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def is_pending_member(self, member_id: str) -> bool:
        return member_id in self.pending_join_members

    def static_member_id(self, group_instance_id: str) -> str | None:
        return self.static_members.get(group_instance_id)

    def add(
        self, member: ClassicMember, join_future: asyncio.Future[JoinGroupResponse] | None = None
    ) -> None:
        if member.group_instance_id is not None:
            if member.group_instance_id in self.static_members:
                raise RuntimeError(f"static member {member.group_instance_id} is already in {self.group_id}")
            self.static_members[member.group_instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.protocol_type != member.protocol_type:
            raise RuntimeError("the group and member's protocol type must be the same")
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self.supported_protocols.update(name for name, _ in member.protocols)
        member.join_future = join_future
        if member.is_awaiting_join:
            self.num_awaiting_join += 1
        self.pending_join_members.discard(member.member_id)

    def remove(self, member_id: str) -> None:
        removed = self.members.pop(member_id, None)
        if removed is not None:
            self.supported_protocols.subtract(name for name, _ in removed.protocols)
            if removed.is_awaiting_join:
                self.num_awaiting_join -= 1
            if removed.group_instance_id is not None:
                self.static_members.pop(removed.group_instance_id, None)
        if self.is_leader(member_id):
            self.leader_id = next(iter(self.members), None)
        self.pending_join_members.discard(member_id)
        self.pending_sync_members.discard(member_id)

    def update_member(
        self,
        member: ClassicMember,
        protocols: list[tuple[str, bytes]],
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        join_future: asyncio.Future[JoinGroupResponse] | None,
    ) -> None:
        self.supported_protocols.subtract(name for name, _ in member.protocols)
        member.protocols = protocols
        self.supported_protocols.update(name for name, _ in protocols)
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        if join_future is not None and not member.is_awaiting_join:
            self.num_awaiting_join += 1
        elif join_future is None and member.is_awaiting_join:
            self.num_awaiting_join -= 1
        member.join_future = join_future

    def replace_static_member(
        self, group_instance_id: str, old_member_id: str, new_member_id: str
    ) -> ClassicMember:
        """Give a static member a new member id; whoever waits under the old id is fenced."""
        old = self.members.pop(old_member_id)
        self.complete_join(old, fenced_join_response(old_member_id))
        self.complete_sync(old, SyncGroupResponse(error_code=ErrorCode.FENCED_INSTANCE_ID, assignment=b""))
        new = ClassicMember(
            member_id=new_member_id,
            group_instance_id=old.group_instance_id,
            client_id=old.client_id,
            client_host=old.client_host,
            rebalance_timeout_ms=old.rebalance_timeout_ms,
            session_timeout_ms=old.session_timeout_ms,
            protocol_type=old.protocol_type,
            protocols=old.protocols,
            assignment=old.assignment,
        )
        self.members[new_member_id] = new
        if self.is_leader(old_member_id):
            self.leader_id = new_member_id
        self.static_members[group_instance_id] = new_member_id
        return new

    def validate_member(self, member_id: str, group_instance_id: str | None) -> None:
        """UNKNOWN_MEMBER_ID for a stranger, FENCED_INSTANCE_ID for a static member's old id."""
        if group_instance_id is not None:
            existing = self.static_member_id(group_instance_id)
            if existing is None:
                raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID)
            if existing != member_id:
                raise KafkaError(ErrorCode.FENCED_INSTANCE_ID)
        if member_id not in self.members:
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID)

    def not_yet_rejoined(self) -> list[ClassicMember]:
        return [m for m in self.members.values() if not m.is_awaiting_join]

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.num_awaiting_join and not self.pending_join_members

    def maybe_elect_new_joined_leader(self) -> bool:
        """Keep a leader that rejoined, else pick one that did; False if no member rejoined."""
        if self.leader_id is None:
            return False
        if self.members[self.leader_id].is_awaiting_join:
            return True
        for member in self.members.values():
            if member.is_awaiting_join:
                self.leader_id = member.member_id
                return True
        return False

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    # ----- protocols ---------------------------------------------------------------------------

    def supports_protocols(self, protocol_type: str, protocols: Iterable[str]) -> bool:
        names = set(protocols)
        if self.is_empty:
            return bool(protocol_type) and bool(names)
        return self.protocol_type == protocol_type and any(
            self.supported_protocols[name] == len(self.members) for name in names
        )

    def select_protocol(self) -> str:
        """The protocol every member supports that most members prefer (ties: the first voted for)."""
        candidates = {name for name, count in self.supported_protocols.items() if count == len(self.members)}
        votes = Counter(member.vote(candidates) for member in self.members.values())
        return votes.most_common(1)[0][0]

    def init_next_generation(self) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(ClassicGroupState.COMPLETING_REBALANCE)
        else:
            self.protocol_name = None
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(ClassicGroupState.EMPTY)
        self.pending_sync_members.clear()

    def compute_subscribed_topics(self) -> set[str] | None:
        """Topics of the members' consumer-protocol subscriptions, None if not the consumer protocol."""
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return None
        if not self.members:
            return set()
        if self.protocol_name is None:
            return None
        topics: set[str] = set()
        try:
            for member in self.members.values():
                topics.update(subscription_topics(member.metadata(self.protocol_name)))
        except (CodecError, ValueError):
            return None
        return topics

    def is_subscribed_to_topic(self, topic: str) -> bool:
        if self.subscribed_topics is None:
            return self.uses_consumer_protocol
        return topic in self.subscribed_topics

    def current_members(self) -> list[JoinGroupResponseMember]:
        """The members as the leader's JoinGroup response lists them."""
        return [
            JoinGroupResponseMember(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                metadata=m.metadata(self.protocol_name),
            )
            for m in self.members.values()
        ]

    # ----- waiting members -----------------------------------------------------------------------

    def complete_join(self, member: ClassicMember, response: JoinGroupResponse) -> bool:
        future = member.join_future
        if future is None:
            return False
        member.join_future = None
        self.num_awaiting_join -= 1
        if not future.done():
            future.set_result(response)
        return True

    def complete_sync(self, member: ClassicMember, response: SyncGroupResponse) -> bool:
        future = member.sync_future
        if future is None:
            return False
        member.sync_future = None
        if not future.done():
            future.set_result(response)
        return True

    def complete_all_with_error(self, error: ErrorCode) -> None:
        """Answer every waiting JoinGroup and SyncGroup with `error` (the group goes away)."""
        for member_id, member in self.members.items():
            self.complete_join(member, JoinGroupResponse(error_code=error, member_id=member_id))
            self.complete_sync(member, SyncGroupResponse(error_code=error, assignment=b""))


def generate_member_id(prefix: str | None) -> str:
    """Kafka's member ids: the client id (or group instance id) and a random UUID."""
    return f"{prefix or ''}-{uuid.uuid4()}"


def fenced_join_response(member_id: str) -> JoinGroupResponse:
    return JoinGroupResponse(
        error_code=ErrorCode.FENCED_INSTANCE_ID, member_id=member_id, leader="", protocol_name=None
    )


def subscription_topics(metadata: bytes) -> list[str]:
    """The topics of a consumer-protocol subscription, read as version 0 (every version's prefix)."""
    if len(metadata) < 2:
        raise ValueError("consumer protocol metadata without a version")
    subscription, _ = decode_from(ConsumerProtocolSubscription, bytes(metadata), 2, 0)
    return list(subscription.topics)
