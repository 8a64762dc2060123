"""An in-memory `SharePersister` for tests of share groups and share partitions, with Kafka's fencing.

It keeps each share partition's state as the share coordinator would (ShareCoordinatorShard): a write
or read with an older state epoch is refused with FENCED_STATE_EPOCH, one with an older leader epoch
with FENCED_LEADER_EPOCH; a read of state never initialised is refused as the coordinator refuses it.
`refuse` makes the next calls for a key fail with an error code, as a coordinator that is away.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from odradek.partition.share.persister import (
    SharePartitionKey,
    ShareState,
    ShareStateError,
    ShareStateSummary,
    StateBatch,
)
from odradek.protocol.error_codes import ErrorCode


@dataclass
class _Stored:
    state_epoch: int
    leader_epoch: int
    start_offset: int
    batches: dict[int, StateBatch] = field(default_factory=dict)
    delivery_complete_count: int = -1


class InMemorySharePersister:
    def __init__(self) -> None:
        self.states: dict[SharePartitionKey, _Stored] = {}
        self.calls: list[tuple[str, SharePartitionKey]] = []
        self.refusals: dict[SharePartitionKey, ErrorCode] = {}

    def refuse(self, key: SharePartitionKey, error: ErrorCode) -> None:
        self.refusals[key] = error

    def _check(self, name: str, key: SharePartitionKey) -> None:
        self.calls.append((name, key))
        error = self.refusals.get(key)
        if error is not None:
            raise ShareStateError(error)

    async def initialize(self, key: SharePartitionKey, state_epoch: int, start_offset: int) -> None:
        self._check("initialize", key)
        stored = self.states.get(key)
        if stored is not None and state_epoch < stored.state_epoch:
            raise ShareStateError(ErrorCode.FENCED_STATE_EPOCH)
        # as the share coordinator: nothing delivered yet once a start offset is known
        self.states[key] = _Stored(
            state_epoch, -1, start_offset, delivery_complete_count=min(start_offset, 0)
        )

    async def read(self, key: SharePartitionKey, leader_epoch: int) -> ShareState:
        self._check("read", key)
        stored = self._stored(key)
        if leader_epoch < stored.leader_epoch:
            raise ShareStateError(ErrorCode.FENCED_LEADER_EPOCH)
        stored.leader_epoch = leader_epoch
        return ShareState(
            stored.state_epoch,
            stored.leader_epoch,
            stored.start_offset,
            tuple(b for _, b in sorted(stored.batches.items())),
            stored.delivery_complete_count,
        )

    async def write(
        self,
        key: SharePartitionKey,
        state_epoch: int,
        leader_epoch: int,
        start_offset: int,
        batches: tuple[StateBatch, ...],
        delivery_complete_count: int = -1,
    ) -> None:
        self._check("write", key)
        stored = self._stored(key)
        if state_epoch < stored.state_epoch:
            raise ShareStateError(ErrorCode.FENCED_STATE_EPOCH)
        if leader_epoch < stored.leader_epoch:
            raise ShareStateError(ErrorCode.FENCED_LEADER_EPOCH)
        stored.leader_epoch = leader_epoch
        if start_offset >= 0:
            stored.start_offset = start_offset
        for batch in batches:
            stored.batches[batch.first_offset] = batch
        stored.batches = {
            first: b for first, b in stored.batches.items() if b.last_offset >= stored.start_offset
        }
        stored.delivery_complete_count = delivery_complete_count

    async def delete(self, key: SharePartitionKey) -> None:
        self._check("delete", key)
        self.states.pop(key, None)

    async def read_summary(self, key: SharePartitionKey, leader_epoch: int) -> ShareStateSummary:
        self._check("read_summary", key)
        stored = self._stored(key)
        return ShareStateSummary(
            stored.state_epoch, stored.leader_epoch, stored.start_offset, stored.delivery_complete_count
        )

    def _stored(self, key: SharePartitionKey) -> _Stored:
        stored = self.states.get(key)
        if stored is None:
            raise ShareStateError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "share group state not initialized")
        return stored
