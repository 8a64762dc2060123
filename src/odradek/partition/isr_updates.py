"""The contract between a partition leader's ISR decisions and the sender of AlterPartition.

A leader that decides to shrink or expand a partition's ISR does not write ZooKeeper itself (Kafka's
ZooKeeper mode has sent AlterPartition to the controller since KIP-497): it submits the proposed state
to an `IsrUpdater` and keeps at most one proposal in flight per partition. The updater batches the
proposals into AlterPartition requests to the active controller, retries through controller moves,
and resolves each proposal with the state the controller committed, or with the partition's error.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from odradek.protocol.error_codes import ErrorCode

#: Kafka's LeaderRecoveryState: RECOVERED (0) for every ISR change a leader proposes in ZooKeeper mode.
LEADER_RECOVERED = 0


@dataclass(frozen=True, slots=True)
class ProposedIsr:
    """What a leader asks the controller to write for one partition."""

    topic: str
    topic_id: uuid.UUID | None
    partition: int
    #: The leader epoch the leader holds: the controller fences a proposal from an older epoch.
    leader_epoch: int
    new_isr: tuple[int, ...]
    #: The partition epoch (the state znode's version) the proposal is based on: the controller
    #: answers INVALID_UPDATE_VERSION when the znode has moved on since.
    partition_epoch: int
    #: KIP-903: the broker epoch each member of `new_isr` fetched with (-1 when not known), sent in
    #: AlterPartition v3; the controller refuses a member whose registration is newer (it restarted).
    member_epochs: Mapping[int, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CommittedIsr:
    """The partition state the controller wrote (AlterPartition's answer for one partition)."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    partition_epoch: int


class IsrUpdateFailed(Exception):
    """The controller refused a proposal: FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION,
    INELIGIBLE_REPLICA, NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, ... As Kafka's leader, only
    after OPERATION_NOT_ATTEMPTED and INELIGIBLE_REPLICA (nothing written) does it drop the proposal;
    otherwise it keeps it pending until the controller's next LeaderAndIsr
    (partition/leader_replication.py)."""

    def __init__(self, error_code: ErrorCode, message: str = "") -> None:
        super().__init__(message or error_code.name)
        self.error_code = error_code


class IsrUpdater(Protocol):
    """Sends ISR proposals to the controller (implemented by `alter_partition.AlterPartitionManager`)."""

    async def submit(self, proposal: ProposedIsr) -> CommittedIsr:
        """Resolve when the controller committed the proposal; raise IsrUpdateFailed when it refused.
        A second proposal for a partition whose first is still in flight raises
        IsrUpdateFailed(OPERATION_NOT_ATTEMPTED) at once (the caller keeps one in flight)."""
        ...
