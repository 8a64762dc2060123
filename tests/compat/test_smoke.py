"""Each Python client produces (topic auto-created) and reads back what it wrote, with keys and headers."""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.support.broker_process import BrokerProcess


def test_confluent_kafka_round_trip(shared_broker: BrokerProcess) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition

    producer = Producer({"bootstrap.servers": shared_broker.bootstrap, "linger.ms": 5})
    for i in range(500):
        producer.produce("smoke-confluent", key=b"%d" % i, value=b"v%d" % i, headers=[("h", b"x")])
    assert producer.flush(15) == 0
    consumer = Consumer(
        {"bootstrap.servers": shared_broker.bootstrap, "group.id": "unused", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition("smoke-confluent", 0, 0)])
    received = []
    deadline = time.monotonic() + 15
    while len(received) < 500 and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            received.append(message)
    consumer.close()
    assert [m.value() for m in received] == [b"v%d" % i for i in range(500)]
    assert received[0].key() == b"0" and received[0].headers() == [("h", b"x")]
    assert [m.offset() for m in received] == list(range(500))


@pytest.mark.parametrize("compression", ["gzip", None])
def test_kafka_python_round_trip(shared_broker: BrokerProcess, compression: str | None) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    topic = f"smoke-kafka-python-{compression}"
    producer = KafkaProducer(bootstrap_servers=shared_broker.bootstrap, compression_type=compression)
    futures = [
        producer.send(topic, key=b"k%d" % i, value=b"v%d" % i, headers=[("a", b"b")]) for i in range(100)
    ]
    producer.flush()
    assert [f.get(timeout=10).offset for f in futures] == list(range(100))
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=shared_broker.bootstrap, consumer_timeout_ms=3000)
    consumer.assign([TopicPartition(topic, 0)])
    consumer.seek_to_beginning()
    messages = list(consumer)
    consumer.close()
    assert [(m.key, m.value) for m in messages] == [(b"k%d" % i, b"v%d" % i) for i in range(100)]
    assert messages[0].headers == [("a", b"b")]


def test_aiokafka_round_trip(shared_broker: BrokerProcess) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.structs import TopicPartition

    async def scenario() -> list[bytes]:
        producer = AIOKafkaProducer(bootstrap_servers=shared_broker.bootstrap, compression_type="lz4")
        await producer.start()
        for i in range(100):
            await producer.send("smoke-aiokafka", key=b"k%d" % i, value=b"v%d" % i)
        await producer.flush()
        await producer.stop()
        consumer = AIOKafkaConsumer(bootstrap_servers=shared_broker.bootstrap)
        await consumer.start()
        consumer.assign([TopicPartition("smoke-aiokafka", 0)])
        await consumer.seek_to_beginning()
        values: list[bytes] = []
        while len(values) < 100:
            batches = await consumer.getmany(timeout_ms=3000)
            if not batches:
                break
            for messages in batches.values():
                values += [m.value for m in messages]
        await consumer.stop()
        return values

    assert asyncio.run(scenario()) == [b"v%d" % i for i in range(100)]
