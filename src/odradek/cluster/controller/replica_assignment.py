"""A partition's full replica assignment during a reassignment (Kafka's ReplicaAssignment, KIP-455).

While a partition moves, its replica set RS is the target replicas followed by the original ones
that are not in the target; `adding` are the targets it did not have, `removing` the originals the
target drops. Both are written to /brokers/topics/<topic> (adding_replicas, removing_replicas), so
that a new controller can finish or cancel what the last one started.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from odradek.protocol.error_codes import ErrorCode


@dataclass(frozen=True, slots=True)
class ReplicaAssignment:
    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()

    @classmethod
    def of(
        cls, replicas: Sequence[int], adding: Sequence[int] = (), removing: Sequence[int] = ()
    ) -> ReplicaAssignment:
        return cls(tuple(replicas), tuple(adding), tuple(removing))

    @property
    def is_being_reassigned(self) -> bool:
        return bool(self.adding or self.removing)

    @property
    def origin_replicas(self) -> list[int]:
        """The replicas the partition had before the reassignment started."""
        return [r for r in self.replicas if r not in self.adding]

    @property
    def target_replicas(self) -> list[int]:
        """The replicas the partition has once the reassignment completes."""
        return [r for r in self.replicas if r not in self.removing]

    def reassign_to(self, target: Sequence[int]) -> ReplicaAssignment:
        """The assignment while moving from the original replicas to `target` (a target equal to the
        original replicas is a reassignment that is complete at once: a cancellation)."""
        origin = self.origin_replicas
        full = list(dict.fromkeys([*target, *origin]))
        return ReplicaAssignment(
            tuple(full),
            tuple(r for r in full if r not in origin),
            tuple(r for r in full if r not in target),
        )


@dataclass(frozen=True, slots=True)
class ReassignmentError:
    """One partition's answer to AlterPartitionReassignments (NONE: the reassignment started)."""

    code: ErrorCode
    message: str | None = None
