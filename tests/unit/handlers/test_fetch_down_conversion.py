"""A consumer's Fetch v0-3 reads the stored v2 batches converted down to MessageSet v0/v1: every record
decoded and encoded again in Python. That runs in the record workers, not on the event loop, and
converts no more than the fetch's limits ask for (Kafka converts lazily, up to the fetch size), so a
small batch of many records cannot hold the broker for seconds; the consumer fetches the rest next."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from odradek.protocol.records import Compression, convert, decode_message_set
from tests.support.hand_built_batches import START_MS, hand_built_batch, hand_built_record
from tests.support.handler_services import HandlerBroker

pytestmark = pytest.mark.timeout(60)

MANY = 50_000


def _fetch_v3(offset: int, partition_max_bytes: int) -> FetchRequest:
    partitions = [FetchPartition(partition=0, fetch_offset=offset, partition_max_bytes=partition_max_bytes)]
    return FetchRequest(
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=0,
        max_bytes=50 << 20,
        topics=[FetchTopic(topic="p", partitions=partitions)],
    )


async def _many_records(broker: HandlerBroker) -> None:
    await broker.create_topic("p")
    records = b"".join(hand_built_record(i, b"v", key=b"k") for i in range(MANY))
    broker.log("p").append(hand_built_batch(records, Compression.ZSTD, count=MANY, base_timestamp=START_MS))


async def test_a_fetch_v3_of_a_batch_of_many_records_converts_no_more_than_its_limit(
    handler_broker: HandlerBroker,
) -> None:
    # 50,000 records in a few hundred bytes of zstd: all were converted (1.5 MB) for a 4 KiB limit.
    await _many_records(handler_broker)
    limit = 4096
    first = (await handler_broker.call(_fetch_v3(0, limit), 3)).responses[0].partitions[0]
    assert first.error_code == ErrorCode.NONE
    assert 0 < len(first.records) <= limit
    offsets = [r.offset for r in decode_message_set(first.records).records]
    assert offsets == list(range(len(offsets)))
    following = (await handler_broker.call(_fetch_v3(len(offsets), limit), 3)).responses[0].partitions[0]
    assert decode_message_set(following.records).records[0].offset == len(offsets)


async def test_a_fetch_v3_converts_at_least_one_record_however_small_its_limit(
    handler_broker: HandlerBroker,
) -> None:
    await _many_records(handler_broker)
    data = (await handler_broker.call(_fetch_v3(MANY - 1, 1), 3)).responses[0].partitions[0]
    assert [r.offset for r in decode_message_set(data.records).records] == [MANY - 1]


async def test_down_conversion_runs_in_a_record_worker_not_on_the_event_loop(
    handler_broker: HandlerBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    await _many_records(handler_broker)
    threads: list[str] = []
    real = convert.build_message_set

    def spy(*args: Any, **kwargs: Any) -> bytes:
        threads.append(threading.current_thread().name)
        return real(*args, **kwargs)

    monkeypatch.setattr(convert, "build_message_set", spy)
    data = (await handler_broker.call(_fetch_v3(0, 4096), 3)).responses[0].partitions[0]
    assert data.records
    assert threads and all(name.startswith("odradek-records") for name in threads)
