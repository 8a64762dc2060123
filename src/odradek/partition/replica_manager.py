"""The replica manager's data half: the partitions with a replica here, those this broker leads and at
which leader epoch (hosted_replicas.py), and what the data path asks of them (Kafka's ReplicaManager
and Partition, less the control requests, which cluster/replica_manager.py applies through
`apply_leadership` and `stop_partitions`). A single node has one too: it leads each of its partitions
at epoch 0 with an ISR of itself (`lead_alone`, called by TopicAdmin as a controller's LeaderAndIsr
would be).

The data path asks `leader_refusal` (hosted_replicas.py) once per partition, then appends with
`append_records`.

Replication: a led partition keeps a `LeaderState` of its followers, which `leaders`
(partition/leader_replication.py) feeds from their fetches, moving the high watermark and proposing
ISR changes through `isr_updater`; followed partitions are handed to `fetchers` (the replica fetchers).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Hashable, Iterable, Sequence
from pathlib import Path

from odradek.partition.delayed_produce import (
    AwaitingReplicas,
    decided_now,
    replication_outcome,
    wait_for_replicas,
)
from odradek.partition.hosted_partition import HostedPartition, PartitionKey
from odradek.partition.hosted_replicas import HostedReplicas
from odradek.partition.isr_updates import IsrUpdater
from odradek.partition.leader_append import LeaderAppend, flush_if_due, flush_logs_if_due
from odradek.partition.leader_replication import LeaderReplication
from odradek.partition.ports import FollowerFetchers, ReplicaDirectory
from odradek.partition.purgatory import AppendNotifier
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.storage.errors import DuplicateSequenceError, StorageError
from odradek.storage.log import Log
from odradek.storage.log_manager import LogManager
from odradek.storage.partition import TopicPartition
from odradek.storage.prepared_appends import PreparedAppend
from odradek.storage.producer_state import AppendOrigin

log = logging.getLogger("odradek.cluster.replicas")

#: The leader epoch a single node leads every partition at: nothing ever elects another leader.
LOCAL_LEADER_EPOCH = 0


class ReplicaManager(HostedReplicas):
    """The replicas hosted here (hosted_replicas.py: what each may serve), their appends as leader and
    the leaderships applied to them."""

    def __init__(
        self,
        node_id: int,
        cluster: ReplicaDirectory,
        logs: LogManager,
        *,
        replica_lag_time_max_ms: int = 30_000,
        replica_selector_class: str | None = None,
        min_insync_replicas: Callable[[str], int] | None = None,
    ) -> None:
        """`replica_lag_time_max_ms`, `replica_selector_class`, `min_insync_replicas` (a topic's): the
        leaders' (`LeaderReplication`); their high-watermark moves wake this replica manager's append
        events."""
        super().__init__(node_id, cluster)
        self.logs = logs
        #: Kafka's onLeadershipChange: told after a LeaderAndIsr or StopReplica of the partitions this
        #: broker began to lead and those it stopped leading (`add_leadership_listener`).
        self._leadership_listeners: list[Callable[[list[PartitionKey], list[PartitionKey]], None]] = []
        #: The replica fetchers that follow the partitions led elsewhere (None: nothing is fetched).
        self.fetchers: FollowerFetchers | None = None
        #: The append events (partition/purgatory.py): an append here lets the leader move its high
        #: watermark first (Kafka's maybeIncrementLeaderHW), then wakes the fetches and acks=all
        #: produces waiting on the partition; a high-watermark move wakes them too.
        self.appends = AppendNotifier(on_append=self._appended)
        #: The leader's half of replication (followers' positions, high watermark, ISR changes); its
        #: `isr_updater` (also `self.isr_updater`) is where a leader sends ISR changes, set by the wiring.
        self.leaders = LeaderReplication(
            node_id,
            cluster,
            self.leading,
            on_high_watermark=self.appends.wake,
            replica_lag_time_max_ms=replica_lag_time_max_ms,
            replica_selector_class=replica_selector_class,
            min_insync_replicas=min_insync_replicas,
        )
        #: State changes run one at a time (Kafka's replicaStateChangeLock): log creation and deletion
        #: wait in worker threads, and two changes must not interleave around them.
        self._state_change = asyncio.Lock()

    # ----- the data path -----------------------------------------------------------------------------

    def under_min_isr(self, topic: str, partition: int, maximal: bool = False) -> bool:
        """Whether a partition led here has fewer in-sync replicas than Kafka's effective minimum,
        min(min.insync.replicas, replication factor); `maximal` counts a pending ISR expansion, as the
        check of a waiting acks=all does. Not led here: True."""
        hosted = self.leading.get((topic, partition))
        return hosted is None or self.leaders.under_min_isr(hosted, maximal)

    def _appended(self, partition: Hashable) -> None:
        self.leaders.on_append(partition)

    # ----- appends as leader -------------------------------------------------------------------------

    def append_records(
        self,
        partition: TopicPartition,
        records: bytearray | memoryview,
        origin: AppendOrigin,
        required_acks: int,
        prepared: PreparedAppend | None = None,
    ) -> LeaderAppend:
        """Append `records` (v2 batches, patched in place) to a partition this broker leads, stamped with
        the epoch it leads at (Kafka's Partition.appendRecordsToLeader), and raise the append event (the
        leader moves its high watermark, waiting fetches and produces wake). The one way anything
        appends as leader: Produce, the coordinators' writes, transaction markers.

        Nothing is appended, and KafkaError says why, when this broker does not lead the partition
        (NOT_LEADER_OR_FOLLOWER; UNKNOWN_TOPIC_OR_PARTITION without a log here), when its log dir has
        failed (KAFKA_STORAGE_ERROR, even before the dir is handled) or, for acks=-1, when its
        ISR is under Kafka's effective minimum (NOT_ENOUGH_REPLICAS); else the log's errors propagate
        (StorageError, CodecError). No await: a coordinator's step and its write never interleave.
        `complete_appends` then does the due fsync and the acks=all wait."""
        key = (partition.topic, partition.partition)
        hosted = self.leading.get(key)
        if hosted is None:
            here = self.logs.get_log(*key) is not None
            raise KafkaError(
                ErrorCode.NOT_LEADER_OR_FOLLOWER if here else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            )
        if self.logs.failures.any_offline and self.logs.failures.is_offline(hosted.log.dir.parent):
            # its dir failed: nothing more is acknowledged there, while handle_log_dir_failure (behind
            # the state-change lock) has yet to take the dir's partitions offline
            raise KafkaError(
                ErrorCode.KAFKA_STORAGE_ERROR,
                f"{partition.topic}-{partition.partition}: its log dir {hosted.log.dir.parent} is offline",
            )
        if required_acks == -1 and self.leaders.under_min_isr(hosted):
            raise KafkaError(
                ErrorCode.NOT_ENOUGH_REPLICAS,
                f"{partition.topic}-{partition.partition}: fewer in-sync replicas than min.insync.replicas",
            )
        replica_log, epoch = hosted.log, hosted.leader_epoch
        try:
            result = replica_log.append(records, leader_epoch=epoch, origin=origin, prepared=prepared)
        except DuplicateSequenceError as duplicate:  # an idempotent retry: answered as the first attempt
            waiting = self._awaiting(hosted, partition, duplicate.last_offset, required_acks)
            return LeaderAppend(
                partition,
                replica_log,
                epoch,
                duplicate.base_offset,
                duplicate.last_offset,
                -1,
                duplicate.log_start_offset,
                0,
                True,
                waiting,
            )
        self.appends.notify(partition)
        return LeaderAppend(
            partition,
            replica_log,
            epoch,
            result.base_offset,
            result.last_offset,
            result.log_append_time,
            result.log_start_offset,
            result.records_count,
            False,
            self._awaiting(hosted, partition, result.last_offset, required_acks),
        )

    async def complete_appends(self, appends: Sequence[LeaderAppend], timeout_ms: int) -> list[ErrorCode]:
        """The appends' answers, in order (Kafka's DelayedProduce): each once fsynced if its log's flush
        settings make it due, and, for acks=-1, once the ISR holds it (partition/delayed_produce.py). An
        append whose log's fsync failed is KAFKA_STORAGE_ERROR, and only it (leader_append.py)."""
        unflushed = await flush_if_due(appends)
        outcomes = [
            ErrorCode.KAFKA_STORAGE_ERROR if id(a.log) in unflushed else ErrorCode.NONE for a in appends
        ]
        waiting = [
            (i, a.waiting)
            for i, a in enumerate(appends)
            if a.waiting is not None and id(a.log) not in unflushed
        ]
        if waiting:
            decided = await wait_for_replicas([w for _, w in waiting], timeout_ms, self)
            for (i, _), outcome in zip(waiting, decided, strict=True):
                outcomes[i] = outcome
        return outcomes

    async def complete_log_end(self, partition: TopicPartition, timeout_ms: int) -> ErrorCode:
        """As `complete_appends` for everything the partition's log holds now: a coordinator's step that
        wrote nothing is answered once what it stands on is committed (Kafka's CoordinatorRuntime waits
        for the high watermark to reach the shard's last written offset). NOT_LEADER_OR_FOLLOWER when
        this broker does not lead the partition."""
        hosted = self.leading.get((partition.topic, partition.partition))
        if hosted is None:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        if not hosted.log.flush_needed():  # a step on what is committed already: answered at once
            decided = decided_now(hosted.log, partition, hosted.leader_epoch, self)
            if decided is not None:
                return decided
        required_offset = hosted.log.log_end_offset
        try:
            await flush_logs_if_due([hosted.log])
        except (StorageError, OSError):  # its dir is offline now (storage marked it), as an append's
            return ErrorCode.KAFKA_STORAGE_ERROR
        return await replication_outcome(partition, required_offset, timeout_ms, self)

    def _awaiting(
        self, hosted: HostedPartition, partition: TopicPartition, last_offset: int, required_acks: int
    ) -> AwaitingReplicas | None:
        if required_acks != -1 or hosted.log.high_watermark > last_offset:
            return None
        return AwaitingReplicas(partition, hosted.log, last_offset + 1, hosted.leader_epoch)

    @property
    def isr_updater(self) -> IsrUpdater | None:
        """The sender of ISR changes (AlterPartition to the controller): the wiring point of
        alter_partition.AlterPartitionManager. None: leaders propose no ISR change."""
        return self.leaders.isr_updater

    @isr_updater.setter
    def isr_updater(self, updater: IsrUpdater | None) -> None:
        self.leaders.isr_updater = updater

    # ----- leadership applied ------------------------------------------------------------------------

    def lead_alone(self, topic: str, topic_id: uuid.UUID | None, partitions: Iterable[int]) -> None:
        """A single node's partitions, loaded at start-up or just made (TopicAdmin): led here at epoch
        0 with an ISR of this broker alone, as a controller's first LeaderAndIsr would make them, so
        their high watermark follows their log end. A partition without a log is offline (its log dir
        failed): KAFKA_STORAGE_ERROR until the broker restarts."""
        leaders: list[PartitionKey] = []
        for index in partitions:
            key = (topic, index)
            replica_log = self.logs.get_log(topic, index)
            if replica_log is None:
                self.offline.add(key)
                continue
            hosted = HostedPartition(
                topic=topic,
                partition=index,
                topic_id=topic_id,
                leader=self.node_id,
                leader_epoch=LOCAL_LEADER_EPOCH,
                partition_epoch=0,
                replicas=[self.node_id],
                isr=[self.node_id],
                log=replica_log,
            )
            # Nothing follows a single node: an empty log's epoch start is recorded by its first append,
            # not by a checkpoint write (and directory sync) on the loop for each partition just made.
            self.apply_leadership(hosted, record_epoch_start=replica_log.log_end_offset > 0)
            leaders.append(key)
        self._leadership_changed(leaders, [])

    def apply_leadership(self, hosted: HostedPartition, *, record_epoch_start: bool = True) -> None:
        """A leadership this broker was given for a partition it has a log of (LeaderAndIsr, or a single
        node's own): it leads or follows it from now on. `record_epoch_start`: a new leader records in its
        leader-epoch cache where its epoch starts (False only where no replica will ever ask)."""
        key = (hosted.topic, hosted.partition)
        replica_log = hosted.log
        self.hosted[key] = hosted
        if hosted.leader == self.node_id:
            # Kafka's Partition.makeLeader: the new epoch starts at the log end, so a follower of an
            # earlier epoch truncates to where this one began (KIP-101).
            if record_epoch_start:
                replica_log.assign_leader_epoch(hosted.leader_epoch, replica_log.log_end_offset)
            hosted.leader_epoch_start_offset = replica_log.log_end_offset
            # Kafka's maybeIncrementLeaderHW: a leader alone in its ISR has nobody to wait for, so the
            # high watermark follows its log end after every append. With followers in the ISR it
            # moves only as they catch up (replication), never on this broker's appends alone.
            earlier = self.leading.get(key)
            before = earlier.leader_state if earlier is not None else None
            hosted.leader_since_epoch = (
                earlier.leader_since_epoch if earlier is not None else hosted.leader_epoch
            )
            self.leaders.on_become_leader(hosted, before)
            self.leading[key] = hosted
        else:
            replica_log.auto_high_watermark = False  # a follower's HW is the leader's
            if self.leading.pop(key, None) is not None:
                self.leaders.on_resign(*key)

    def stop_partitions(self, keys: Iterable[PartitionKey], delete: bool) -> list[PartitionKey]:
        """Stop leading and following the partitions (StopReplica, or a single node's topic deleted);
        with `delete` they are no longer hosted either. Returns those this broker led."""
        stopped: list[PartitionKey] = []
        for key in keys:
            if self.fetchers is not None:
                self.fetchers.remove_partitions([key])
            hosted = self.hosted.get(key)
            if hosted is not None:
                hosted.leader_state = None
            if self.leading.pop(key, None) is not None:
                stopped.append(key)
                self.leaders.on_resign(*key)
            if delete:
                self.hosted.pop(key, None)
        return stopped

    def delete_partitions(self, topic: str, partitions: Iterable[int]) -> None:
        """A single node's topic (or some of its partitions) deleted: not served from now on."""
        keys = [(topic, index) for index in partitions]
        for key in keys:
            self.offline.discard(key)
        self._leadership_changed([], self.stop_partitions(keys, delete=True))

    def replace_log(self, key: PartitionKey, replica_log: Log) -> None:
        """The partition's log was moved to another log dir (storage swapped in its copy, on the loop,
        with no append between): it is served and followed from now on (Kafka's Partition.log)."""
        hosted = self.hosted.get(key)
        if hosted is None:
            return
        hosted.replace_log(replica_log)
        if self.fetchers is not None and key not in self.leading and self._fetches(key):
            # the follower's fetch state holds the log it appends to: fetched again into the new one
            self.fetchers.remove_partitions([key])
            self.fetchers.add_partitions([hosted])

    def _fetches(self, key: PartitionKey) -> bool:
        """Whether this follower fetches the partition from its leader (cluster/replica_manager.py
        says more)."""
        return self.hosted[key].leader >= 0

    async def handle_log_dir_failure(self, log_dir: Path) -> list[PartitionKey]:
        """A log dir failed (Kafka's ReplicaManager.handleLogDirFailure): its partitions are no longer
        fetched, led or followed, and go offline; their logs leave the LogManager. Returns them. In a
        cluster the caller tells the controller (/log_dir_event_notification), which moves their
        leadership."""
        async with self._state_change:
            gone = [(tp.topic, tp.partition) for tp in self.logs.handle_log_dir_failure(log_dir)]
            if self.fetchers is not None:
                self.fetchers.remove_partitions(gone)
            stopped: list[PartitionKey] = []
            for key in gone:
                self.offline.add(key)
                hosted = self.hosted.pop(key, None)
                if hosted is not None:
                    hosted.leader_state = None
                if self.leading.pop(key, None) is not None:
                    stopped.append(key)
                    self.leaders.on_resign(*key)
            log.warning(
                "stopped serving %d replicas in the failed log dir %s: %s",
                len(gone),
                log_dir,
                ", ".join(f"{topic}-{partition}" for topic, partition in gone),
            )
            self._leadership_changed([], stopped)
            return gone

    def add_leadership_listener(
        self, listener: Callable[[list[PartitionKey], list[PartitionKey]], None]
    ) -> None:
        """Tell `listener` from now on of the partitions this broker began and stopped leading (the
        coordinators of a cluster member follow their internal topics' leadership so)."""
        self._leadership_listeners.append(listener)

    def _leadership_changed(self, leaders: list[PartitionKey], others: list[PartitionKey]) -> None:
        if leaders or others:
            for listener in self._leadership_listeners:
                listener(leaders, others)
