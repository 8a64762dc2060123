"""What a produce may make the broker do with its records (decompress, walk, rewrite, convert): never
before the refusals that need no record (Kafka's ProduceRequest.validateRecords, leadership, acks,
internal topics, min.insync.replicas, the batch's own size), never on the event loop, bounded per
request, and shared fairly between connections."""

from __future__ import annotations

import asyncio
import threading
import tracemalloc
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

import pytest

from odradek.handlers._common.context import CloseConnection
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from odradek.protocol.records import (
    HEADER_SIZE,
    Compression,
    Record,
    RecordBatchBuilder,
    RecordBatchHeader,
    build_message_set,
    compress,
)
from odradek.protocol.records import batch as batch_module
from odradek.storage import log_append, prepared_appends
from odradek.storage.fetch import FetchIsolation
from tests.support.controller_requests import Partition, leader_and_isr, update_metadata
from tests.support.hand_built_batches import START_MS, hand_built_batch, hand_built_record
from tests.support.handler_services import HandlerBroker
from tests.unit.handlers.cluster_member import BROKERS, TOPIC, TOPIC_ID, led_by_1, led_here

pytestmark = pytest.mark.timeout(60)

#: A record of 4 MiB of zeros in a zstd batch: a few hundred bytes on the wire.
FOUR_MIB = 4 * 1024 * 1024


def _bomb(size: int = FOUR_MIB) -> bytearray:
    return hand_built_batch(hand_built_record(0, bytes(size)), Compression.ZSTD)


def _produce(topic: str, *batches: bytes, acks: int = 1, partitions: int = 1) -> ProduceRequest:
    return ProduceRequest(
        acks=acks,
        timeout_ms=1000,
        topic_data=[
            TopicProduceData(
                name=topic,
                partition_data=[
                    PartitionProduceData(index=index, records=b"".join(batches))
                    for index in range(partitions)
                ],
            )
        ],
    )


def _codes(response: Any) -> list[ErrorCode]:
    return [ErrorCode(p.error_code) for t in response.responses for p in t.partition_responses]


async def _held_while(call: Awaitable[Any]) -> tuple[Any, int]:
    """The call's result, and the most memory Python held meanwhile above what it held before."""
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        result = await call
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, peak - before


async def test_a_request_carrying_a_second_batch_is_refused_before_any_batch_is_decompressed(
    handler_broker: HandlerBroker,
) -> None:
    # 16 batches of a few hundred bytes each, decompressing to 4 MiB: Kafka refuses the request
    # unread ("exactly one record batch"); odradek rewrote all 16 (64 MiB) first.
    await handler_broker.create_topic("t", configs={"compression.type": "gzip"})
    response, held = await _held_while(handler_broker.call(_produce("t", *[_bomb()] * 16), 9))
    assert _codes(response) == [ErrorCode.INVALID_RECORD]
    assert held < FOUR_MIB // 2
    assert handler_broker.log("t").log_end_offset == 0


async def test_produce_v2_carrying_a_second_v2_batch_is_invalid_record_as_kafka_s_log_validator_says(
    handler_broker: HandlerBroker,
) -> None:
    await handler_broker.create_topic("t", configs={"compression.type": "uncompressed"})
    response, held = await _held_while(handler_broker.call(_produce("t", _bomb(), _bomb()), 2))
    assert _codes(response) == [ErrorCode.INVALID_RECORD]
    assert held < FOUR_MIB // 2
    assert handler_broker.log("t").log_end_offset == 0


@pytest.mark.parametrize(
    ("setting", "acks", "refused"),
    [
        pytest.param(
            {"max.message.bytes": "200"}, 1, ErrorCode.MESSAGE_TOO_LARGE, id="batch-over-max-message"
        ),
        pytest.param({}, 2, ErrorCode.INVALID_REQUIRED_ACKS, id="invalid-acks"),
    ],
)
async def test_a_partition_refused_for_what_needs_no_record_is_refused_before_its_batch_is_decompressed(
    handler_broker: HandlerBroker, setting: dict[str, str], acks: int, refused: ErrorCode
) -> None:
    await handler_broker.create_topic("t", configs={"compression.type": "gzip", **setting})
    response, held = await _held_while(handler_broker.call(_produce("t", _bomb(), acks=acks), 9))
    assert _codes(response) == [refused]
    assert held < FOUR_MIB // 2


async def test_acks_all_under_min_insync_replicas_is_refused_before_the_batch_is_decompressed(
    tmp_path: Path,
) -> None:
    member = HandlerBroker(
        tmp_path / "m",
        node_id=2,
        zookeeper_mode=True,
        **{"compression.type": "gzip", "min.insync.replicas": "2"},
    )
    try:
        alone = Partition(TOPIC, 0, leader=2, leader_epoch=3, replicas=[2, 3, 1], isr=[2])
        await member.call(update_metadata(BROKERS, [alone], {TOPIC: TOPIC_ID}), 8)
        await member.call(leader_and_isr([alone], {TOPIC: TOPIC_ID}), 7)
        response, held = await _held_while(member.call(_produce(TOPIC, _bomb(), acks=-1), 9))
        assert _codes(response) == [ErrorCode.NOT_ENOUGH_REPLICAS]
        assert held < FOUR_MIB // 2
    finally:
        member.close()


