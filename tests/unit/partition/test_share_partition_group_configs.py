"""A share partition runs with its group's GROUP configs (share.record.lock.duration.ms,
share.delivery.count.limit, share.partition.max.record.locks, share.auto.offset.reset,
share.isolation.level) where set, with the broker's group.share.* where not: two groups reading the same
partition each get their own."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping
from pathlib import Path

from odradek.config.broker import BrokerConfig
from odradek.partition.share.in_flight import AcknowledgementBatch, AcknowledgeType, Acquired
from odradek.partition.share.log_reader import read_batches
from odradek.partition.share.manager import SharePartitionManager
from odradek.partition.share.persister import SharePartitionKey
from odradek.protocol.records import Record, build_record_batch
from odradek.protocol.records.control import ControlRecordType, build_end_transaction_marker_batch
from odradek.storage.producer_state import AppendOrigin
from tests.support.handler_services import HandlerBroker
from tests.support.share_persister import InMemorySharePersister

TOPIC_ID = uuid.UUID(int=7)
CONFIGURED = SharePartitionKey("configured", TOPIC_ID, 0)
PLAIN = SharePartitionKey("plain", TOPIC_ID, 0)
GROUP_CONFIGS = {
    "configured": {
        "share.record.lock.duration.ms": "20000",
        "share.delivery.count.limit": "2",
        "share.partition.max.record.locks": "100",
        "share.auto.offset.reset": "earliest",
        "share.isolation.level": "read_committed",
    }
}


def lookup(group_id: str) -> Mapping[str, str]:
    return GROUP_CONFIGS.get(group_id, {})


def test_each_share_partition_takes_its_groups_configs_and_the_broker_defaults_otherwise(
    tmp_path: Path,
) -> None:
    async def main() -> None:
        broker = HandlerBroker(tmp_path / "data")
        await broker.create_topic("t")
        log = broker.log("t")
        log.append(bytearray(build_record_batch([Record(offset=0, timestamp=1, key=None, value=b"v")])))
        persister = InMemorySharePersister()
        config = BrokerConfig({"node.id": "1", "log.dirs": str(tmp_path)}, warn_unknown=False)
        manager = SharePartitionManager.for_broker(config, persister, lookup)
        for key in (CONFIGURED, PLAIN):
            await persister.initialize(key, 0, -1)
        try:
            configured = await manager.partition(CONFIGURED, log, 0)
            plain = await manager.partition(PLAIN, log, 0)
            assert (configured.limits.record_lock_duration_ms, plain.limits.record_lock_duration_ms) == (
                20000,
                30000,
            )
            assert (configured.limits.delivery_count_limit, plain.limits.delivery_count_limit) == (2, 5)
            assert (configured.limits.max_record_locks, plain.limits.max_record_locks) == (100, 2000)
            assert (configured.start_offset, plain.start_offset) == (0, 1)  # earliest / latest
            assert (configured.read_committed, plain.read_committed) == (True, False)
        finally:
            manager.close()
            broker.close()

    asyncio.run(main())


def test_a_groups_delivery_count_limit_and_isolation_level_decide_what_it_is_given(tmp_path: Path) -> None:
    async def main() -> None:
        broker = HandlerBroker(tmp_path / "data")
        await broker.create_topic("t")
        log = broker.log("t")
        log.append(bytearray(build_record_batch([Record(offset=0, timestamp=1, key=None, value=b"v")])))
        txn = [Record(offset=0, timestamp=1, key=None, value=b"t")]
        log.append(
            bytearray(
                build_record_batch(
                    txn, producer_id=5, producer_epoch=0, base_sequence=0, is_transactional=True
                )
            )
        )
        marker = build_end_transaction_marker_batch(
            ControlRecordType.ABORT, producer_id=5, producer_epoch=0, coordinator_epoch=0, timestamp=1
        )
        log.append(bytearray(marker), origin=AppendOrigin.COORDINATOR)
        persister = InMemorySharePersister()
        config = BrokerConfig({"node.id": "1", "log.dirs": str(tmp_path)}, warn_unknown=False)
        manager = SharePartitionManager.for_broker(config, persister, lookup)
        await persister.initialize(CONFIGURED, 0, 0)
        await persister.initialize(PLAIN, 0, 0)
        try:
            for key, expected_first in ((CONFIGURED, [Acquired(0, 0, 1)]), (PLAIN, [Acquired(0, 1, 1)])):
                share = await manager.partition(key, log, 0)
                chunk = read_batches(log, share.next_fetch_offset(), 1 << 20, share.read_committed)
                assert await share.acquire("m", chunk, 500) == expected_first  # read_committed skips 1
            configured = await manager.partition(CONFIGURED, log, 0)
            release = [AcknowledgementBatch(0, 0, (int(AcknowledgeType.RELEASE),))]
            await configured.acknowledge("m", release)
            chunk = read_batches(log, configured.next_fetch_offset(), 1 << 20, True)
            assert await configured.acquire("m", chunk, 500) == [Acquired(0, 0, 2)]
            await configured.acknowledge("m", release)  # the second delivery was the last (limit 2)
            chunk = read_batches(log, configured.next_fetch_offset(), 1 << 20, True)
            assert await configured.acquire("m", chunk, 500) == []
        finally:
            manager.close()
            broker.close()

    asyncio.run(main())
