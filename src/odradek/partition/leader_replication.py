"""The leader's half of replication for every partition led here (Kafka's Partition): followers'
positions from their fetches, the high watermark over the maximal ISR (never backwards), and ISR
changes proposed through the `IsrUpdater` (AlterPartition), one in flight per partition. A refused
change stays pending (the maximal ISR counts it) until the controller's next LeaderAndIsr, unless the
controller says it wrote nothing (Kafka's handleAlterPartitionError).

The replica manager owns the led partitions (`leading`) and calls `on_become_leader` as it applies a
LeaderAndIsr; the fetch handler calls `is_replica` and `record_follower_fetch`, and for consumers
`preferred_read_replica` (KIP-392, `replica.selector.class`); the broker runs
`run_isr_shrinks` and wires `isr_updater` and `on_high_watermark`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping

from odradek.config.catalog_cluster import RACK_AWARE_SELECTOR
from odradek.partition.hosted_partition import HostedPartition, PartitionKey
from odradek.partition.isr_updates import CommittedIsr, IsrUpdateFailed, IsrUpdater, ProposedIsr
from odradek.partition.leader_state import LeaderState
from odradek.partition.ports import ReplicaDirectory
from odradek.partition.replica_selector import (
    NO_PREFERRED_REPLICA,
    ReplicaView,
    select_read_replica,
)
from odradek.protocol.error_codes import ErrorCode
from odradek.storage.partition import TopicPartition
from odradek.tasks.cancelling import cancel_and_wait

log = logging.getLogger("odradek.cluster.replicas")

#: The refusals that say a proposal was not written, and never will be by any controller (Kafka's
#: handleAlterPartitionError): the leader goes back to its committed ISR.
_NOT_WRITTEN = frozenset({ErrorCode.OPERATION_NOT_ATTEMPTED, ErrorCode.INELIGIBLE_REPLICA})
#: The refusals after which the leader keeps its pending ISR until the controller's next LeaderAndIsr
#: (Kafka's): the proposal may have been written by an attempt whose answer was lost. Any other error
#: is sent again, until then. BROKER_NOT_AVAILABLE (ours): this broker is stopping.
_AWAIT_LEADER_AND_ISR = frozenset(
    {
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.INVALID_UPDATE_VERSION,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.UNKNOWN_TOPIC_ID,
        ErrorCode.INVALID_REQUEST,
        ErrorCode.NEW_LEADER_ELECTED,
        ErrorCode.BROKER_NOT_AVAILABLE,
    }
)
#: The pause before an ISR change refused with an unexpected error is sent again, doubling up to the max.
ISR_CHANGE_RETRY_S = 0.1
ISR_CHANGE_RETRY_MAX_S = 1.0


class LeaderReplication:
    def __init__(
        self,
        node_id: int,
        cluster: ReplicaDirectory,
        leading: Mapping[PartitionKey, HostedPartition],
        *,
        on_high_watermark: Callable[[TopicPartition], None] | None = None,
        replica_lag_time_max_ms: int = 30_000,
        replica_selector_class: str | None = None,
        min_insync_replicas: Callable[[str], int] | None = None,
    ) -> None:
        self.node_id = node_id
        self.cluster = cluster
        self.leading = leading
        #: Sends ISR changes to the controller (AlterPartition). None: no ISR change is proposed.
        self.isr_updater: IsrUpdater | None = None
        #: Called when a led partition's high watermark moved (wakes delayed fetches and acks=all waits).
        self.on_high_watermark = on_high_watermark
        #: `replica.lag.time.max.ms`: how long a follower may go without catching up and stay in the ISR.
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        #: A topic's `min.insync.replicas` (its config, else the broker's); None: 1.
        self.min_insync_replicas: Callable[[str], int] = min_insync_replicas or (lambda _topic: 1)
        self.clock_ms: Callable[[], int] = lambda: int(time.time() * 1000)
        #: Waits the pause before an ISR change is sent again (tests record it instead).
        self.pause: Callable[[float], Awaitable[None]] = asyncio.sleep
        #: `replica.selector.class` (KIP-392): None or LeaderSelector keep consumers on the leader.
        self.replica_selector_class = replica_selector_class
        self._isr_changes: set[asyncio.Task[None]] = set()

    def on_resign(self, topic: str, partition: int) -> None:
        """This broker no longer leads the partition: as Kafka's makeFollower, its delayed acks=all
        produces and fetches are completed now (NOT_LEADER_OR_FOLLOWER) rather than at their timeout,
        so clients move to the new leader at once instead of after request.timeout.ms."""
        if self.on_high_watermark is not None:
            self.on_high_watermark(TopicPartition(topic, partition))

    def on_new_epoch(self, topic: str, partition: int) -> None:
        """A LeaderAndIsr moved the partition to a new leader epoch here: what waits on it checks
        again now (Kafka's completeDelayedFetchOrProduceRequests and DelayedFetch's fenced-epoch case).
        A follower's fetch parked at the earlier epoch is answered FENCED_LEADER_EPOCH at once, so the
        follower fetches again at the new epoch instead of after replica.fetch.wait.max.ms; the high
        watermark, and the acks=all produces waiting on it, need that fetch."""
        if self.on_high_watermark is not None:
            self.on_high_watermark(TopicPartition(topic, partition))

    def on_become_leader(self, hosted: HostedPartition, before: LeaderState | None) -> None:
        """Kafka's makeLeader: followers in the ISR count as caught up now. A leader that was leader
        already (a new epoch, another ISR) keeps the log ends the followers' last fetches said, so the
        high watermark need not wait for them again."""
        now_ms = self.clock_ms()
        hosted.leader_state = LeaderState.on_become_leader(self.node_id, hosted.replicas, hosted.isr, now_ms)
        if before is not None:
            hosted.leader_state.keep_progress_of(before, hosted.log.log_end_offset, now_ms)
        self._refresh_high_watermark_rule(hosted)
        if before is not None:
            # A new ISR without a dead follower (the controller took it out) may let the HW move now,
            # and the acks=all produces waiting on it answer (Kafka's makeLeader: maybeIncrementLeaderHW);
            # else they wait for the next append or their timeout.
            self.maybe_advance_high_watermark(hosted)

    def _alive(self, replica: int) -> bool:
        """Whether the controller reports the replica's broker alive (Kafka's isReplicaIsrEligible in
        ZooKeeper mode)."""
        return replica in self.cluster.live_brokers

    def is_replica(self, topic: str, partition: int, replica_id: int) -> bool:
        """Whether `replica_id` may fetch the partition from this leader as a follower."""
        hosted = self.leading.get((topic, partition))
        return hosted is not None and replica_id in hosted.replicas and replica_id != self.node_id

    def in_sync(self, topic: str, partition: int, replica_id: int) -> bool:
        """Whether `replica_id` is in the partition's committed ISR (Kafka's inSyncReplicaIds)."""
        hosted = self.leading.get((topic, partition))
        return hosted is not None and replica_id in hosted.isr

    def record_follower_fetch(
        self,
        topic: str,
        partition: int,
        replica_id: int,
        fetch_offset: int,
        log_start_offset: int = -1,
        broker_epoch: int = -1,
    ) -> None:
        """A follower fetched the partition from `fetch_offset` (its log end), as the broker
        `broker_epoch` (-1 before Fetch v15): Kafka's updateFollowerFetchState, then maybeExpandIsr
        and maybeIncrementLeaderHW."""
        hosted = self.leading.get((topic, partition))
        if hosted is None or hosted.leader_state is None:
            return
        state = hosted.leader_state
        progress = state.followers.get(replica_id)
        if progress is None:
            return
        progress.record_fetch(
            fetch_offset, hosted.log.log_end_offset, self.clock_ms(), log_start_offset, broker_epoch
        )
        # The HW never passes the log end: at it there is nothing to recompute (a fetch session's
        # idle partitions, recorded on every fetch, cost no more than this comparison).
        if hosted.log.high_watermark < hosted.log.log_end_offset:
            self.maybe_advance_high_watermark(hosted)
        if (
            state.pending_isr is None
            and replica_id not in state.isr
            and state.may_join_isr(replica_id, hosted.log.high_watermark, hosted.leader_epoch_start_offset)
            and self._alive(replica_id)  # Kafka's isReplicaIsrEligible: the controller refuses others
        ):
            self._propose_isr(hosted, (*hosted.isr, replica_id))

    def preferred_read_replica(
        self, topic: str, partition: int, client_rack: str, listener: str, fetch_offset: int
    ) -> int:
        """Kafka's findPreferredReadReplica for a consumer's fetch of a partition led here: the in-sync
        follower the selector picks among those holding `fetch_offset` (between their log start and
        end) and reachable on the client's listener, or NO_PREFERRED_REPLICA."""
        if self.replica_selector_class != RACK_AWARE_SELECTOR or not client_rack:
            return NO_PREFERRED_REPLICA  # the common case costs one comparison per partition
        hosted = self.leading.get((topic, partition))
        if hosted is None or hosted.leader_state is None:
            return NO_PREFERRED_REPLICA
        now = self.clock_ms()
        live = self.cluster.live_brokers
        followers = []
        for replica, progress in hosted.leader_state.followers.items():
            broker = live.get(replica)
            if (
                broker is None
                or listener not in broker.endpoints
                or replica not in hosted.isr
                or progress.log_end_offset < fetch_offset
                or progress.log_start_offset > fetch_offset
            ):
                continue
            since = now - progress.last_caught_up_ms
            followers.append(ReplicaView(replica, broker.rack, progress.log_end_offset, since))
        me = live.get(self.node_id)
        leader = ReplicaView(self.node_id, me.rack if me else None, hosted.log.log_end_offset, 0)
        return select_read_replica(self.replica_selector_class, client_rack, leader, followers)

    def on_append(self, partition: object) -> None:
        """After an append to a partition led here: Kafka's maybeIncrementLeaderHW."""
        if isinstance(partition, TopicPartition):
            hosted = self.leading.get((partition.topic, partition.partition))
            # a leader alone in its ISR (every partition of a single node): its log moved the HW already
            if hosted is not None and not hosted.log.auto_high_watermark:
                self.maybe_advance_high_watermark(hosted)

    def under_min_isr(self, hosted: HostedPartition, maximal: bool = False) -> bool:
        """Fewer in-sync replicas than Kafka's effective minimum, min(min.insync.replicas, replication
        factor) (Partition.effectiveMinIsr); `maximal` counts a pending expansion."""
        state = hosted.leader_state
        isr = state.maximal_isr if maximal and state is not None else hosted.isr
        if len(isr) >= len(hosted.replicas):
            return False  # every replica in sync (a single node's always): no minimum is above that
        return len(isr) < min(self.min_insync_replicas(hosted.topic), len(hosted.replicas))

    def maybe_advance_high_watermark(self, hosted: HostedPartition) -> bool:
        """Move the HW up to the lowest log end over the maximal ISR; True (and the waiters woken) when
        it moved. As Kafka 3.7+, not while the ISR is under its minimum: what only fewer replicas hold
        stays invisible. A partition without followers lets its log do this on every append."""
        state = hosted.leader_state
        if state is None or self.under_min_isr(hosted):
            return False
        replica_log = hosted.log
        candidate = state.high_watermark(
            replica_log.log_end_offset, self.clock_ms(), self.replica_lag_time_max_ms, self._alive
        )
        if candidate <= replica_log.high_watermark:
            return False
        replica_log.update_high_watermark(candidate)
        if self.on_high_watermark is not None:
            self.on_high_watermark(TopicPartition(hosted.topic, hosted.partition))
        return True

    def shrink_isrs(self) -> None:
        """Kafka's maybeShrinkIsr (every replica.lag.time.max.ms / 2): propose an ISR without the
        followers that have not caught up within the lag."""
        if self.isr_updater is None:
            return  # nobody to propose to: the ISR changes only by the controller's decisions
        now = self.clock_ms()
        for hosted in list(self.leading.values()):
            state = hosted.leader_state
            if state is None or state.pending_isr is not None:
                continue
            lagging = state.out_of_sync(now, self.replica_lag_time_max_ms)
            if lagging:
                log.info(
                    "shrinking the ISR of %s-%d from %s: %s not caught up within %d ms",
                    hosted.topic,
                    hosted.partition,
                    hosted.isr,
                    lagging,
                    self.replica_lag_time_max_ms,
                )
                self._propose_isr(hosted, tuple(r for r in hosted.isr if r not in lagging))

    async def run_isr_shrinks(self) -> None:
        """The periodic ISR check, until cancelled; a round that fails is logged, the next one runs."""
        while True:
            await asyncio.sleep(max(self.replica_lag_time_max_ms, 2) / 2000)
            try:
                self.shrink_isrs()
            except Exception:
                log.exception("checking the ISRs for followers that fell behind failed")

    async def close(self) -> None:
        """Stop the ISR changes in flight (broker shutdown)."""
        await asyncio.gather(*(cancel_and_wait(task) for task in list(self._isr_changes)))

    def _propose_isr(self, hosted: HostedPartition, new_isr: tuple[int, ...]) -> None:
        state = hosted.leader_state
        if self.isr_updater is None or state is None or state.pending_isr is not None:
            return
        proposal = ProposedIsr(
            topic=hosted.topic,
            topic_id=hosted.topic_id,
            partition=hosted.partition,
            leader_epoch=hosted.leader_epoch,
            new_isr=new_isr,
            partition_epoch=hosted.partition_epoch,
            # Kafka's addBrokerEpochToIsr: what each follower last fetched as (this broker's own is
            # the request's); a member that restarted since is refused by the controller (KIP-903)
            member_epochs={r: p.broker_epoch for r, p in state.followers.items() if r in new_isr},
        )
        state.pending_isr = new_isr
        self._refresh_high_watermark_rule(hosted)
        task = asyncio.get_running_loop().create_task(
            self._submit(hosted, state, proposal), name=f"isr-{hosted.topic}-{hosted.partition}"
        )
        self._isr_changes.add(task)
        task.add_done_callback(self._isr_changes.discard)

    async def _submit(self, hosted: HostedPartition, state: LeaderState, proposal: ProposedIsr) -> None:
        """Kafka's submitAlterPartition and its answer's handling: the pending ISR is dropped when the
        controller committed it (or says it wrote nothing), kept otherwise until the next LeaderAndIsr
        (which makes a new LeaderState), and sent again after an unexpected error."""
        assert self.isr_updater is not None
        pause = ISR_CHANGE_RETRY_S
        while True:
            try:
                committed = await self.isr_updater.submit(proposal)
            except IsrUpdateFailed as error:
                if not self._current(hosted, state):
                    return
                code = error.error_code
                log.info(
                    "ISR change of %s-%d to %s refused: %s",
                    proposal.topic,
                    proposal.partition,
                    list(proposal.new_isr),
                    code.name,
                )
                if code in _NOT_WRITTEN:
                    # The controller says the proposal was not (and can never be) written: as Kafka,
                    # back to the committed ISR.
                    self._drop_pending(hosted, state)
                    return
                if code in _AWAIT_LEADER_AND_ISR:
                    # Maybe written by an earlier attempt whose answer was lost: the maximal ISR stays
                    # (the high watermark keeps counting the replica it adds) until the controller's
                    # next LeaderAndIsr replaces this state.
                    return
            except Exception as error:
                log.warning("ISR change of %s-%d failed", proposal.topic, proposal.partition, exc_info=error)
            else:
                if self._current(hosted, state) and self._apply_committed_isr(hosted, committed):
                    self._drop_pending(hosted, state)
                return  # an answer for another epoch or an older state: pending until LeaderAndIsr
            # Kafka sends it again at once; after a pause here (doubling, at most a second), so that
            # a controller answering an unexpected error every time is not asked in a tight loop.
            await self.pause(pause)
            pause = min(pause * 2, ISR_CHANGE_RETRY_MAX_S)
            if not self._current(hosted, state):
                return

    def _current(self, hosted: HostedPartition, state: LeaderState) -> bool:
        """Whether `state` is still the led partition's (no LeaderAndIsr moved it on meanwhile)."""
        return hosted.leader_state is state and self.leading.get((hosted.topic, hosted.partition)) is hosted

    def _drop_pending(self, hosted: HostedPartition, state: LeaderState) -> None:
        state.pending_isr = None
        self._refresh_high_watermark_rule(hosted)
        self.maybe_advance_high_watermark(hosted)

    def _apply_committed_isr(self, hosted: HostedPartition, committed: CommittedIsr) -> bool:
        """Kafka's handleAlterPartitionUpdate: the committed ISR, unless the answer is for another
        leader epoch or an older partition epoch (False then)."""
        if (
            committed.leader_epoch != hosted.leader_epoch
            or committed.partition_epoch < hosted.partition_epoch
        ):
            return False
        hosted.isr = list(committed.isr)
        hosted.partition_epoch = committed.partition_epoch
        assert hosted.leader_state is not None
        hosted.leader_state.isr = tuple(committed.isr)
        log.info("ISR of %s-%d is now %s", hosted.topic, hosted.partition, hosted.isr)
        self.cluster.follow_isr(
            hosted.topic,
            hosted.topic_id,
            hosted.partition,
            hosted.leader,
            hosted.leader_epoch,
            hosted.replicas,
            hosted.isr,
        )
        return True

    def _refresh_high_watermark_rule(self, hosted: HostedPartition) -> None:
        """A partition with no follower moves its HW with every append (its log does); otherwise the
        leader's appends, its followers' fetches and ISR changes move it (`maybe_advance_...`)."""
        alone = hosted.replicas == [self.node_id]
        hosted.log.auto_high_watermark = alone
        if alone and hosted.log.high_watermark < hosted.log.log_end_offset:
            hosted.log.update_high_watermark(hosted.log.log_end_offset)
            if self.on_high_watermark is not None:
                self.on_high_watermark(TopicPartition(hosted.topic, hosted.partition))
        else:
            self.maybe_advance_high_watermark(hosted)
