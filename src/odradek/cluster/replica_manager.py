"""The replica manager's control half (ZooKeeper mode): LeaderAndIsr, StopReplica and UpdateMetadata
applied to the data half (partition/replica_manager.py), Kafka's becomeLeaderOrFollower, stopReplicas
and maybeUpdateMetadataCache.

Every control request is fenced first: a controller epoch older than the newest seen is
STALE_CONTROLLER_EPOCH, a broker epoch older than this broker's registration (its /brokers/ids znode's
czxid) STALE_BROKER_EPOCH, both for the whole request. Then each partition's state applies only when
its leader epoch is newer than the one known. State changes run one request at a time (Kafka's
replicaStateChangeLock): log creation and deletion wait in worker threads, and two requests must not
interleave around them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from odradek.cluster.control_requests import (
    EPOCH_DURING_DELETE,
    NO_EPOCH,
    UNKNOWN_BROKER_EPOCH,
    ControllerStamp,
    PartitionLeadership,
    StopReplicaPartition,
)
from odradek.cluster.metadata import ClusterMetadata, LiveBroker
from odradek.cluster.metadata_update import apply_update_metadata, follow_leadership
from odradek.cluster.replica_logs import delete_logs, prepare_logs
from odradek.cluster.replication.fetcher_wiring import FollowerSettings, replica_fetcher_manager
from odradek.cluster.replication.truncation_checkpoints import TruncationCheckpoints
from odradek.partition import replica_manager
from odradek.partition.follower_append import FollowerAppends
from odradek.partition.hosted_partition import HostedPartition, PartitionKey
from odradek.partition.isr_updates import IsrUpdater
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.storage.errors import LogStorageError
from odradek.storage.log import Log
from odradek.storage.log_manager import LogManager

log = logging.getLogger("odradek.cluster.replicas")

#: Kafka's KafkaController.InitialControllerEpoch: any controller epoch is at least this.
INITIAL_CONTROLLER_EPOCH = 0
#: The leader epoch of a partition this broker has heard nothing about yet (Kafka's Partition starts
#: at LeaderAndIsr.InitialLeaderEpoch - 1), so the controller's first epoch, 0, is newer.
UNKNOWN_LEADER_EPOCH = -1


class ReplicaManager(replica_manager.ReplicaManager):
    cluster: ClusterMetadata

    def __init__(
        self,
        node_id: int,
        cluster: ClusterMetadata,
        logs: LogManager,
        broker_epoch: int = UNKNOWN_BROKER_EPOCH,
        truncation_checkpoints: TruncationCheckpoints | None = None,
        *,
        replica_lag_time_max_ms: int = 30_000,
        replica_selector_class: str | None = None,
        min_insync_replicas: Callable[[str], int] | None = None,
        on_metadata_update: Callable[[], None] | None = None,
        followers: FollowerSettings | None = None,
        isr_updater: IsrUpdater | None = None,
    ) -> None:
        """`on_metadata_update`: called after each UpdateMetadata changed the cache (the wiring gives
        new cache entries the topic configs read from ZooKeeper). `followers`: what its replica fetchers
        are made with (None: nothing is fetched). `isr_updater`: where its leaders send ISR changes
        (AlterPartition to the controller; None: they propose none)."""
        super().__init__(
            node_id,
            cluster,
            logs,
            replica_lag_time_max_ms=replica_lag_time_max_ms,
            replica_selector_class=replica_selector_class,
            min_insync_replicas=min_insync_replicas,
        )
        self.cluster = cluster
        #: What a truncated log waits for before anything appends to it (the broker's, shared with its
        #: storage task and its fetchers; one of its own otherwise).
        self.truncation_checkpoints = truncation_checkpoints or TruncationCheckpoints(logs.flushes)
        #: This broker's epoch: the czxid of its registration znode. The ZooKeeper wiring sets it after
        #: registering (and again after re-registering on a new session).
        self.broker_epoch = broker_epoch
        #: The newest controller epoch seen in any control request.
        self.controller_epoch = INITIAL_CONTROLLER_EPOCH
        self.on_metadata_update = on_metadata_update
        #: Its replica fetchers, which follow the partitions led elsewhere (Kafka's ReplicaManager creates
        #: its ReplicaFetcherManager); `fetchers` to the data half.
        self.fetcher_manager = (
            None
            if followers is None
            else replica_fetcher_manager(
                followers,
                cluster,
                node_id,
                lambda: self.broker_epoch,
                FollowerAppends(self, self.truncation_checkpoints),
            )
        )
        self.fetchers = self.fetcher_manager
        self.isr_updater = isr_updater
        #: Set once this broker asked the controller for its controlled shutdown (see `_fetches`).
        self.leaving = False

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
                # As Kafka: an offline replica is answered so before its epoch is looked at (the
                # controller asks again at the same epoch after a log dir failure notification).
                code = ErrorCode.KAFKA_STORAGE_ERROR if key in self.offline else self._check_partition(state)
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
                if state.leader == self.node_id:
                    try:
                        # Kafka's Partition.makeLeader: the new epoch starts at the log end, so a
                        # follower of an earlier epoch truncates to where this one began (KIP-101)
                        replica_log.assign_leader_epoch(state.leader_epoch, replica_log.log_end_offset)
                    except LogStorageError:  # its checkpoint could not be written: the dir is offline
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
                if key in self.offline:
                    # As Kafka: its files are on a failed disk, neither stopped nor deleted here
                    log.warning("StopReplica of %s-%d ignored: its log dir failed", *key)
                    outcome[key] = ErrorCode.KAFKA_STORAGE_ERROR
                    continue
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
                stopped.extend(self.stop_partitions([key], delete=stop.delete))
                if stop.delete:
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
        # and at which epoch, is `leading`'s (partition/leadership.py).
        for state in states:
            hosted = self.hosted.get((state.topic, state.partition))
            if hosted is not None and hosted.leader_epoch > state.leader_epoch:
                follow_leadership(self.cluster, _leadership(hosted))
        if self.on_metadata_update is not None:
            self.on_metadata_update()
        return deleted

    # ----- helpers -----------------------------------------------------------------------------------

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
        # (its epoch was assigned in the log by become_leader_or_follower, which may fail)
        self.apply_leadership(hosted, record_epoch_start=False)
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
