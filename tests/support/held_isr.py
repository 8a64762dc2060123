"""A replica manager whose acks=-1 writes wait for followers the test plays: each append
`complete_appends` is asked about is answered with what `replicated` says (the partition, the offset
after the append, the timeout in ms), and `complete_log_end` asks it too unless the followers hold the
log end already (they acknowledged it). Its acks=-1 appends wait for them, as a leader's with followers
in its ISR do (their `waiting` set: not completed at the append). Everything else is the real replica
manager's."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from odradek.partition.delayed_produce import AwaitingReplicas
from odradek.partition.leader_append import LeaderAppend
from odradek.partition.leadership import Leadership
from odradek.protocol.error_codes import ErrorCode
from odradek.storage.partition import TopicPartition
from odradek.storage.prepared_appends import PreparedAppend
from odradek.storage.producer_state import AppendOrigin

#: The followers' answer to one append: NONE once they hold it, else the append's error.
Followers = Callable[[TopicPartition, int, int], Awaitable[ErrorCode]]


class HeldIsr:
    def __init__(self, leadership: Leadership, replicated: Followers) -> None:
        self.leadership = leadership
        self.replicated = replicated
        #: The offset the followers hold each partition up to, as far as they said.
        self.held: dict[TopicPartition, int] = {}

    def append_records(
        self,
        partition: TopicPartition,
        records: bytearray | memoryview,
        origin: AppendOrigin,
        required_acks: int,
        prepared: PreparedAppend | None = None,
    ) -> LeaderAppend:
        made = self.leadership.append_records(partition, records, origin, required_acks, prepared)
        if required_acks != -1:
            return made
        waiting = AwaitingReplicas(partition, made.log, made.last_offset + 1, made.leader_epoch)
        return dataclasses.replace(made, waiting=waiting)

    async def complete_appends(self, appends: Sequence[LeaderAppend], timeout_ms: int) -> list[ErrorCode]:
        return [await self._ask(made.partition, made.last_offset + 1, timeout_ms) for made in appends]

    async def complete_log_end(self, partition: TopicPartition, timeout_ms: int) -> ErrorCode:
        log = self.leadership.logs.get_log(*partition)  # type: ignore[attr-defined]
        if log is None or log.log_end_offset <= self.held.get(partition, 0):
            return await self.leadership.complete_log_end(partition, timeout_ms)
        return await self._ask(partition, log.log_end_offset, timeout_ms)

    async def _ask(self, partition: TopicPartition, required_offset: int, timeout_ms: int) -> ErrorCode:
        outcome = await self.replicated(partition, required_offset, timeout_ms)
        if outcome is ErrorCode.NONE:
            self.held[partition] = max(self.held.get(partition, 0), required_offset)
        return outcome

    def __getattr__(self, name: str) -> Any:
        return getattr(self.leadership, name)
