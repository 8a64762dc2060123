"""The controller's events (Kafka's ControllerEvent subclasses in KafkaController.scala).

ZooKeeper watches and the broker only create these and put them on the controller's queue; all the
work happens when the event task takes them off it, one at a time.
"""

from __future__ import annotations

from dataclasses import dataclass


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
class Expire(ControllerEvent):
    """Our ZooKeeper session expired: resign now (a new session elects again)."""


@dataclass(frozen=True)
class Resign(ControllerEvent):
    """Stop being controller (the broker stops, or a write failed on the controller epoch)."""


# -- hooks for later events: the event task dispatches them; the controller answers those it knows --


@dataclass(frozen=True)
class ControlledShutdown(ControllerEvent):
    """A broker asks to move its leaderships away before it stops (ControlledShutdown v3)."""

    broker_id: int
    broker_epoch: int


@dataclass(frozen=True)
class AlterPartition(ControllerEvent):
    """A leader asks for an ISR change (AlterPartition, key 56): handled by the replication step."""

    broker_id: int
    broker_epoch: int


@dataclass(frozen=True)
class ElectLeaders(ControllerEvent):
    """ElectLeaders (key 43): preferred election of the given partitions, on request."""


@dataclass(frozen=True)
class AutoPreferredReplicaLeaderElection(ControllerEvent):
    """auto.leader.rebalance.enable: every leader.imbalance.check.interval.seconds, check the imbalance."""
