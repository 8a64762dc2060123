"""What an AlterPartition asks of the controller and what it answers, per partition: the types the
controller's event queue and the AlterPartition handler share with cluster/controller/alter_partition.py."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from odradek.cluster.controller.context import PartitionState
from odradek.protocol.error_codes import ErrorCode

#: A member's broker epoch that the sender does not know (ZooKeeper-mode brokers send -1): not checked.
UNKNOWN_BROKER_EPOCH = -1


@dataclass(frozen=True, slots=True)
class IsrChangeRequest:
    """One partition of an AlterPartition request; `topic` is None when the request names topics by
    id (v2+) and `topic_id` is then set."""

    topic: str | None
    topic_id: uuid.UUID | None
    partition: int
    leader_epoch: int
    new_isr: tuple[int, ...]
    #: The broker epoch of each new ISR member (v3), or UNKNOWN_BROKER_EPOCH.
    member_epochs: tuple[int, ...]
    leader_recovery_state: int
    partition_epoch: int


@dataclass(frozen=True, slots=True)
class IsrChangeOutcome:
    """The answer for one partition: an error, or NONE with the partition's state as it now is."""

    error: ErrorCode
    state: PartitionState | None = None


@dataclass(frozen=True, slots=True)
class AlterPartitionResult:
    """A top-level error (NONE, STALE_BROKER_EPOCH, NOT_CONTROLLER) and one outcome per partition asked,
    in the order asked."""

    error: ErrorCode
    outcomes: list[IsrChangeOutcome]
