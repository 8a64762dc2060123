"""ListOffsets by timestamp (and for the max timestamp) finds its batch from the headers and indexes on
the event loop, then reads that batch's records in a record worker: a few hundred bytes of zstd holding
hundreds of thousands of records were decoded on the loop, holding every connection for seconds. A
batch whose header claims a max timestamp its records do not reach is passed over to the next."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.list_offsets import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopic,
)
from odradek.protocol.records import Compression
from odradek.protocol.records import record as record_module
from tests.support.hand_built_batches import START_MS, hand_built_batch, hand_built_record
from tests.support.handler_services import HandlerBroker

pytestmark = pytest.mark.timeout(60)

MANY = 50_000
MAX_TIMESTAMP = -3


async def _list_offsets(broker: HandlerBroker, timestamp: int) -> tuple[int, int, int]:
    asked = ListOffsetsPartition(partition_index=0, timestamp=timestamp)
    request = ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsTopic(name="t", partitions=[asked])])
    response: ListOffsetsResponse = await broker.call(request, 7)
    answer = response.topics[0].partitions[0]
    return answer.error_code, answer.offset, answer.timestamp


async def test_a_timestamp_lookup_reads_its_batch_s_records_in_a_record_worker(
    handler_broker: HandlerBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    await handler_broker.create_topic("t")
    records = b"".join(hand_built_record(i, b"v", timestamp_delta=i) for i in range(MANY))
    handler_broker.log("t").append(
        hand_built_batch(records, Compression.ZSTD, count=MANY, max_timestamp=START_MS + MANY - 1)
    )
    threads: set[str] = set()
    real = record_module._decode_record

    def spy(*args: Any, **kwargs: Any) -> Any:
        threads.add(threading.current_thread().name)
        return real(*args, **kwargs)

    monkeypatch.setattr(record_module, "_decode_record", spy)
    assert await _list_offsets(handler_broker, START_MS + 40_000) == (
        ErrorCode.NONE,
        40_000,
        START_MS + 40_000,
    )
    assert await _list_offsets(handler_broker, MAX_TIMESTAMP) == (
        ErrorCode.NONE,
        MANY - 1,
        START_MS + MANY - 1,
    )
    assert threads and all(name.startswith("odradek-records") for name in threads)


async def test_a_batch_claiming_a_max_timestamp_its_records_do_not_reach_is_passed_over(
    handler_broker: HandlerBroker,
) -> None:
    await handler_broker.create_topic("t")
    log = handler_broker.log("t")
    lying = hand_built_batch(hand_built_record(0, b"a"), max_timestamp=START_MS + 500)
    log.append(lying)
    log.append(
        hand_built_batch(hand_built_record(0, b"b", timestamp_delta=600), max_timestamp=START_MS + 600)
    )
    assert await _list_offsets(handler_broker, START_MS + 100) == (ErrorCode.NONE, 1, START_MS + 600)
