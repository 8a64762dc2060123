"""aiokafka against odradek: every codec it offers (through cramjam), acks, idempotence, time lookups."""

from __future__ import annotations

import time
from typing import TypeVar

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.errors import MessageSizeTooLargeError
from aiokafka.structs import TopicPartition

from odradek.protocol.records import Compression, TimestampType
from tests.support.broker_process import BrokerProcess
from tests.support.interop import (
    INTEROP_PARTITIONS,
    SMALL_MESSAGE_MAX_BYTES,
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
from tests.support.interop_clients import (
    aiokafka_consume,
    aiokafka_consumed,
    aiokafka_produce,
    aiokafka_read,
    aiokafka_run,
)

pytestmark = pytest.mark.timeout(60)

CREATE_TIME = 0
LOG_APPEND_TIME = 1
T = TypeVar("T")


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_every_codec_round_trips_keys_headers_and_timestamps(
    interop_broker: BrokerProcess, codec: str
) -> None:
    topic = f"aiokafka-codec-{codec}"
    produced = samples(topic, INTEROP_PARTITIONS, 40, base_timestamp())
    compression = None if codec == "none" else codec
    metadata = aiokafka_run(
        aiokafka_produce(interop_broker.bootstrap, topic, produced, compression_type=compression)
    )
    assert [(m.partition, m.offset) for m in metadata] == [
        (s.partition, i // INTEROP_PARTITIONS) for i, s in enumerate(produced)
    ]
    want = expected(produced)
    consumed = aiokafka_run(
        aiokafka_consume(interop_broker.bootstrap, topic, {p: len(v) for p, v in want.items()})
    )
    assert by_partition(aiokafka_consumed(r) for r in consumed) == want
    assert {r.timestamp_type for r in consumed} == {CREATE_TIME}
    stored = [b for p in want for b in stored_batches(interop_broker.port, topic, p)]
    assert {b.compression for b in stored} == {Compression[codec.upper()]}


@pytest.mark.parametrize("acks", [0, 1, "all"])
def test_each_acks_setting_delivers_everything(interop_broker: BrokerProcess, acks: int | str) -> None:
    topic = f"aiokafka-acks-{acks}"
    produced = samples(topic, INTEROP_PARTITIONS, 20, base_timestamp())
    metadata = aiokafka_run(aiokafka_produce(interop_broker.bootstrap, topic, produced, acks=acks))
    if acks != 0:
        assert sorted(m.offset for m in metadata if m.partition == 2) == list(range(20))
    want = expected(produced)
    consumed = aiokafka_run(
        aiokafka_consume(interop_broker.bootstrap, topic, {p: len(v) for p, v in want.items()})
    )
    assert by_partition(aiokafka_consumed(r) for r in consumed) == want


def test_an_idempotent_producer_writes_each_message_once(interop_broker: BrokerProcess) -> None:
    topic = "aiokafka-idempotent"
    produced = samples(topic, INTEROP_PARTITIONS, 60, base_timestamp())
    aiokafka_run(
        aiokafka_produce(
            interop_broker.bootstrap, topic, produced, enable_idempotence=True, max_batch_size=2000
        )
    )
    want = expected(produced)
    consumed = aiokafka_run(
        aiokafka_consume(interop_broker.bootstrap, topic, {p: len(v) for p, v in want.items()})
    )
    assert by_partition(aiokafka_consumed(r) for r in consumed) == want
    for partition in want:
        batches = stored_batches(interop_broker.port, topic, partition)
        assert len({b.producer_id for b in batches}) == 1 and batches[0].producer_id >= 0
        assert batches[0].base_sequence == 0


def test_offsets_for_times_finds_the_first_offset_at_or_after_each_timestamp(
    interop_broker: BrokerProcess,
) -> None:
    topic = "aiokafka-times"
    produced = samples(topic, INTEROP_PARTITIONS, 20, base_timestamp())
    aiokafka_run(aiokafka_produce(interop_broker.bootstrap, topic, produced))
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

    aiokafka_run(lookups())


def test_log_append_time_topics_carry_the_broker_clock(interop_broker: BrokerProcess) -> None:
    topic = log_append_time_topic(interop_broker.bootstrap, "aiokafka-append-time")
    produced = samples(topic, 1, 30, first_timestamp=1_000_000_000_000)
    before = int(time.time() * 1000)
    metadata = aiokafka_run(
        aiokafka_produce(interop_broker.bootstrap, topic, produced, compression_type="zstd")
    )
    after = int(time.time() * 1000)
    assert all(m.timestamp_type == LOG_APPEND_TIME and before <= m.timestamp <= after for m in metadata)
    consumed = aiokafka_run(aiokafka_consume(interop_broker.bootstrap, topic, {0: len(produced)}))
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

    assert aiokafka_run(scenario()) == 0


@pytest.mark.parametrize("reset", ["earliest", "latest"])
def test_an_out_of_range_offset_resets_by_auto_offset_reset(
    interop_broker: BrokerProcess, reset: str
) -> None:
    topic = f"aiokafka-reset-{reset}"
    aiokafka_run(
        aiokafka_produce(
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
                return [(r.offset, r.value) for r in await aiokafka_read(consumer, 10)]
            deadline = time.monotonic() + 20
            while await consumer.position(partition) != 10:
                assert not await consumer.getmany(timeout_ms=50)
                assert time.monotonic() < deadline, "no reset to the log end (10) within 20 s"
            await aiokafka_produce(
                interop_broker.bootstrap, topic, [Sample(0, None, b"new", (), base_timestamp())]
            )
            return [(r.offset, r.value) for r in await aiokafka_read(consumer, 1)]
        finally:
            await consumer.stop()

    received = aiokafka_run(scenario())
    if reset == "earliest":
        assert received == [(i, b"r%d" % i) for i in range(10)]
    else:
        assert received == [(10, b"new")]
