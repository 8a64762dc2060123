"""A replica manager whose led partitions' ISR falls under min.insync.replicas when a test says so:
acks=-1 appends through the one entry (partition/replica_manager.py's append_records) are refused
with NOT_ENOUGH_REPLICAS and nothing appended, as the real one refuses them."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from odradek.partition.leader_append import LeaderAppend
from odradek.partition.leadership import NO_EPOCH, Leadership, Refusal
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.storage.partition import TopicPartition
from odradek.storage.prepared_appends import PreparedAppend
from odradek.storage.producer_state import AppendOrigin


class ShortIsr:
    def __init__(
        self, leadership: Leadership, short: Callable[[TopicPartition], bool] = lambda _tp: True
    ) -> None:
        self.leadership = leadership
        #: Whether the partition's ISR is short now (asked once per acks=-1 append).
        self.short = short
        #: The appends refused, in order.
        self.refused: list[TopicPartition] = []

    def append_records(
        self,
        partition: TopicPartition,
        records: bytearray | memoryview,
        origin: AppendOrigin,
        required_acks: int,
        prepared: PreparedAppend | None = None,
    ) -> LeaderAppend:
        if (
            required_acks == -1
            and self.leadership.leader_epoch(*partition) is not None
            and self.short(partition)
        ):
            self.refused.append(partition)
            raise KafkaError(ErrorCode.NOT_ENOUGH_REPLICAS)
        return self.leadership.append_records(partition, records, origin, required_acks, prepared)

    async def complete_appends(self, appends: Sequence[LeaderAppend], timeout_ms: int) -> list[ErrorCode]:
        return await self.leadership.complete_appends(appends, timeout_ms)

    async def complete_log_end(self, partition: TopicPartition, timeout_ms: int) -> ErrorCode:
        return await self.leadership.complete_log_end(partition, timeout_ms)

    def under_min_isr(self, topic: str, partition: int) -> bool:
        return self.short(TopicPartition(topic, partition)) or self.leadership.under_min_isr(topic, partition)

    def leader_epoch(self, topic: str, partition: int) -> int | None:
        return self.leadership.leader_epoch(topic, partition)

    def leader_since_epoch(self, topic: str, partition: int) -> int | None:
        return self.leadership.leader_since_epoch(topic, partition)

    def leader_epoch_start_offset(self, topic: str, partition: int) -> int | None:
        return self.leadership.leader_epoch_start_offset(topic, partition)

    def leader_refusal(
        self, topic: str, partition: int, current_leader_epoch: int = NO_EPOCH
    ) -> Refusal | None:
        return self.leadership.leader_refusal(topic, partition, current_leader_epoch)

    def replica_refusal(
        self, topic: str, partition: int, current_leader_epoch: int = NO_EPOCH
    ) -> Refusal | None:
        return self.leadership.replica_refusal(topic, partition, current_leader_epoch)
