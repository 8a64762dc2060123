"""aiokafka against odradek: every codec it offers (through cramjam), acks, idempotence, time lookups."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from typing import Any, TypeVar

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.errors import MessageSizeTooLargeError
from aiokafka.structs import ConsumerRecord, TopicPartition

from odradek.protocol.records import Compression, TimestampType
from tests.support.broker_process import BrokerProcess
from tests.support.interop import (
    INTEROP_PARTITIONS,
    SMALL_MESSAGE_MAX_BYTES,
    Consumed,
    Sample,
    base_timestamp,
    by_partition,
    expected,
    log_append_time_topic,
    samples,
    small_messages_topic,
    stored_batches,
    time_queries,
)

pytestmark = pytest.mark.timeout(60)

CREATE_TIME = 0
LOG_APPEND_TIME = 1
T = TypeVar("T")


def _run(coroutine: Awaitable[T], timeout: float = 40) -> T:
    async def bounded() -> T:
        return await asyncio.wait_for(coroutine, timeout)

    return asyncio.run(bounded())


async def _produce(bootstrap: str, topic: str, produced: list[Sample], **config: Any) -> list[Any]:
    """Send every sample to its explicit partition; returns each one's record metadata, in order."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, **{"linger_ms": 20, **config})
    await producer.start()
    try:
        futures = [
            await producer.send(
                topic,
                key=s.key,
                value=s.value,
                partition=s.partition,
                headers=list(s.headers),
                timestamp_ms=s.timestamp,
            )
            for s in produced
        ]
        return list(await asyncio.gather(*futures))
    finally:
        await producer.stop()


async def _consume(
    bootstrap: str, topic: str, counts: dict[int, int], timeout: float = 20
) -> list[ConsumerRecord]:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        consumer.assign([TopicPartition(topic, p) for p in counts])
        await consumer.seek_to_beginning()
        return await _read(consumer, sum(counts.values()), timeout)
    finally:
        await consumer.stop()


async def _read(consumer: AIOKafkaConsumer, wanted: int, timeout: float = 20) -> list[ConsumerRecord]:
    received: list[ConsumerRecord] = []
    deadline = time.monotonic() + timeout
    while len(received) < wanted and time.monotonic() < deadline:
        for records in (await consumer.getmany(timeout_ms=200)).values():
            received += records
    assert len(received) == wanted, f"read {len(received)} of {wanted} records within {timeout}s"
    return received


