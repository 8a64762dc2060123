"""A partition leader's view of its followers: their log end offsets, when each last caught up, the
high watermark they allow, and which of them belong in the ISR (Kafka's Partition and Replica).

Pure state and rules, no I/O: the replica manager feeds it the followers' fetches and a clock, and
sends the ISR changes it proposes through the `IsrUpdater`.

Kafka's rules (3.9, ZooKeeper mode):
- A follower's fetch at `fetch_offset` when the leader's log ends at `leader_end`: it caught up now if
  `fetch_offset >= leader_end`, else at its previous fetch if `fetch_offset` reaches the leader's end
  at that previous fetch (Replica.updateFetchStateOrThrow).
- The high watermark is the lowest log end over the leader and the maximal ISR (the committed ISR,
  plus the replica a pending expansion adds), and never moves backwards.
- A follower leaves the ISR when it has not caught up for `replica.lag.time.max.ms`; it joins when its
  log end reaches the high watermark and the start of the leader's current epoch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

#: A follower whose log end the leader has not learnt yet (Kafka's UnifiedLog.UnknownOffset).
UNKNOWN_OFFSET = -1


@dataclass(slots=True)
class FollowerProgress:
    """What a leader knows of one follower since it became leader (Kafka's Replica state)."""

    log_end_offset: int = UNKNOWN_OFFSET
    #: The follower's log start, from its fetches (v5+): a consumer is sent there only above it.
    log_start_offset: int = UNKNOWN_OFFSET
    #: When the follower last fetched up to the leader's log end; 0 for one not in sync.
    last_caught_up_ms: int = 0
    last_fetch_leader_end: int = UNKNOWN_OFFSET
    last_fetch_ms: int = 0
    #: The broker epoch the follower's last fetch carried (Fetch v15+, KIP-903), else UNKNOWN_OFFSET.
    broker_epoch: int = UNKNOWN_OFFSET

    def is_caught_up(self, leader_end: int, now_ms: int, lag_time_max_ms: int) -> bool:
        """Kafka's Replica.isCaughtUp: at the leader's end, or caught up within the lag."""
        return self.log_end_offset == leader_end or now_ms - self.last_caught_up_ms <= lag_time_max_ms

    def record_fetch(
        self,
        fetch_offset: int,
        leader_end: int,
        now_ms: int,
        log_start_offset: int = UNKNOWN_OFFSET,
        broker_epoch: int = UNKNOWN_OFFSET,
    ) -> None:
        if fetch_offset >= leader_end:
            self.last_caught_up_ms = max(self.last_caught_up_ms, now_ms)
        elif fetch_offset >= self.last_fetch_leader_end:
            self.last_caught_up_ms = max(self.last_caught_up_ms, self.last_fetch_ms)
        self.log_end_offset = fetch_offset
        self.log_start_offset = log_start_offset
        self.last_fetch_leader_end = leader_end
        self.last_fetch_ms = now_ms
        self.broker_epoch = broker_epoch


@dataclass(slots=True)
class LeaderState:
    """One led partition's followers, and the ISR change in flight (at most one)."""

    node_id: int
    isr: tuple[int, ...]
    followers: dict[int, FollowerProgress] = field(default_factory=dict)
    #: The ISR proposed to the controller and not answered yet (Kafka's PendingExpandIsr /
    #: PendingShrinkIsr); None when nothing is in flight.
    pending_isr: tuple[int, ...] | None = None

    @classmethod
    def on_become_leader(cls, node_id: int, replicas: list[int], isr: list[int], now_ms: int) -> LeaderState:
        """Kafka's makeLeader: followers in the ISR count as caught up now, the others never were."""
        followers = {
            replica: FollowerProgress(last_caught_up_ms=now_ms if replica in isr else 0)
            for replica in replicas
            if replica != node_id
        }
        return cls(node_id=node_id, isr=tuple(isr), followers=followers)

    def keep_progress_of(self, earlier: LeaderState, leader_end: int, now_ms: int) -> None:
        """Kafka's Replica.resetReplicaState for a leader re-elected at a new epoch: the followers'
        log ends carry over from the earlier epoch, but only those in the new ISR count as caught up
        (now). A follower the controller has taken out of the ISR (a broker in controlled shutdown)
        does not hold the high watermark back with a catch-up time from before."""
        for replica, progress in self.followers.items():
            before = earlier.followers.get(replica)
            if before is None:
                continue
            in_sync = replica in self.isr
            progress.log_end_offset = before.log_end_offset
            progress.log_start_offset = before.log_start_offset
            progress.broker_epoch = before.broker_epoch
            progress.last_fetch_leader_end = leader_end
            progress.last_fetch_ms = now_ms if in_sync else 0
            progress.last_caught_up_ms = now_ms if in_sync else 0

    @property
    def maximal_isr(self) -> tuple[int, ...]:
        """The ISR the high watermark waits for: a pending expansion counts already, a pending shrink
        not yet (the controller may refuse it)."""
        if self.pending_isr is None:
            return self.isr
        return tuple(dict.fromkeys((*self.isr, *self.pending_isr)))

    def high_watermark(
        self,
        leader_end: int,
        now_ms: int,
        lag_time_max_ms: int,
        eligible: Callable[[int], bool] = lambda _replica: True,
    ) -> int:
        """The lowest log end over the leader and the maximal ISR (a follower not heard from yet holds
        it at UNKNOWN_OFFSET, below any real offset), and over the followers outside it that are caught
        up and `eligible` to join it (Kafka's shouldWaitForReplicaToJoinIsr: under steady appends a
        follower could otherwise never reach the high watermark to rejoin; isReplicaIsrEligible: a
        dead broker's replica, just removed from the ISR by the controller, is not waited for)."""
        ends = [leader_end]
        maximal = self.maximal_isr
        for replica in maximal:
            if replica != self.node_id and replica not in self.followers:
                ends.append(UNKNOWN_OFFSET)
        for replica, progress in self.followers.items():
            if replica in maximal or (
                progress.is_caught_up(leader_end, now_ms, lag_time_max_ms) and eligible(replica)
            ):
                ends.append(progress.log_end_offset)
        return min(ends)

    def out_of_sync(self, now_ms: int, lag_time_max_ms: int) -> list[int]:
        """The ISR followers that have not caught up within `lag_time_max_ms`."""
        return [
            replica
            for replica in self.isr
            if replica != self.node_id
            and now_ms - self.followers.get(replica, FollowerProgress()).last_caught_up_ms > lag_time_max_ms
        ]

    def may_join_isr(self, replica: int, high_watermark: int, leader_epoch_start_offset: int) -> bool:
        """Kafka's isFollowerInSync for a replica outside the ISR: caught up to the HW and to the
        leader's log end when it applied its current LeaderAndIsr (Kafka's leaderEpochStartOffsetOpt),
        so it holds everything this leader may have acknowledged. Not the start of the epoch in the
        epoch cache: a leader restarted at the same epoch held records above that start, and above
        its checkpointed HW, some of them maybe acknowledged."""
        progress = self.followers.get(replica)
        if progress is None or replica in self.isr:
            return False
        end = progress.log_end_offset
        return end >= high_watermark and end >= leader_epoch_start_offset
