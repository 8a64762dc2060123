"""What the console's browser tests look at: topics, messages of every kind, a lagging consumer group."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from typing import Any

from tests.console.conftest import (
    BILLING_CONSUMED_PER_PARTITION,
    ORDERS_PARTITIONS,
    ORDERS_PER_PARTITION,
    RETENTION_MS,
)

BINARY_VALUE = bytes([0, 1, 2, 0xFF, 0xFE]) + b"odradek"


def seed(bootstrap: str, admin: Any) -> None:
    from confluent_kafka.admin import NewTopic

    futures = admin.create_topics(
        [
            NewTopic("orders", ORDERS_PARTITIONS, 1, config={"retention.ms": RETENTION_MS}),
            NewTopic("events", 1, 1),
        ]
    )
    for future in futures.values():
        future.result(30)
    produce_orders(bootstrap, ORDERS_PER_PARTITION)
    produce_events(bootstrap)
    commit_billing(bootstrap)


def produce_orders(bootstrap: str, per_partition: int, first: int = 0) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for partition in range(ORDERS_PARTITIONS):
        for number in range(first, first + per_partition):
            value = json.dumps({"order": number, "partition": partition, "item": "book"})
            producer.produce(
                "orders",
                value=value.encode(),
                key=f"customer-{number}".encode(),
                partition=partition,
                headers=[("source", b"shop"), ("trace", f"t-{number}".encode())],
            )
    assert producer.flush(30) == 0


@contextlib.contextmanager
def producing(bootstrap: str) -> Iterator[None]:
    """Orders produced in the background, a batch every 200 ms, while the block runs: steady throughput."""
    stop = threading.Event()

    def run() -> None:
        first = 100_000
        while not stop.is_set():
            produce_orders(bootstrap, 5, first=first)
            first += 5
            stop.wait(0.2)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(30)


@contextlib.contextmanager
def consuming(bootstrap: str, group: str, topic: str) -> Iterator[None]:
    """A member of `group` reading `topic` (and committing) in the background while the block runs;
    the block starts once it has been assigned partitions."""
    from confluent_kafka import Consumer

    assigned = threading.Event()
    stop = threading.Event()

    def run() -> None:
        consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "client.id": f"{group}-consumer",
                "auto.offset.reset": "earliest",
                "auto.commit.interval.ms": 500,  # commits often: the console's bytes out follow them
            }
        )
        consumer.subscribe([topic], on_assign=lambda consumer, partitions: assigned.set())
        try:
            while not stop.is_set():
                consumer.poll(0.2)
        finally:
            consumer.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        assert assigned.wait(60), f"{group} was never assigned partitions of {topic}"
        yield
    finally:
        stop.set()
        thread.join(30)


def produce_events(bootstrap: str) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce("events", value=b"plain text event", key=b"k1", partition=0)
    producer.produce("events", value=BINARY_VALUE, key=None, partition=0)
    producer.produce("events", value=b'{"nested": {"list": [1, 2, 3]}}', key=b"k3", partition=0)
    assert producer.flush(30) == 0


def commit_billing(bootstrap: str) -> None:
    """The group `billing` joins, reads the first messages of each orders partition, commits, and leaves."""
    import time

    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "billing",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    counts = dict.fromkeys(range(ORDERS_PARTITIONS), 0)
    deadline = time.monotonic() + 60
    try:
        consumer.subscribe(["orders"])
        while any(c < BILLING_CONSUMED_PER_PARTITION for c in counts.values()):
            assert time.monotonic() < deadline, f"billing consumed only {counts}"
            message = consumer.poll(0.5)
            if message is None or message.error() is not None:
                continue
            partition = message.partition()
            if counts[partition] < BILLING_CONSUMED_PER_PARTITION:
                counts[partition] += 1
            if counts[partition] == BILLING_CONSUMED_PER_PARTITION:
                consumer.pause([TopicPartition("orders", partition)])
        offsets = [
            TopicPartition("orders", p, BILLING_CONSUMED_PER_PARTITION) for p in range(ORDERS_PARTITIONS)
        ]
        consumer.commit(offsets=offsets, asynchronous=False)
    finally:
        consumer.close()