def _as_consumed(record: ConsumerRecord) -> Consumed:
    return Consumed(
        record.partition, record.offset, record.key, record.value, tuple(record.headers), record.timestamp
    )


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_every_codec_round_trips_keys_headers_and_timestamps(
    interop_broker: BrokerProcess, codec: str
) -> None:
    topic = f"aiokafka-codec-{codec}"
    produced = samples(topic, INTEROP_PARTITIONS, 40, base_timestamp())
    compression = None if codec == "none" else codec
    metadata = _run(_produce(interop_broker.bootstrap, topic, produced, compression_type=compression))
    assert [(m.partition, m.offset) for m in metadata] == [
        (s.partition, i // INTEROP_PARTITIONS) for i, s in enumerate(produced)
    ]
    want = expected(produced)
    consumed = _run(_consume(interop_broker.bootstrap, topic, {p: len(v) for p, v in want.items()}))
    assert by_partition(_as_consumed(r) for r in consumed) == want
    assert {r.timestamp_type for r in consumed} == {CREATE_TIME}
    stored = [b for p in want for b in stored_batches(interop_broker.port, topic, p)]
    assert {b.compression for b in stored} == {Compression[codec.upper()]}


@pytest.mark.parametrize("acks", [0, 1, "all"])
def test_each_acks_setting_delivers_everything(interop_broker: BrokerProcess, acks: int | str) -> None:
    topic = f"aiokafka-acks-{acks}"
    produced = samples(topic, INTEROP_PARTITIONS, 20, base_timestamp())
    metadata = _run(_produce(interop_broker.bootstrap, topic, produced, acks=acks))
    if acks != 0:
        assert sorted(m.offset for m in metadata if m.partition == 2) == list(range(20))
    want = expected(produced)
    consumed = _run(_consume(interop_broker.bootstrap, topic, {p: len(v) for p, v in want.items()}))
    assert by_partition(_as_consumed(r) for r in consumed) == want


def test_an_idempotent_producer_writes_each_message_once(interop_broker: BrokerProcess) -> None:
    topic = "aiokafka-idempotent"
    produced = samples(topic, INTEROP_PARTITIONS, 60, base_timestamp())
    _run(_produce(interop_broker.bootstrap, topic, produced, enable_idempotence=True, max_batch_size=2000))
    want = expected(produced)
    consumed = _run(_consume(interop_broker.bootstrap, topic, {p: len(v) for p, v in want.items()}))
    assert by_partition(_as_consumed(r) for r in consumed) == want
    for partition in want:
        batches = stored_batches(interop_broker.port, topic, partition)
        assert len({b.producer_id for b in batches}) == 1 and batches[0].producer_id >= 0
        assert batches[0].base_sequence == 0


def test_offsets_for_times_finds_the_first_offset_at_or_after_each_timestamp(
    interop_broker: BrokerProcess,
) -> None:
    topic = "aiokafka-times"
    produced = samples(topic, INTEROP_PARTITIONS, 20, base_timestamp())
    _run(_produce(interop_broker.bootstrap, topic, produced))
    queries = time_queries(expected(produced))

    async def lookups() -> None:
        consumer = AIOKafkaConsumer(bootstrap_servers=interop_broker.bootstrap, enable_auto_commit=False)
        await consumer.start()
        try:
            for round_ in zip(*queries.values(), strict=True):
                asked = {TopicPartition(topic, p): ts for p, (ts, _) in zip(queries, round_, strict=True)}
                found = await consumer.offsets_for_times(asked)
                answers = {tp.partition: (-1 if hit is None else hit.offset) for tp, hit in found.items()}
                assert answers == {p: offset for p, (_, offset) in zip(queries, round_, strict=True)}
        finally:
            await consumer.stop()

    _run(lookups())


def test_log_append_time_topics_carry_the_broker_clock(interop_broker: BrokerProcess) -> None:
    topic = log_append_time_topic(interop_broker.bootstrap, "aiokafka-append-time")
    produced = samples(topic, 1, 30, first_timestamp=1_000_000_000_000)
    before = int(time.time() * 1000)
    metadata = _run(_produce(interop_broker.bootstrap, topic, produced, compression_type="zstd"))
    after = int(time.time() * 1000)
    assert all(m.timestamp_type == LOG_APPEND_TIME and before <= m.timestamp <= after for m in metadata)
    consumed = _run(_consume(interop_broker.bootstrap, topic, {0: len(produced)}))
    assert [(r.key, r.value) for r in consumed] == [(s.key, s.value) for s in produced]
    assert all(r.timestamp_type == LOG_APPEND_TIME and before <= r.timestamp <= after for r in consumed)
    batches = stored_batches(interop_broker.port, topic, 0)
    assert {b.timestamp_type for b in batches} == {TimestampType.LOG_APPEND_TIME}


def test_a_message_over_message_max_bytes_fails_with_message_too_large(
    interop_broker: BrokerProcess,
) -> None:
    topic = small_messages_topic(interop_broker.bootstrap, "aiokafka-too-large")

    async def scenario() -> int:
        producer = AIOKafkaProducer(bootstrap_servers=interop_broker.bootstrap)
        await producer.start()
        try:
            with pytest.raises(MessageSizeTooLargeError):
                await producer.send_and_wait(topic, b"x" * (SMALL_MESSAGE_MAX_BYTES * 3))
            return int((await producer.send_and_wait(topic, b"fits")).offset)
        finally:
            await producer.stop()

    assert _run(scenario()) == 0


@pytest.mark.parametrize("reset", ["earliest", "latest"])
def test_an_out_of_range_offset_resets_by_auto_offset_reset(
    interop_broker: BrokerProcess, reset: str
) -> None:
    topic = f"aiokafka-reset-{reset}"
    _run(
        _produce(
            interop_broker.bootstrap,
            topic,
            [Sample(0, None, b"r%d" % i, (), base_timestamp()) for i in range(10)],
        )
    )

    async def scenario() -> list[tuple[int, bytes]]:
        consumer = AIOKafkaConsumer(
            bootstrap_servers=interop_broker.bootstrap, enable_auto_commit=False, auto_offset_reset=reset
        )
        await consumer.start()
        partition = TopicPartition(topic, 0)
        try:
            consumer.assign([partition])
            consumer.seek(partition, 1000)
            if reset == "earliest":
                return [(r.offset, r.value) for r in await _read(consumer, 10)]
            deadline = time.monotonic() + 20
            while await consumer.position(partition) != 10:
                assert not await consumer.getmany(timeout_ms=50)
                assert time.monotonic() < deadline, "no reset to the log end (10) within 20 s"
            await _produce(interop_broker.bootstrap, topic, [Sample(0, None, b"new", (), base_timestamp())])
            return [(r.offset, r.value) for r in await _read(consumer, 1)]
        finally:
            await consumer.stop()

    received = _run(scenario())
    if reset == "earliest":
        assert received == [(i, b"r%d" % i) for i in range(10)]
    else:
        assert received == [(10, b"new")]
