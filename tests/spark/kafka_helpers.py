"""Producing test data with confluent-kafka and reading it back, independent of the code under test."""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

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


def copy_batch_and_streaming(
    spark: Any, options: dict[str, str], plaintext: str, prefix: str, checkpoint: str
) -> None:
    """Through Spark's own Kafka connector with `options` (a login): six records produced to
    `<prefix>-in` over `plaintext` are read back in a batch, copied to `<prefix>-batch-copy` by a batch
    write and to `<prefix>-stream-copy` by a streaming query, and both copies hold them all, in order."""
    produce(plaintext, f"{prefix}-in", 6)
    expected = sorted((i % 3, i // 3, b"k%d" % i, b"v%d" % i) for i in range(6))
    frame = spark.read.format("kafka").options(**options).option("subscribe", f"{prefix}-in").load()
    assert sorted((r.partition, r.offset, r.key, r.value) for r in frame.collect()) == expected
    frame.selectExpr("key", "value", "partition").write.format("kafka").options(**options).option(
        "topic", f"{prefix}-batch-copy"
    ).save()
    stream = (
        spark.readStream.format("kafka")
        .options(**options)
        .option("subscribe", f"{prefix}-in")
        .option("startingOffsets", "earliest")
        .load()
        .selectExpr("key", "value", "partition")
    )
    query = (
        stream.writeStream.format("kafka")
        .options(**options)
        .option("topic", f"{prefix}-stream-copy")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    try:
        query.awaitTermination(120)
        assert query.exception() is None, query.exception()
    finally:
        query.stop()
    for copy in (f"{prefix}-batch-copy", f"{prefix}-stream-copy"):
        got = [(m.partition, m.offset, m.key, m.value) for m in consume_all(plaintext, copy)]
        assert got == expected, copy
