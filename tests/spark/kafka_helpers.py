"""Producing test data with confluent-kafka and reading it back, independent of the code under test."""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

from confluent_kafka import Consumer, Producer, TopicPartition


@dataclass(frozen=True)
class Message:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: tuple[tuple[str, bytes | None], ...] = ()


def produce(
    bootstrap: str,
    topic: str,
    count: int,
    partitions: int = 3,
    start: int = 0,
    timestamp_ms: int | None = None,
    with_headers: bool = False,
) -> None:
    """`count` messages, value `v<i>`, key `k<i>`, round-robin over partitions; optional fixed timestamp
    (then message i gets timestamp_ms + i)."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 2})
    for i in range(start, start + count):
        producer.produce(
            topic,
            value=b"v%d" % i,
            key=b"k%d" % i,
            partition=i % partitions,
            timestamp=0 if timestamp_ms is None else timestamp_ms + i,
            headers=[("n", b"%d" % i), ("empty", None)] if with_headers else None,
        )
        if i % 5000 == 0:
            producer.poll(0)
    assert producer.flush(30) == 0


def consume_all(bootstrap: str, topic: str, partitions: Iterable[int] = (0, 1, 2)) -> list[Message]:
    """Every message now in the topic's partitions, in partition then offset order."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "tests-reader", "enable.auto.commit": False}
    )
    result: list[Message] = []
    try:
        for partition in partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
            if high <= low:
                continue
            consumer.assign([TopicPartition(topic, partition, low)])
            got: list[Message] = []
            deadline = time.monotonic() + 30
            while len(got) < high - low and time.monotonic() < deadline:
                for m in consumer.consume(1000, timeout=1):
                    assert m.error() is None, m.error()
                    got.append(
                        Message(
                            m.topic(),
                            m.partition(),
                            m.offset(),
                            m.key(),
                            m.value(),
                            m.timestamp()[1],
                            tuple(m.headers() or ()),
                        )
                    )
            result.extend(got)
    finally:
        consumer.close()
    return result
