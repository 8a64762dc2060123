"""The replica manager: which partitions this broker hosts, and which of them it leads (ZooKeeper mode).

The leadership half of Kafka's ReplicaManager (becomeLeaderOrFollower, stopReplicas,
maybeUpdateMetadataCache). Every control request is
fenced first: a controller epoch older than the newest seen is STALE_CONTROLLER_EPOCH, a broker epoch
older than this broker's registration (its /brokers/ids znode's czxid) STALE_BROKER_EPOCH, both for the
whole request. Then each partition's state applies only when its leader epoch is newer than the one
known. State changes run one request at a time (Kafka's replicaStateChangeLock): log creation and
deletion wait in worker threads, and two requests must not interleave around them.

The data path asks `leader_refusal` once per partition: a hit in `leading` (one dictionary lookup) is
the whole cost of leading the partition at the epoch the client knows. A consumer's Fetch (v11+) asks
`replica_refusal` instead: followers serve consumers too (KIP-392). Whatever appends as leader stamps
`leader_epoch`, the epoch of the LeaderAndIsr applied, never the metadata cache's (cluster/leadership.py).

Replication: a led partition keeps a `LeaderState` of its followers, which `leaders`
(replication/leader_replication.py) feeds from their fetches, moving the high watermark and proposing
ISR changes through `isr_updater`; followed partitions are handed to `fetchers` (the replica fetchers).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from typing import Protocol

from odradek.cluster.control_requests import (
    EPOCH_DURING_DELETE,
    NO_EPOCH,
    UNKNOWN_BROKER_EPOCH,
    ControllerStamp,
    PartitionLeadership,
    StopReplicaPartition,
)
from odradek.cluster.leadership import Refusal
from odradek.cluster.metadata import ClusterMetadata, LiveBroker
from odradek.cluster.metadata_update import apply_update_metadata, follow_leadership
from odradek.cluster.replica_logs import delete_logs, prepare_logs
from odradek.cluster.replication.hosted_partition import HostedPartition, PartitionKey
from odradek.cluster.replication.isr_updates import IsrUpdater
from odradek.cluster.replication.leader_replication import LeaderReplication
from odradek.cluster.replication.truncation_checkpoints import TruncationCheckpoints
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.storage.log import Log
from odradek.storage.log_manager import LogManager

log = logging.getLogger("odradek.cluster.replicas")

#: Kafka's KafkaController.InitialControllerEpoch: any controller epoch is at least this.
INITIAL_CONTROLLER_EPOCH = 0
#: The leader epoch of a partition this broker has heard nothing about yet (Kafka's Partition starts
#: at LeaderAndIsr.InitialLeaderEpoch - 1), so the controller's first epoch, 0, is newer.
UNKNOWN_LEADER_EPOCH = -1


class FollowerFetchers(Protocol):
    """The replica fetchers (cluster/replication/fetcher_manager.py): what the replica manager asks."""

    def add_partitions(self, partitions: list[HostedPartition]) -> None: ...

    def remove_partitions(self, keys: Iterable[PartitionKey]) -> None: ...


class ReplicaManager:
    def __init__(
        self,
        node_id: int,
        cluster: ClusterMetadata,
        logs: LogManager,
        broker_epoch: int = UNKNOWN_BROKER_EPOCH,
        truncation_checkpoints: TruncationCheckpoints | None = None,
    ) -> None:
        self.node_id = node_id
        self.cluster = cluster
        self.logs = logs
        #: What a truncated log waits for before anything appends to it (the broker's, shared with its
        #: storage task and its fetchers; one of its own otherwise).
        self.truncation_checkpoints = truncation_checkpoints or TruncationCheckpoints(logs.flushes)
        #: This broker's epoch: the czxid of its registration znode. The ZooKeeper wiring sets it after
        #: registering (and again after re-registering on a new session).
        self.broker_epoch = broker_epoch
        #: The newest controller epoch seen in any control request.
        self.controller_epoch = INITIAL_CONTROLLER_EPOCH
        #: Every partition with a replica here that a LeaderAndIsr made this broker host.
        self.hosted: dict[PartitionKey, HostedPartition] = {}
        #: The hosted partitions this broker leads: what Produce, Fetch and the offset APIs may serve.
        self.leading: dict[PartitionKey, HostedPartition] = {}
        #: Kafka's onLeadershipChange: called after a LeaderAndIsr or StopReplica with the partitions this
        #: broker began to lead and those it stopped leading (as leader or at all). The wiring hooks the
        #: group coordinator here (GroupCoordinator.refresh_leadership for `__consumer_offsets`).
        self.on_leadership_change: Callable[[list[PartitionKey], list[PartitionKey]], None] | None = None
        #: Called after an UpdateMetadata changed the cache (the wiring gives new cache entries the
        #: topic configs it read from ZooKeeper).
        self.on_metadata_update: Callable[[], None] | None = None
        #: The replica fetchers that follow the partitions led elsewhere (None: nothing is fetched).
        self.fetchers: FollowerFetchers | None = None
        #: Set once this broker asked the controller for its controlled shutdown (see `_fetches`).
        self.leaving = False
        #: The leader's half of replication (followers' positions, high watermark, ISR changes); its
        #: `isr_updater` (also `self.isr_updater`) is where a leader sends ISR changes, set by the wiring.
        self.leaders = LeaderReplication(node_id, cluster, logs.single_node, self.leading)
        self._state_change = asyncio.Lock()

    # ----- the data path -----------------------------------------------------------------------------

    def leader_refusal(
        self, topic: str, partition: int, current_leader_epoch: int = NO_EPOCH
    ) -> Refusal | None:
        """None when this broker leads the partition (at `current_leader_epoch`, if the client gave one,
        KIP-320); otherwise the error to answer with and the leader to point the client to."""
        hosted = self.leading.get((topic, partition))
        if hosted is not None:
            if current_leader_epoch == NO_EPOCH or current_leader_epoch == hosted.leader_epoch:
                return None
            fenced = current_leader_epoch < hosted.leader_epoch
            code = ErrorCode.FENCED_LEADER_EPOCH if fenced else ErrorCode.UNKNOWN_LEADER_EPOCH
            return Refusal(code, hosted.leader, hosted.leader_epoch)
        # As Kafka's Partition.getLocalLog: a replica hosted here is checked against the epoch first, so
        # a fetch at an epoch this follower has not applied yet (it is about to lead) is
        # UNKNOWN_LEADER_EPOCH, an older one FENCED_LEADER_EPOCH; only at its own epoch is it "not leader".
        follower = self.hosted.get((topic, partition))
        epoch = follower.leader_epoch if follower is not None else current_leader_epoch
        if current_leader_epoch != NO_EPOCH and current_leader_epoch != epoch and follower is not None:
            fenced = current_leader_epoch < epoch
            code = ErrorCode.FENCED_LEADER_EPOCH if fenced else ErrorCode.UNKNOWN_LEADER_EPOCH
            return Refusal(code, follower.leader, epoch)
        return self._not_leader(topic, partition)

    def replica_refusal(
        self, topic: str, partition: int, current_leader_epoch: int = NO_EPOCH
    ) -> Refusal | None:
        """As `leader_refusal`, but a follower's replica serves too (KIP-392: a consumer's Fetch v11+
        may read from any replica, up to that replica's high watermark): None when this broker hosts
        the partition at `current_leader_epoch` (if the client gave one), as Kafka's
        localLogWithEpochOrThrow without requireLeader."""
        hosted = self.leading.get((topic, partition)) or self.hosted.get((topic, partition))
        if hosted is None:
            return self._not_leader(topic, partition)
        if current_leader_epoch == NO_EPOCH or current_leader_epoch == hosted.leader_epoch:
            return None
        fenced = current_leader_epoch < hosted.leader_epoch
        code = ErrorCode.FENCED_LEADER_EPOCH if fenced else ErrorCode.UNKNOWN_LEADER_EPOCH
        return Refusal(code, hosted.leader, hosted.leader_epoch)

    def awaits_leader_epoch(self, topic: str, partition: int, leader_epoch: int) -> bool:
        """Whether the partition is hosted here at an epoch older than `leader_epoch`: a replica
        fetching at that epoch learned of a LeaderAndIsr this broker has not applied yet (one that
        makes it leader, or leader at a newer epoch). The fetch handler holds such a follower fetch
        until it has (handlers/fetch.py)."""
        hosted = self.hosted.get((topic, partition))
        return hosted is not None and leader_epoch > hosted.leader_epoch

    def _not_leader(self, topic: str, partition: int) -> Refusal:
        # As Kafka's getPartitionOrError: a partition the cluster knows is NOT_LEADER_OR_FOLLOWER (the
        # client refreshes its metadata and follows the leader), one nobody knows is unknown.
        known = self.cluster.partition(topic, partition)
        if known is None and (topic, partition) not in self.hosted:
            return Refusal(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        if known is None:
            hosted = self.hosted[(topic, partition)]
            return Refusal(ErrorCode.NOT_LEADER_OR_FOLLOWER, hosted.leader, hosted.leader_epoch)
        return Refusal(ErrorCode.NOT_LEADER_OR_FOLLOWER, known.leader_id, known.leader_epoch)

    def still_leading_since(self, topic: str, partition: int, leader_epoch: int) -> bool:
        """Whether this broker has led the partition without a break since `leader_epoch` (the epoch an
        append was made at): what keeps an acks=all wait going, as in Kafka, where only a partition that
        became a follower (or was removed) completes its delayed produces with NOT_LEADER_OR_FOLLOWER."""
        hosted = self.leading.get((topic, partition))
        return hosted is not None and hosted.leader_since_epoch <= leader_epoch

    def leader_epoch(self, topic: str, partition: int) -> int | None:
        """The leader epoch of the last LeaderAndIsr that made this broker leader of the partition (what
        an append as leader stamps, cluster/leadership.py); None when it does not lead it."""
        hosted = self.leading.get((topic, partition))
        return hosted.leader_epoch if hosted is not None else None

    def leader_epoch_start_offset(self, topic: str, partition: int) -> int | None:
        """Where the epoch this broker leads the partition at began in its log; None when it does not
        lead it. Until the high watermark reaches it, ListOffsets is OFFSET_NOT_AVAILABLE."""
        hosted = self.leading.get((topic, partition))
        return hosted.leader_epoch_start_offset if hosted is not None else None

    def leader_since_epoch(self, topic: str, partition: int) -> int | None:
        """The leader epoch this broker's uninterrupted leadership of the partition began at; None when
        it does not lead it."""
        hosted = self.leading.get((topic, partition))
        return hosted.leader_since_epoch if hosted is not None else None

    def under_min_isr(self, topic: str, partition: int, maximal: bool = False) -> bool:
        """Whether a partition led here has fewer in-sync replicas than Kafka's effective minimum,
        min(min.insync.replicas, replication factor); `maximal` counts a pending ISR expansion, as the
        check of a waiting acks=all does. Not led here: True."""
        hosted = self.leading.get((topic, partition))
        return hosted is None or self.leaders.under_min_isr(hosted, maximal)

    @property
    def isr_updater(self) -> IsrUpdater | None:
        """The sender of ISR changes (AlterPartition to the controller): the wiring point of
        alter_partition.AlterPartitionManager. None: leaders propose no ISR change."""
        return self.leaders.isr_updater

    @isr_updater.setter
    def isr_updater(self, updater: IsrUpdater | None) -> None:
        self.leaders.isr_updater = updater

    # ----- control requests --------------------------------------------------------------------------

    def check_stamp(self, stamp: ControllerStamp) -> None:
        """Fence a whole control request: raises KafkaError(STALE_BROKER_EPOCH) for a request meant for an
        earlier registration of this broker, KafkaError(STALE_CONTROLLER_EPOCH) for an old controller.
        Kafka checks the broker epoch first (KafkaApis), then the controller epoch (ReplicaManager)."""
        if stamp.broker_epoch != UNKNOWN_BROKER_EPOCH and stamp.broker_epoch < self.broker_epoch:
            raise KafkaError(
                ErrorCode.STALE_BROKER_EPOCH,
                f"broker epoch {stamp.broker_epoch} is older than this broker's {self.broker_epoch}",
            )
        if stamp.controller_epoch < self.controller_epoch:
            raise KafkaError(
                ErrorCode.STALE_CONTROLLER_EPOCH,
                f"controller {stamp.controller_id} epoch {stamp.controller_epoch} is older than "
                f"{self.controller_epoch}",
            )

    async def become_leader_or_follower(
        self, stamp: ControllerStamp, partitions: Iterable[PartitionLeadership]
    ) -> dict[PartitionKey, ErrorCode]:
        """LeaderAndIsr: every partition's outcome (raises KafkaError for a fenced request)."""
        async with self._state_change:
            self.check_stamp(stamp)
            self.controller_epoch = stamp.controller_epoch
            outcome: dict[PartitionKey, ErrorCode] = {}
            accepted: list[PartitionLeadership] = []
            for state in partitions:
                key = (state.topic, state.partition)
                code = self._check_partition(state)
                outcome[key] = code
                if code is ErrorCode.NONE:
                    accepted.append(state)
            leading = [(state.topic, state.partition) for state in accepted if state.leader == self.node_id]
            if self.fetchers is not None:
                # Kafka's makeLeaders: a partition about to be led here is no longer fetched, before
                # anything waits; its fetcher would go on meanwhile (a DivergingEpoch from the old
                # leader truncating the log about to lead).
                self.fetchers.remove_partitions(leading)
            # Every log first (new ones are created in worker threads, so other requests are served
            # meanwhile), then every state at once: the cache names this broker leader of a partition
            # only in the same turn as the coordinators hear of it, so FindCoordinator never names a
            # broker whose coordinator would answer NOT_COORDINATOR for it.
            prepared, failed = await prepare_logs(
                self.logs, self.truncation_checkpoints, self.node_id, accepted, self.cluster
            )
            outcome.update(dict.fromkeys(failed, ErrorCode.KAFKA_STORAGE_ERROR))
            local_logs: list[tuple[PartitionLeadership, Log]] = []
            offline: list[PartitionKey] = []
            for state, replica_log in prepared:  # no wait from here on: what was checked still holds
                key = (state.topic, state.partition)
                if self.truncation_checkpoints.offline(replica_log):
                    # As Kafka's offline partition: neither led nor followed (nor fetched) until restart.
                    log.warning("%s-%d is offline: LeaderAndIsr answered KAFKA_STORAGE_ERROR", *key)
                    outcome[key] = ErrorCode.KAFKA_STORAGE_ERROR
                    offline.append(key)
                    continue
                local_logs.append((state, replica_log))
            leaders: list[PartitionKey] = []
            followers: list[PartitionKey] = []
            for state, replica_log in local_logs:
                self._apply(state, replica_log)
                key = (state.topic, state.partition)
                (leaders if state.leader == self.node_id else followers).append(key)
            if self.fetchers is not None:
                # Kafka's makeFollowers: a follower fetches from its (new) leader at the new epoch.
                self.fetchers.remove_partitions([*followers, *offline])
                self.fetchers.add_partitions([self.hosted[key] for key in followers if self._fetches(key)])
            for key in (*leaders, *followers):
                self.leaders.on_new_epoch(*key)
            self._leadership_changed(leaders, followers)
            return outcome

    def _fetches(self, key: PartitionKey) -> bool:
        """Whether this follower fetches the partition from its leader. Not while it has no leader; nor,
        once this broker asked for its controlled shutdown, a partition whose ISR it is out of (the
        leaderships the controller moved away from it): its fetches would only make the new leader
        propose it back into the ISR, and the controller refuses a broker that is shutting down, but
        while that proposal is pending the high watermark counts this broker, which is about to stop
        fetching (Kafka's ZooKeeper-mode leader proposes it too; its KRaft leader checks first)."""
        hosted = self.hosted[key]
        return hosted.leader >= 0 and not (self.leaving and self.node_id not in hosted.isr)

    async def stop_replicas(
        self, stamp: ControllerStamp, partitions: Iterable[StopReplicaPartition]
    ) -> dict[PartitionKey, ErrorCode]:
        """StopReplica: stop serving the partitions; with delete, remove their logs (raises KafkaError
        for a fenced request)."""
        async with self._state_change:
            self.check_stamp(stamp)
            self.controller_epoch = stamp.controller_epoch
            outcome: dict[PartitionKey, ErrorCode] = {}
            deleting: dict[str, list[int]] = {}
            stopped: list[PartitionKey] = []
            for stop in partitions:
                key = (stop.topic, stop.partition)
                hosted = self.hosted.get(key)
                epoch = stop.leader_epoch
                if (
                    hosted is not None
                    and epoch not in (EPOCH_DURING_DELETE, NO_EPOCH)
                    and epoch < hosted.leader_epoch
                ):
                    outcome[key] = ErrorCode.FENCED_LEADER_EPOCH
                    continue
                outcome[key] = ErrorCode.NONE
                if self.fetchers is not None:
                    self.fetchers.remove_partitions([key])
                if hosted is not None:
                    hosted.leader_state = None
                if self.leading.pop(key, None) is not None:
                    stopped.append(key)
                    self.leaders.on_resign(*key)
                if stop.delete:
                    self.hosted.pop(key, None)
                    # Also a log this broker no longer hosts: a topic deleted while it was down.
                    deleting.setdefault(stop.topic, []).append(stop.partition)
            for topic, indexes in deleting.items():
                for index in await delete_logs(self.logs, topic, indexes):
                    outcome[(topic, index)] = ErrorCode.KAFKA_STORAGE_ERROR
            if deleting:
                self.truncation_checkpoints.forget_deleted()
            self._leadership_changed([], stopped)
            return outcome

    def update_metadata(
        self,
        stamp: ControllerStamp,
        live_brokers: list[LiveBroker],
        partitions: Iterable[PartitionLeadership],
    ) -> list[PartitionKey]:
        """UpdateMetadata: the cache takes the controller's view; returns the partitions deleted from it
        (raises KafkaError for a fenced request). Synchronous: nothing here waits, so it needs no turn."""
        self.check_stamp(stamp)
        states = list(partitions)
        deleted = apply_update_metadata(self.cluster, stamp.controller_id, live_brokers, states)
        self.controller_epoch = stamp.controller_epoch
        # As in Kafka the cache takes what it is told, but a replica hosted here at a newer leader epoch
        # (a LeaderAndIsr overtook this update) keeps its epoch in the cache, so Metadata does not send
        # clients back to it. A newer epoch in the cache changes nothing here: what this broker leads,
        # and at which epoch, is `leading`'s (cluster/leadership.py).
        for state in states:
            hosted = self.hosted.get((state.topic, state.partition))
            if hosted is not None and hosted.leader_epoch > state.leader_epoch:
                follow_leadership(self.cluster, _leadership(hosted))
        if self.on_metadata_update is not None:
            self.on_metadata_update()
        return deleted

    # ----- helpers -----------------------------------------------------------------------------------

    def _leadership_changed(self, leaders: list[PartitionKey], others: list[PartitionKey]) -> None:
        if self.on_leadership_change is not None and (leaders or others):
            self.on_leadership_change(leaders, others)

    def _check_partition(self, state: PartitionLeadership) -> ErrorCode:
        hosted = self.hosted.get((state.topic, state.partition))
        if (
            hosted is not None
            and None not in (hosted.topic_id, state.topic_id)
            and hosted.topic_id != state.topic_id
        ):
            return ErrorCode.INCONSISTENT_TOPIC_ID
        current = hosted.leader_epoch if hosted is not None else UNKNOWN_LEADER_EPOCH
        if state.leader_epoch <= current:
            # Kafka answers an equal epoch as stale too: a ZooKeeper controller bumps the leader epoch
            # with every decision it sends, so a repeat is a delayed or replayed request.
            return ErrorCode.STALE_CONTROLLER_EPOCH
        if self.node_id not in state.replicas:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return ErrorCode.NONE

    def _apply(self, state: PartitionLeadership, replica_log: Log) -> None:
        key = (state.topic, state.partition)
        hosted = HostedPartition(
            topic=state.topic,
            partition=state.partition,
            topic_id=state.topic_id or (self.hosted[key].topic_id if key in self.hosted else None),
            leader=state.leader,
            leader_epoch=state.leader_epoch,
            partition_epoch=state.partition_epoch,
            replicas=list(state.replicas),
            isr=list(state.isr),
            log=replica_log,
        )
        self.hosted[key] = hosted
        if state.leader == self.node_id:
            # Kafka's Partition.makeLeader: the new epoch starts at the log end, so a follower of an
            # earlier epoch truncates to where this one began (KIP-101).
            replica_log.leader_epoch_cache.assign(state.leader_epoch, replica_log.log_end_offset)
            hosted.leader_epoch_start_offset = replica_log.log_end_offset
            # Kafka's maybeIncrementLeaderHW: a leader alone in its ISR has nobody to wait for, so the
            # high watermark follows its log end after every append. With followers in the ISR it
            # moves only as they catch up (replication), never on this broker's appends alone.
            # (A LogManager of single-node logs, as in handler tests, keeps its own rule.)
            earlier = self.leading.get(key)
            before = earlier.leader_state if earlier is not None else None
            hosted.leader_since_epoch = (
                earlier.leader_since_epoch if earlier is not None else state.leader_epoch
            )
            self.leaders.on_become_leader(hosted, before)
            self.leading[key] = hosted
        else:
            replica_log.auto_high_watermark = self.logs.single_node
            if self.leading.pop(key, None) is not None:
                self.leaders.on_resign(*key)
        follow_leadership(self.cluster, state)


def _leadership(hosted: HostedPartition) -> PartitionLeadership:
    return PartitionLeadership(
        topic=hosted.topic,
        partition=hosted.partition,
        controller_epoch=INITIAL_CONTROLLER_EPOCH,
        leader=hosted.leader,
        leader_epoch=hosted.leader_epoch,
        isr=list(hosted.isr),
        partition_epoch=hosted.partition_epoch,
        replicas=list(hosted.replicas),
        topic_id=hosted.topic_id,
    )
