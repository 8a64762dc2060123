"""A stand-in share partition (the real ones live in partition/share/, built alongside) driving the
broker's persister against a single node's share coordinator: what one leader acknowledged and released
is what the next leader reads, and the old leader's late write is fenced."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from odradek.cluster.share_state_client import ShareStatePersister
from odradek.partition.share.persister import (
    DeliveryState,
    SharePartitionKey,
    SharePersister,
    ShareStateError,
    StateBatch,
)
from odradek.protocol.error_codes import ErrorCode
from tests.unit.coordinator.share.harness import ShareHarness

AVAILABLE, ACQUIRED, ACKED = DeliveryState.AVAILABLE, DeliveryState.ACQUIRED, DeliveryState.ACKNOWLEDGED


@dataclass
class FakeSharePartition:
    """The persister's client as a share partition leader is: it reads the state when it becomes
    leader, keeps acquisitions in memory, and writes each acknowledgement or release."""

    persister: SharePersister
    key: SharePartitionKey
    leader_epoch: int
    state_epoch: int = 0
    start_offset: int = 0
    #: offset -> (state, delivery count)
    records: dict[int, tuple[DeliveryState, int]] = field(default_factory=dict)

    async def become_leader(self) -> None:
        state = await self.persister.read(self.key, self.leader_epoch)
        self.state_epoch, self.start_offset = state.state_epoch, state.start_offset
        self.records = {
            offset: (batch.delivery_state, batch.delivery_count)
            for batch in state.batches
            for offset in range(batch.first_offset, batch.last_offset + 1)
        }

    def acquire(self, count: int) -> list[int]:
        acquired = []
        offset = self.start_offset
        while len(acquired) < count:
            state, deliveries = self.records.get(offset, (AVAILABLE, 0))
            if state is AVAILABLE:
                self.records[offset] = (ACQUIRED, deliveries + 1)
                acquired.append(offset)
            offset += 1
        return acquired

    async def settle(self, offsets: list[int], state: DeliveryState) -> None:
        for offset in offsets:
            self.records[offset] = (state, self.records[offset][1])
        while self.records.get(self.start_offset, (AVAILABLE, 0))[0] is ACKED:
            del self.records[self.start_offset]
            self.start_offset += 1
        batches = tuple(
            StateBatch(o, o, self.records[o][0], self.records[o][1])
            for o in offsets
            if o >= self.start_offset
        )
        await self.persister.write(self.key, self.state_epoch, self.leader_epoch, self.start_offset, batches)


def test_what_a_leader_settled_is_what_the_next_leader_reads_and_the_old_one_is_fenced(
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        harness = ShareHarness(tmp_path)
        coordinator = await harness.start()
        persister = ShareStatePersister(1, coordinator, harness.config, harness.cluster)
        try:
            key = SharePartitionKey("workers", await harness.topic("jobs", 1), 0)
            await persister.initialize(key, state_epoch=0, start_offset=0)
            first = FakeSharePartition(persister, key, leader_epoch=1)
            await first.become_leader()
            acquired = first.acquire(10)
            await first.settle(acquired[:5], ACKED)
            await first.settle(acquired[5:], AVAILABLE)  # released: to be delivered again

            second = FakeSharePartition(persister, key, leader_epoch=2)
            await second.become_leader()
            assert second.start_offset == 5
            assert second.records == {o: (AVAILABLE, 1) for o in range(5, 10)}
            assert second.acquire(2) == [5, 6]
            assert second.records[5] == (ACQUIRED, 2)  # its second delivery

            with pytest.raises(ShareStateError) as fenced:
                await first.settle([5], ACKED)  # the old leader, late
            assert fenced.value.error_code is ErrorCode.FENCED_LEADER_EPOCH
        finally:
            persister.close()
            harness.stop()

    asyncio.run(scenario())


def test_a_group_id_too_long_for_a_record_is_a_share_state_error_not_a_kafka_error(tmp_path: Path) -> None:
    """The persister's contract is ShareStateError: the key-length refusal of the coordinator lookup
    escaped as the runtime's KafkaError, which a share partition does not expect."""

    async def scenario() -> None:
        harness = ShareHarness(tmp_path)
        coordinator = await harness.start()
        persister = ShareStatePersister(1, coordinator, harness.config, harness.cluster)
        try:
            key = SharePartitionKey("g" * 40_000, await harness.topic("jobs", 1), 0)
            with pytest.raises(ShareStateError) as refused:
                await persister.initialize(key, 0, 0)
            assert refused.value.error_code is ErrorCode.INVALID_REQUEST
        finally:
            persister.close()
            harness.stop()

    asyncio.run(scenario())
