"""The controller's events (Kafka's ControllerEvent subclasses in KafkaController.scala).

ZooKeeper watches and the broker only create these and put them on the controller's queue; all the
work happens when the event task takes them off it, one at a time.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from odradek.cluster.controller.context import TopicPartition
from odradek.cluster.controller.isr_changes import AlterPartitionResult, IsrChangeRequest
from odradek.cluster.controller.producer_ids import AllocateProducerIdsResult
from odradek.cluster.controller.replica_assignment import ReassignmentError, ReplicaAssignment
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.leader_and_isr import LeaderAndIsrResponse


class ControllerEvent:
    """Base of every event; `name` is what the logs show."""

    @property
    def name(self) -> str:
        return type(self).__name__


@dataclass(frozen=True)
class Startup(ControllerEvent):
    """The broker started its controller: watch /controller and try to become it."""


@dataclass(frozen=True)
class Elect(ControllerEvent):
    """Try to become controller (Kafka's Reelect): /controller is absent, or our session was renewed."""


@dataclass(frozen=True)
class ControllerChange(ControllerEvent):
    """/controller was created, changed or deleted: resign if it is no longer us, elect if absent."""


@dataclass(frozen=True)
class BrokerChange(ControllerEvent):
    """The children of /brokers/ids changed: brokers joined, left, or bounced (same id, new epoch)."""


@dataclass(frozen=True)
class BrokerModification(ControllerEvent):
    """A registration's data changed (new endpoints, or a new epoch when it bounced)."""

    broker_id: int


@dataclass(frozen=True)
class LogDirEventNotification(ControllerEvent):
    """The children of /log_dir_event_notification changed: brokers say a log dir of theirs failed."""


@dataclass(frozen=True)
class LeaderAndIsrResponseReceived(ControllerEvent):
    """A broker answered a LeaderAndIsr: the partitions it answered KAFKA_STORAGE_ERROR are on a failed
    log dir there (Kafka's LeaderAndIsrResponseReceived)."""

    broker_id: int
    response: LeaderAndIsrResponse


@dataclass(frozen=True)
class TopicChange(ControllerEvent):
    """The children of /brokers/topics changed: topics were created (or removed)."""


@dataclass(frozen=True)
class PartitionModifications(ControllerEvent):
    """/brokers/topics/<topic> changed: partitions were added to it."""

    topic: str


@dataclass(frozen=True)
class TopicDeletion(ControllerEvent):
    """The children of /admin/delete_topics changed: topics are marked for deletion."""


@dataclass(frozen=True)
class UncleanLeaderElectionEnable(ControllerEvent):
    """The broker's unclean.leader.election.enable was turned on: elect the offline partitions."""


@dataclass(frozen=True)
class TopicUncleanLeaderElectionEnable(ControllerEvent):
    """A topic's unclean.leader.election.enable was turned on: elect its offline partitions."""

    topic: str


@dataclass(frozen=True)
class Expire(ControllerEvent):
    """Our ZooKeeper session expired: resign now (a new session elects again)."""


@dataclass(frozen=True)
class Resign(ControllerEvent):
    """Stop being controller (the broker stops, or a write failed on the controller epoch)."""


# -- requests from brokers, answered through a future once the event is handled ------------------


@dataclass(frozen=True, slots=True)
class ControlledShutdownResult:
    """ControlledShutdown's answer: an error, and the partitions the broker still leads."""

    error: ErrorCode
    remaining: list[TopicPartition]


@dataclass(frozen=True)
class ControlledShutdown(ControllerEvent):
    """A broker asks to move its leaderships away before it stops (ControlledShutdown v3)."""

    broker_id: int
    broker_epoch: int
    done: asyncio.Future[ControlledShutdownResult] = field(compare=False)


@dataclass(frozen=True)
class ElectLeaders(ControllerEvent):
    """ElectLeaders (key 43): preferred (0) or unclean (1) election of the given partitions (None: all)."""

    election_type: int
    partitions: list[TopicPartition] | None
    done: asyncio.Future[dict[TopicPartition, ErrorCode]] = field(compare=False)


@dataclass(frozen=True)
class AlterPartitionReassignments(ControllerEvent):
    """AlterPartitionReassignments (key 45): a target replica list per partition, None to cancel."""

    reassignments: Mapping[TopicPartition, Sequence[int] | None]
    allow_replication_factor_change: bool
    done: asyncio.Future[dict[TopicPartition, ReassignmentError]] = field(compare=False)


@dataclass(frozen=True)
class ListPartitionReassignments(ControllerEvent):
    """ListPartitionReassignments (key 46): the given partitions (None: all) that are being moved."""

    partitions: list[TopicPartition] | None
    done: asyncio.Future[dict[TopicPartition, ReplicaAssignment]] = field(compare=False)


@dataclass(frozen=True)
class ZkPartitionReassignment(ControllerEvent):
    """/admin/reassign_partitions was created: a plan of reassignments to start."""


@dataclass(frozen=True)
class PartitionReassignmentIsrChange(ControllerEvent):
    """A partition's ISR changed: a reassignment waiting for its target replicas may complete."""

    partition: TopicPartition


@dataclass(frozen=True)
class AutoPreferredReplicaLeaderElection(ControllerEvent):
    """auto.leader.rebalance.enable: every leader.imbalance.check.interval.seconds, check the imbalance."""


@dataclass(frozen=True)
class AlterPartition(ControllerEvent):
    """A leader asks for ISR changes (AlterPartition, key 56); answered through `done`."""

    broker_id: int
    broker_epoch: int
    changes: list[IsrChangeRequest]
    done: asyncio.Future[AlterPartitionResult] = field(compare=False)


@dataclass(frozen=True)
class AllocateProducerIds(ControllerEvent):
    """A broker asks for a block of producer ids (AllocateProducerIds, key 67); answered through `done`."""

    broker_id: int
    broker_epoch: int
    done: asyncio.Future[AllocateProducerIdsResult] = field(compare=False)
