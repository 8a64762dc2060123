"""A follower's side of its fetch session with one leader (KIP-227; Kafka's FetchSessionHandler).

A follower fetching hundreds of partitions from a leader would name all of them in every Fetch, and the
leader would answer all of them, most with nothing new. With a session the leader remembers them: the
first fetch is full (epoch 0, asking for a session), the next ones are incremental (the session's id and
epoch), naming only the partitions whose position moved since the leader last saw it, and the leader
answers only the partitions with something new (records, a moved high watermark or log start, an error,
a divergence).

What is kept simple, and why it is safe: any change of the set of partitions fetched (one added,
removed, moved to a new leader epoch, backed off after an error) or any doubt about what the leader
holds (a lost connection, an abandoned fetch, a session error, an answer not applied) starts a new
session with a full fetch, naming the old session so that the leader drops it. Those are rare next to
the fetches in between; Kafka forgets and adds single partitions instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.fetch_session_epochs import INITIAL_EPOCH, next_epoch

#: The leader's answers that end the session at its side: the next fetch is full.
SESSION_ERRORS = frozenset({ErrorCode.FETCH_SESSION_ID_NOT_FOUND, ErrorCode.INVALID_FETCH_SESSION_EPOCH})

#: (fetch offset, log start offset, last fetched epoch): what the leader's session holds of a partition.
Position = tuple[int, int, int]


class Fetched(Protocol):
    """A partition as the fetcher follows it (replica_fetcher.FetchState)."""

    @property
    def key(self) -> tuple[str, int]: ...


S = TypeVar("S", bound=Fetched)


@dataclass(slots=True)
class FetchPlan(Generic[S]):
    """One Fetch of a session: its id and epoch, and the partitions it names (all of them when full)."""

    session_id: int
    epoch: int
    named: list[S]
    #: The position each named partition is sent at, recorded as the leader's once it answers.
    positions: dict[tuple[str, int], Position]
    full: bool


@dataclass(slots=True)
class FollowerFetchSession(Generic[S]):
    #: The leader's id for the session; 0 while there is none.
    session_id: int = 0
    #: The epoch the next incremental fetch carries.
    epoch: int = INITIAL_EPOCH
    #: The fetch version the session was opened at (topics by id from v13: the leader keys them so).
    version: int = -1
    #: The partitions the leader's session holds (the objects, so that a replaced one counts as new),
    #: and the position it holds for each.
    members: dict[tuple[str, int], S] = field(default_factory=dict)
    held: dict[tuple[str, int], Position] = field(default_factory=dict)

    def plan(self, fetched: list[tuple[S, Position]], version: int) -> FetchPlan[S]:
        """The next Fetch for `fetched` (each partition with its position now) at `version`."""
        same_members = len(fetched) == len(self.members) and all(
            self.members.get(state.key) is state for state, _ in fetched
        )
        if self.session_id == 0 or self.epoch == INITIAL_EPOCH or version != self.version or not same_members:
            self.restart()
            self.version = version
            self.members = {state.key: state for state, _ in fetched}
            named = [state for state, _ in fetched]
            positions = {state.key: position for state, position in fetched}
            return FetchPlan(self.session_id, INITIAL_EPOCH, named, positions, full=True)
        moved = [(state, position) for state, position in fetched if self.held.get(state.key) != position]
        return FetchPlan(
            self.session_id,
            self.epoch,
            [state for state, _ in moved],
            {state.key: position for state, position in moved},
            full=False,
        )

    def answered(self, plan: FetchPlan[S], error_code: int, session_id: int) -> None:
        """The leader answered `plan` (whole, before any of it is applied)."""
        if error_code in SESSION_ERRORS:
            self.forget()
            return
        if error_code != ErrorCode.NONE:
            self.restart()
            return
        if plan.full:
            # 0: the leader keeps no session for us (its cache is full or sessions are off); ask again
            # with the next full fetch.
            self.session_id, self.epoch, self.held = session_id, 1 if session_id else INITIAL_EPOCH, {}
        else:
            self.epoch = next_epoch(self.epoch)
        self.held.update(plan.positions)

    def restart(self) -> None:
        """The next fetch is full and replaces the session (the leader drops the one it names)."""
        self.epoch = INITIAL_EPOCH
        self.members, self.held = {}, {}

    def forget(self) -> None:
        """The leader has no such session: the next fetch is full and names none."""
        self.restart()
        self.session_id = 0