async def test_a_produce_to_an_internal_topic_is_refused_before_its_batch_is_decompressed(
    handler_broker: HandlerBroker,
) -> None:
    await handler_broker.services.topics.create_topic(
        "__consumer_offsets", 1, 1, configs={"compression.type": "gzip"}, internal=True
    )
    response, held = await _held_while(handler_broker.call(_produce("__consumer_offsets", _bomb()), 9))
    assert _codes(response) == [ErrorCode.INVALID_TOPIC_EXCEPTION]
    assert held < FOUR_MIB // 2


async def test_a_follower_answers_not_leader_before_decompressing_the_batch(tmp_path: Path) -> None:
    member = HandlerBroker(tmp_path / "m", node_id=2, zookeeper_mode=True, **{"compression.type": "gzip"})
    try:
        picture = [led_here(0, epoch=3), led_by_1(1, epoch=7)]
        await member.call(update_metadata(BROKERS, picture, {TOPIC: TOPIC_ID}), 8)
        await member.call(leader_and_isr(picture, {TOPIC: TOPIC_ID}), 7)
        request = ProduceRequest(
            acks=1,
            timeout_ms=1000,
            topic_data=[
                TopicProduceData(name=TOPIC, partition_data=[PartitionProduceData(index=1, records=_bomb())])
            ],
        )
        response, held = await _held_while(member.call(request, 9))
        assert _codes(response) == [ErrorCode.NOT_LEADER_OR_FOLLOWER]
        assert held < FOUR_MIB // 2
    finally:
        member.close()


