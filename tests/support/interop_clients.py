"""The produce and consume loops of the clients the compat tests drive (confluent-kafka,
kafka-python, aiokafka), shared by the tests of each client and by those that mix them: every
sample sent to its own partition, every partition read back to a count within a timeout."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from typing import Any, TypeVar, cast

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.structs import ConsumerRecord as AioRecord
from aiokafka.structs import TopicPartition as AioPartition
from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KafkaPartition
from kafka.consumer.fetcher import ConsumerRecord as KafkaRecord

from tests.support.interop import Consumed, Sample

T = TypeVar("T")

# -- confluent-kafka (librdkafka) ---------------------------------------------------------------


def confluent_producer(bootstrap: str, **config: Any) -> Producer:
    return Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "socket.timeout.ms": 10000, **config})


def confluent_produce(producer: Producer, topic: str, produced: list[Sample]) -> list[Message]:
    """Produce every sample to its explicit partition; returns the delivery reports, failed ones included."""
    reports: list[Message] = []

    def delivered(error: KafkaError | None, message: Message) -> None:
        reports.append(message)

    for sample in produced:
        producer.produce(
            topic,
            key=sample.key,
            value=sample.value,
            partition=sample.partition,
            headers=list(sample.headers),
            timestamp=sample.timestamp,
            on_delivery=delivered,
        )
        producer.poll(0)
    assert producer.flush(20) == 0, "messages still in the producer's queue after 20 s"
    assert len(reports) == len(produced)
    return reports


def confluent_consumer(bootstrap: str, **config: Any) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "interop-confluent-unused",
            "enable.auto.commit": False,
            "socket.timeout.ms": 10000,
            **config,
        }
    )


def confluent_consumed(message: Message) -> Consumed:
    headers = cast(list[tuple[str, bytes]], message.headers() or [])
    return Consumed(
        cast(int, message.partition()),
        cast(int, message.offset()),
        message.key(),
        message.value(),
        tuple(headers),
        message.timestamp()[1],
    )


def confluent_consume(
    bootstrap: str, topic: str, counts: dict[int, int], start: int = 0, timeout: float = 20, **config: Any
) -> list[Message]:
    """Read `counts[p]` messages from each partition p, starting at `start`, with a consumer of `config`;
    fails after `timeout`."""
    consumer = confluent_consumer(bootstrap, **config)
    consumer.assign([TopicPartition(topic, p, start) for p in counts])
    wanted = sum(counts.values())
    received: list[Message] = []
    deadline = time.monotonic() + timeout
    try:
        while len(received) < wanted and time.monotonic() < deadline:
            for message in consumer.consume(num_messages=1000, timeout=0.2):
                assert message.error() is None, message.error()
                received.append(message)
    finally:
        consumer.close()
    assert len(received) == wanted, f"read {len(received)} of {wanted} messages within {timeout}s"
    return received


# -- kafka-python -------------------------------------------------------------------------------


def kafka_python_producer(bootstrap: str, **config: Any) -> KafkaProducer:
    return KafkaProducer(
        bootstrap_servers=bootstrap, **{"linger_ms": 20, "request_timeout_ms": 10000, **config}
    )


def kafka_python_produce(producer: KafkaProducer, topic: str, produced: list[Sample]) -> list[Any]:
    """Send every sample to its explicit partition; returns the record metadata of each, in order."""
    try:
        futures = [producer.send(topic, **_send_arguments(s)) for s in produced]
        producer.flush(20)
        return [f.get(timeout=20) for f in futures]
    finally:
        producer.close(5)


def kafka_python_consumer(bootstrap: str, **config: Any) -> KafkaConsumer:
    return KafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, request_timeout_ms=10000, **config
    )


def kafka_python_consumed(record: KafkaRecord) -> Consumed:
    return Consumed(
        record.partition, record.offset, record.key, record.value, tuple(record.headers), record.timestamp
    )


def kafka_python_consume(
    bootstrap: str, topic: str, counts: dict[int, int], timeout: float = 20
) -> list[KafkaRecord]:
    consumer = kafka_python_consumer(bootstrap)
    consumer.assign([KafkaPartition(topic, p) for p in counts])
    consumer.seek_to_beginning()
    wanted = sum(counts.values())
    received: list[KafkaRecord] = []
    deadline = time.monotonic() + timeout
    try:
        while len(received) < wanted and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=200).values():
                received += records
    finally:
        consumer.close()
    assert len(received) == wanted, f"read {len(received)} of {wanted} records within {timeout}s"
    return received


# -- aiokafka -----------------------------------------------------------------------------------


def aiokafka_run(coroutine: Awaitable[T], timeout: float = 40) -> T:
    async def bounded() -> T:
        return await asyncio.wait_for(coroutine, timeout)

    return asyncio.run(bounded())


async def aiokafka_produce(bootstrap: str, topic: str, produced: list[Sample], **config: Any) -> list[Any]:
    """Send every sample to its explicit partition; returns each one's record metadata, in order."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, **{"linger_ms": 20, **config})
    await producer.start()
    try:
        futures = [await producer.send(topic, **_send_arguments(s)) for s in produced]
        return list(await asyncio.gather(*futures))
    finally:
        await producer.stop()


async def aiokafka_consume(
    bootstrap: str, topic: str, counts: dict[int, int], timeout: float = 20
) -> list[AioRecord]:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        consumer.assign([AioPartition(topic, p) for p in counts])
        await consumer.seek_to_beginning()
        return await aiokafka_read(consumer, sum(counts.values()), timeout)
    finally:
        await consumer.stop()


async def aiokafka_read(consumer: AIOKafkaConsumer, wanted: int, timeout: float = 20) -> list[AioRecord]:
    received: list[AioRecord] = []
    deadline = time.monotonic() + timeout
    while len(received) < wanted and time.monotonic() < deadline:
        for records in (await consumer.getmany(timeout_ms=200)).values():
            received += records
    assert len(received) == wanted, f"read {len(received)} of {wanted} records within {timeout}s"
    return received


def aiokafka_consumed(record: AioRecord) -> Consumed:
    return Consumed(
        record.partition, record.offset, record.key, record.value, tuple(record.headers), record.timestamp
    )


def _send_arguments(sample: Sample) -> dict[str, Any]:
    """A sample as kafka-python's and aiokafka's ``send`` take it (their arguments are the same)."""
    return {
        "key": sample.key,
        "value": sample.value,
        "partition": sample.partition,
        "headers": list(sample.headers),
        "timestamp_ms": sample.timestamp,
    }
