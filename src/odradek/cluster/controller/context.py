"""What the controller knows of the cluster (Kafka's ControllerContext): live brokers with their epochs
and endpoints, topics with their assignments and ids, and each partition's state with its partition
epoch (the zkVersion of its state znode). Only the controller's event task reads or changes it."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from odradek.cluster.controller.replica_assignment import ReplicaAssignment
from odradek.cluster.zookeeper.broker_znode import BrokerRegistration
from odradek.cluster.zookeeper.topic_znodes import PartitionStateZnode

#: The written_zxid of a partition state this controller wrote itself (it watches the brokers since).
UNKNOWN_ZXID = -1


class TopicPartition(NamedTuple):
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class LiveBroker:
    registration: BrokerRegistration
    #: The czxid of /brokers/ids/<id>: a higher one for the same id means the broker bounced.
    epoch: int

    @property
    def broker_id(self) -> int:
        return self.registration.broker_id


@dataclass(frozen=True, slots=True)
class PartitionState:
    """A partition's state znode and its zkVersion (the partition epoch), as last read or written."""

    znode: PartitionStateZnode
    partition_epoch: int
    #: The zxid of the write a state read from ZooKeeper came from (its mzxid), to compare with the
    #: brokers' epochs (their registrations' czxids); UNKNOWN_ZXID for a state this controller wrote.
    written_zxid: int = UNKNOWN_ZXID

    @property
    def leader(self) -> int:
        return self.znode.leader

    @property
    def isr(self) -> Sequence[int]:
        return self.znode.isr


@dataclass(slots=True)
class ControllerContext:
    epoch: int
    epoch_zk_version: int
    live_brokers: dict[int, LiveBroker] = field(default_factory=dict)
    assignments: dict[str, dict[int, list[int]]] = field(default_factory=dict)
    topic_ids: dict[str, uuid.UUID] = field(default_factory=dict)
    states: dict[TopicPartition, PartitionState] = field(default_factory=dict)
    #: Brokers that asked for a controlled shutdown: never elected leader again while they stay.
    shutting_down: set[int] = field(default_factory=set)
    topics_being_deleted: set[str] = field(default_factory=set)
    #: Partitions being reassigned, with their replicas being added and removed (`assignments` holds
    #: their full replica set RS meanwhile).
    reassigning: dict[TopicPartition, ReplicaAssignment] = field(default_factory=dict)
    #: Per live broker, its replicas on a failed log dir, as its LeaderAndIsr answers said
    #: (KAFKA_STORAGE_ERROR): offline until the broker registers again (Kafka's replicasOnOfflineDirs).
    replicas_on_offline_dirs: dict[int, set[TopicPartition]] = field(default_factory=dict)

    def live_broker_ids(self) -> set[int]:
        return set(self.live_brokers)

    def eligible_broker_ids(self) -> set[int]:
        """The brokers that may be elected leader: live and not shutting down (isReplicaOnline)."""
        return set(self.live_brokers) - self.shutting_down

    def eligible_for(self, tp: TopicPartition) -> set[int]:
        """The brokers that may lead `tp`: eligible, and its replica there not on a failed log dir."""
        return {b for b in self.eligible_broker_ids() if not self.on_offline_dir(b, tp)}

    def on_offline_dir(self, broker_id: int, tp: TopicPartition) -> bool:
        return tp in self.replicas_on_offline_dirs.get(broker_id, ())

    def is_replica_online(self, broker_id: int, tp: TopicPartition) -> bool:
        """Kafka's isReplicaOnline: its broker is live and the replica is not on a failed log dir."""
        return broker_id in self.live_brokers and not self.on_offline_dir(broker_id, tp)

    def is_live(self, broker_id: int) -> bool:
        return broker_id in self.live_brokers

    def replicas(self, tp: TopicPartition) -> list[int]:
        return self.assignments.get(tp.topic, {}).get(tp.partition, [])

    def full_assignment(self, tp: TopicPartition) -> ReplicaAssignment:
        """The partition's replicas with those being added and removed (none when it is not moving)."""
        return self.reassigning.get(tp) or ReplicaAssignment.of(self.replicas(tp))

    def set_full_assignment(self, tp: TopicPartition, assignment: ReplicaAssignment) -> None:
        self.assignments.setdefault(tp.topic, {})[tp.partition] = list(assignment.replicas)
        if assignment.is_being_reassigned:
            self.reassigning[tp] = assignment
        else:
            self.reassigning.pop(tp, None)

    def all_partitions(self) -> Iterator[TopicPartition]:
        for topic, partitions in sorted(self.assignments.items()):
            for partition in sorted(partitions):
                yield TopicPartition(topic, partition)

    def partitions_of(self, topic: str) -> list[TopicPartition]:
        return [TopicPartition(topic, p) for p in sorted(self.assignments.get(topic, {}))]

    def partitions_on(self, broker_id: int) -> list[TopicPartition]:
        """The partitions with a replica assigned to `broker_id`."""
        return [tp for tp in self.all_partitions() if broker_id in self.replicas(tp)]

    def partitions_led_by(self, broker_ids: Iterable[int]) -> list[TopicPartition]:
        ids = set(broker_ids)
        return [tp for tp, state in sorted(self.states.items()) if state.leader in ids]

    def partitions_with_live_leader(self) -> list[TopicPartition]:
        """The partitions a live broker leads (topics being deleted aside)."""
        return [
            tp
            for tp in self.all_partitions()
            if tp.topic not in self.topics_being_deleted
            and (state := self.states.get(tp)) is not None
            and self.is_live(state.leader)
        ]

    def partitions_without_live_leader(self) -> list[TopicPartition]:
        """New partitions (no state yet) and offline ones (no leader, or a leader that is gone)."""
        return [
            tp
            for tp in self.all_partitions()
            if tp.topic not in self.topics_being_deleted
            and ((state := self.states.get(tp)) is None or not self.is_live(state.leader))
        ]

    def remove_topic(self, topic: str) -> None:
        for tp in self.partitions_of(topic):
            self.states.pop(tp, None)
            self.reassigning.pop(tp, None)
        self.assignments.pop(topic, None)
        self.topic_ids.pop(topic, None)
        self.topics_being_deleted.discard(topic)
