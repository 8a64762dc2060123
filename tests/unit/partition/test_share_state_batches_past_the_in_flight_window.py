"""A share partition's state read from the share coordinator is kept per offset only within the most
records any share partition may have in flight (10,000: the bound of group.share.partition.max.record.locks).

The leader made one in-flight entry per offset of every state batch, however long: a batch of 10**12
offsets (WriteShareGroupState takes any range, as Kafka's coordinator does; Kafka's SharePartition keeps
batches, not offsets) held the broker's event loop and filled its memory at the partition's next load.
No leader writes such a batch: what it has in flight never spans more than its record-lock limit.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest

from odradek.partition.share.manager import SharePartitionManager
from odradek.partition.share.persister import (
    DeliveryState,
    SharePartitionKey,
    ShareState,
    StateBatch,
)
from odradek.partition.share.share_partition import ShareLimits
from odradek.storage.config import LogConfig
from odradek.storage.log_manager import LogManager

pytestmark = pytest.mark.timeout(60)

KEY = SharePartitionKey("sg", uuid.uuid4(), 0)
#: Long enough to show the walk, short enough for the test to end when it happens.
LONG = 100_000


class _StoredState:
    """A share coordinator holding one state, whatever a writer sent it."""

    def __init__(self, state: ShareState) -> None:
        self.state = state

    async def read(self, key: SharePartitionKey, leader_epoch: int) -> ShareState:
        return self.state

    async def write(self, *args: object) -> None:
        return None


def test_a_state_batch_longer_than_any_in_flight_window_is_not_walked_offset_by_offset(
    tmp_path: Path,
) -> None:
    logs = LogManager([tmp_path], LogConfig())
    logs.startup()
    partition_log = logs.get_or_create_log("t", 0)
    state = ShareState(
        state_epoch=1,
        leader_epoch=0,
        start_offset=0,
        batches=(
            StateBatch(0, 9, DeliveryState.ACKNOWLEDGED, 1),
            StateBatch(10, LONG, DeliveryState.AVAILABLE, 1),
        ),
        delivery_complete_count=10,
    )
    manager = SharePartitionManager(
        _StoredState(state),  # type: ignore[arg-type]
        lambda: ShareLimits(record_lock_duration_ms=30_000, delivery_count_limit=5, max_record_locks=2000),
        max_sessions=10,
    )

    async def load() -> None:
        share = await manager.partition(KEY, partition_log, 0)
        assert share.start_offset == 10  # the acknowledged ones before it are done
        assert len(share.records) <= 10_000
        assert share.next_fetch_offset() == 10  # what the state says is available still is
        manager.close()

    try:
        asyncio.run(load())
    finally:
        logs.shutdown()
