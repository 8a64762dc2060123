"""The controller's requests (LeaderAndIsr, UpdateMetadata, StopReplica) as the broker side applies them.

handlers/inter_broker.py turns each wire version into these; the replica manager and the metadata cache
see one shape whatever the version. Names follow Kafka's messages.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

#: A LeaderAndIsr / UpdateMetadata leader meaning "the topic is being deleted" (Kafka's
#: LeaderAndIsr.LeaderDuringDelete): UpdateMetadata drops the partition from the cache.
LEADER_DURING_DELETE = -2
#: StopReplica leader epochs that skip the epoch check: a topic deletion (Kafka's EpochDuringDelete)
#: and a request older than v3, which carries none (NoEpoch).
EPOCH_DURING_DELETE = -2
NO_EPOCH = -1
#: A broker epoch of -1 is "not given" (versions before the field): never stale, as in Kafka.
UNKNOWN_BROKER_EPOCH = -1


@dataclass(frozen=True, slots=True)
class ControllerStamp:
    """Who sent a control request, and the epochs it is fenced by."""

    controller_id: int
    controller_epoch: int
    broker_epoch: int = UNKNOWN_BROKER_EPOCH


@dataclass(slots=True)
class PartitionLeadership:
    """One partition's state as the controller decided it (LeaderAndIsr and UpdateMetadata alike)."""

    topic: str
    partition: int
    controller_epoch: int
    leader: int
    leader_epoch: int
    isr: list[int]
    #: The version of the partition's state znode (LeaderAndIsr partition_epoch, UpdateMetadata zk_version).
    partition_epoch: int
    replicas: list[int]
    topic_id: uuid.UUID | None = None
    offline_replicas: list[int] = field(default_factory=list)
    is_new: bool = False


@dataclass(frozen=True, slots=True)
class StopReplicaPartition:
    topic: str
    partition: int
    delete: bool
    leader_epoch: int = NO_EPOCH