async def test_a_request_s_batches_decompressing_past_its_bound_are_message_too_large(
    handler_broker: HandlerBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 256 MiB in the broker: each batch under the bound of one batch, the request over its own
    monkeypatch.setattr(prepared_appends, "REQUEST_MAX_DECOMPRESSED_BYTES", 2 * FOUR_MIB + FOUR_MIB // 2)
    await handler_broker.create_topic("t", partitions=4, configs={"compression.type": "gzip"})
    response = await handler_broker.call(_produce("t", _bomb(), partitions=4), 9)
    codes = _codes(response)
    assert codes.count(ErrorCode.NONE) == 2
    assert codes.count(ErrorCode.MESSAGE_TOO_LARGE) == 2
    assert sum(handler_broker.log("t", p).log_end_offset for p in range(4)) == 2


async def test_another_connection_s_produce_is_served_between_the_long_rewrites_of_two_others(
    handler_broker: HandlerBroker,
) -> None:
    # Two connections each ask for three long rewrites; a third connection's small produce is served
    # as soon as a thread is free, not after every rewrite queued before it (each request was one
    # task, and the two took both threads until they were done).
    await handler_broker.create_topic("attacked", partitions=3, configs={"compression.type": "gzip"})
    await handler_broker.create_topic("victim", configs={"compression.type": "gzip"})
    heavy = _produce("attacked", _bomb(32 * 1024 * 1024), partitions=3)
    first = asyncio.create_task(handler_broker.call(heavy, 9, client_port=50001))
    second = asyncio.create_task(handler_broker.call(heavy, 9, client_port=50002))
    for _ in range(3):  # both requests' work is queued first
        await asyncio.sleep(0)
    small = await handler_broker.call(_produce("victim", hand_built_batch(hand_built_record(0, b"hi"))), 9)
    assert _codes(small) == [ErrorCode.NONE]
    assert not first.done() and not second.done()
    assert _codes(await first) == _codes(await second) == [ErrorCode.NONE] * 3


@pytest.mark.parametrize(
    ("configs", "stored"),
    [
        pytest.param({"compression.type": "producer"}, (Compression.LZ4, None), id="producer"),
        pytest.param(
            {"compression.type": "gzip", "compression.gzip.level": "1"}, (Compression.GZIP, 1), id="gzip-1"
        ),
    ],
)
async def test_an_old_producer_s_message_set_is_converted_in_a_record_worker_to_the_codec_stored(
    handler_broker: HandlerBroker,
    monkeypatch: pytest.MonkeyPatch,
    configs: dict[str, str],
    stored: tuple[Compression, int | None],
) -> None:
    await handler_broker.create_topic("old", configs=configs)
    threads: set[str] = set()
    real = batch_module.RecordBatchBuilder.append

    def spy(self: RecordBatchBuilder, *args: Any, **kwargs: Any) -> int:
        threads.add(threading.current_thread().name)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(batch_module.RecordBatchBuilder, "append", spy)
    records = [Record(i, START_MS, b"k", b"value %d " % i * 50) for i in range(100)]
    message_set = build_message_set(records, magic=1, compression=Compression.LZ4)
    response = await handler_broker.call(_produce("old", message_set), 2)
    assert _codes(response) == [ErrorCode.NONE]
    assert threads and all(name.startswith("odradek-records") for name in threads)
    data = handler_broker.log("old").read(0, 1 << 20, isolation=FetchIsolation.LOG_END).read_bytes()
    monkeypatch.undo()
    expected = RecordBatchBuilder(0)
    for record in records:
        expected.append(record.timestamp, record.key, record.value)
    codec, level = stored
    assert RecordBatchHeader.read(data).compression is codec
    assert bytes(data[HEADER_SIZE:]) == compress(codec, expected.build()[HEADER_SIZE:], level=level)


async def test_a_compacted_topic_s_keys_are_checked_in_a_record_worker_not_on_the_event_loop(
    handler_broker: HandlerBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    await handler_broker.create_topic("c", configs={"cleanup.policy": "compact"})
    threads: list[str] = []
    real = prepared_appends.walk_records

    def spy(*args: Any, **kwargs: Any) -> Any:
        threads.append(threading.current_thread().name)
        return real(*args, **kwargs)

    monkeypatch.setattr(prepared_appends, "walk_records", spy)
    keyed = hand_built_record(0, b"a") + hand_built_record(1, b"b")
    keyless = hand_built_record(0, b"a") + hand_built_record(1, b"b", key=None)
    keyed_batch = hand_built_batch(keyed, Compression.ZSTD, count=2)
    keyless_batch = hand_built_batch(keyless, count=2)
    assert _codes(await handler_broker.call(_produce("c", keyed_batch), 9)) == [ErrorCode.NONE]
    refused = await handler_broker.call(_produce("c", keyless_batch), 9)
    assert _codes(refused) == [ErrorCode.INVALID_RECORD]
    assert [e.batch_index for e in refused.responses[0].partition_responses[0].record_errors] == [1]
    assert len(threads) == 2 and all(name.startswith("odradek-records") for name in threads)


@pytest.mark.parametrize("configs", [{"cleanup.policy": "compact"}, {}], ids=["compacted", "plain"])
async def test_a_batch_of_more_records_than_the_broker_takes_in_one_is_message_too_large_unread(
    handler_broker: HandlerBroker, monkeypatch: pytest.MonkeyPatch, configs: dict[str, str]
) -> None:
    # 1,000,000 in the broker: a few hundred bytes of zstd hold millions of seven-byte records, which
    # take seconds to read one by one in Python (a compacted topic's keys, an old consumer's fetch);
    # a producer told MESSAGE_TOO_LARGE splits its batch.
    monkeypatch.setattr(log_append, "MAX_RECORDS_PER_BATCH", 1000, raising=False)
    await handler_broker.create_topic("c", configs=configs)
    walked: list[int] = []
    monkeypatch.setattr(prepared_appends, "walk_records", lambda *a, **k: walked.append(1), raising=False)
    bomb = hand_built_batch(hand_built_record(0, None) * 1001, Compression.ZSTD, count=1001)
    response = await handler_broker.call(_produce("c", bomb), 9)
    assert _codes(response) == [ErrorCode.MESSAGE_TOO_LARGE]
    assert walked == []
    assert handler_broker.log("c").log_end_offset == 0


async def test_a_produce_whose_rewrites_the_stopping_broker_ends_closes_its_connection_unappended(
    handler_broker: HandlerBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The broker's close stops the record workers before it drains its connections: the rewrites
    # under way end at their next chunk instead of holding the stop until they are done.
    await handler_broker.create_topic("g", partitions=8, configs={"compression.type": "gzip"})
    rewriting = threading.Event()
    rebuilt: list[int] = []
    real = prepared_appends.rebuild_batch

    def spy(*args: Any, **kwargs: Any) -> bytearray:
        rebuilt.append(1)
        rewriting.set()
        return real(*args, **kwargs)

    monkeypatch.setattr(prepared_appends, "rebuild_batch", spy)
    request = _produce("g", _bomb(64 * 1024 * 1024), partitions=8)
    produce = asyncio.create_task(handler_broker.call(request, 9))
    assert await asyncio.to_thread(rewriting.wait, 30)
    handler_broker.services.record_workers.shutdown()
    with pytest.raises(CloseConnection):
        await produce
    assert len(rebuilt) < 8
    assert sum(handler_broker.log("g", p).log_end_offset for p in range(8)) == 0


@pytest.mark.parametrize(
    "message_set",
    [
        pytest.param(
            build_message_set([Record(0, START_MS, b"k", b"a")], magic=1, compression=Compression.GZIP)
            + build_message_set([Record(1, START_MS, b"k", b"b")], magic=1, compression=Compression.GZIP),
            id="two-compressed-wrappers",
        ),
        pytest.param(
            build_message_set([Record(0, START_MS, b"k", b"a")], magic=0)
            + build_message_set([Record(1, START_MS, b"k", b"b")], magic=1),
            id="magic-0-then-1",
        ),
    ],
)
async def test_an_old_producer_s_message_set_kafka_s_log_validator_refuses_is_invalid_record(
    handler_broker: HandlerBroker, message_set: bytes
) -> None:
    await handler_broker.create_topic("old")
    assert _codes(await handler_broker.call(_produce("old", message_set), 2)) == [ErrorCode.INVALID_RECORD]
    assert handler_broker.log("old").log_end_offset == 0
