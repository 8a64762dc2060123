"""What the interop tests produce and how they compare it with what comes back, whatever the client.

Every client test produces `samples(...)`: records spread over explicit partitions, with keys (some
null, some empty), values (some null, some large and compressible), headers (none, several, a repeated
key, an empty value) and explicit, strictly increasing timestamps. What a client consumes is turned
into `Consumed` tuples and compared with `expected(...)`: per partition, in order, offsets 0..n-1.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from odradek.protocol.records import RecordBatch, iter_record_batches
from tests.support.raw_client import RawClient

#: Partitions of every topic auto-created on the interop broker (tests/compat/conftest.py).
INTEROP_PARTITIONS = 3
#: `max.message.bytes` of the topics that test MESSAGE_TOO_LARGE.
SMALL_MESSAGE_MAX_BYTES = 10_000
#: Gap between consecutive samples' timestamps, so offsets-by-time has distinct answers.
TIMESTAMP_STEP_MS = 1000


@dataclass(frozen=True)
class Sample:
    partition: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...]
    timestamp: int


class Consumed(NamedTuple):
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...]
    timestamp: int


def base_timestamp() -> int:
    """An hour ago, to the second: old enough to be clearly the producer's, young enough for retention."""
    return (int(time.time()) - 3600) * 1000


def samples(prefix: str, partitions: int, per_partition: int, first_timestamp: int) -> list[Sample]:
    """Records in production order, round-robin over the partitions, timestamps increasing."""
    out = []
    for i in range(partitions * per_partition):
        partition = i % partitions
        n = i // partitions
        key: bytes | None = f"{prefix}-key-{n}".encode()
        value: bytes | None = f"{prefix}-value-{partition}-{n}".encode()
        headers: tuple[tuple[str, bytes], ...] = ()
        if n % 7 == 3:
            key = None
        elif n % 7 == 4:
            key = b""
        if n % 11 == 5:
            value = None  # a tombstone: always keyed (kafka-python refuses a record with neither)
            key = key or f"{prefix}-tombstone-{n}".encode()
        elif n % 5 == 2:
            value = (b"compressible " * 200) + str(n).encode()
        if n % 3 == 1:
            headers = (("trace", f"t{n}".encode()), ("source", prefix.encode()))
        elif n % 3 == 2:
            headers = (("dup", b"1"), ("dup", b"2"), ("empty", b""))
        out.append(Sample(partition, key, value, headers, first_timestamp + i * TIMESTAMP_STEP_MS))
    return out


def expected(produced: Iterable[Sample]) -> dict[int, list[Consumed]]:
    """What a consumer must read back: per partition, in production order, offsets from 0."""
    result: dict[int, list[Consumed]] = {}
    for sample in produced:
        partition = result.setdefault(sample.partition, [])
        partition.append(
            Consumed(
                sample.partition, len(partition), sample.key, sample.value, sample.headers, sample.timestamp
            )
        )
    return result


def time_queries(partitions: dict[int, list[Consumed]]) -> dict[int, list[tuple[int, int]]]:
    """Per partition, (timestamp, offset a lookup by that time must find): -1 past the newest record."""
    queries: dict[int, list[tuple[int, int]]] = {}
    for partition, records in partitions.items():
        asked = [(records[0].timestamp - 10_000_000, 0)]
        for record in records[::4]:
            asked.append((record.timestamp, record.offset))
            asked.append((record.timestamp - 1, record.offset))  # between two records
            following = record.offset + 1 if record.offset + 1 < len(records) else -1
            asked.append((record.timestamp + 1, following))
        asked.append((records[-1].timestamp + 1, -1))
        queries[partition] = asked
    return queries


def by_partition(consumed: Iterable[Consumed]) -> dict[int, list[Consumed]]:
    """Consumed records grouped per partition, in the order they were received."""
    result: dict[int, list[Consumed]] = {}
    for record in consumed:
        result.setdefault(record.partition, []).append(record)
    return result


def wait_until(predicate: Callable[[], bool], timeout: float, what: str, interval: float = 0.02) -> None:
    """Poll `predicate` until true; fail with `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def produce_acknowledged(
    bootstrap: str, topic: str, values: list[bytes], timeout: float, **settings: Any
) -> list[int]:
    """confluent-kafka, acks=all, idempotent, to partition 0: the offsets the broker acknowledged, in
    the order acknowledged (an AssertionError names any delivery error)."""
    import confluent_kafka

    producer = confluent_kafka.Producer(
        {"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True, **settings}
    )
    offsets: list[int] = []
    errors: list[Any] = []

    def delivered(error: Any, message: Any) -> None:
        if error is not None:
            errors.append(error)
        else:
            offsets.append(message.offset())

    for value in values:
        producer.produce(topic, value, partition=0, on_delivery=delivered)
        producer.poll(0)
    assert producer.flush(timeout) == 0
    assert not errors, errors
    return offsets


def consume_partition_zero(
    bootstrap: str, topic: str, expected: int, timeout: float, **settings: Any
) -> list[bytes]:
    """kafka-python (with `settings`, e.g. client_rack), from the beginning of partition 0: the values
    read once `expected` have come (or what came within `timeout`)."""
    from kafka import KafkaConsumer
    from kafka import TopicPartition as ClientPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, consumer_timeout_ms=3000, **settings)
    try:
        tp = ClientPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        got: list[bytes] = []
        deadline = time.monotonic() + timeout
        while len(got) < expected and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                got.extend(r.value for r in records)
        return got
    finally:
        consumer.close()


def create_topic(
    bootstrap: str, name: str, partitions: int = 1, configs: dict[str, str] | None = None
) -> None:
    """Create a topic with topic-level configs (CreateTopics through confluent-kafka's AdminClient)."""
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.cimpl import NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = NewTopic(name, partitions, 1, config=dict(configs or {}))
    admin.create_topics([topic], operation_timeout=10)[name].result(15)


def log_append_time_topic(bootstrap: str, name: str) -> str:
    create_topic(bootstrap, name, configs={"message.timestamp.type": "LogAppendTime"})
    return name


def small_messages_topic(bootstrap: str, name: str) -> str:
    create_topic(bootstrap, name, configs={"max.message.bytes": str(SMALL_MESSAGE_MAX_BYTES)})
    return name


def librdkafka_codecs(stored: Iterable[RecordBatch]) -> set[str]:
    """The codecs of batches written by librdkafka, which sends a batch uncompressed when compressing
    does not make it smaller (a batch of one short record, say): NONE may appear beside the codec."""
    return {b.compression.name.lower() for b in stored} - {"none"} or {"none"}


def stored_batches(port: int, topic: str, partition: int) -> list[RecordBatch]:
    """The batches the broker holds for a partition, read with a raw Fetch v11 from offset 0.

    Tests use it to see what a client really sent: the codec, producer id and sequence, timestamp type.
    """
    batches: list[RecordBatch] = []
    offset = 0
    with RawClient(port) as client:
        while True:
            records, high_watermark = raw_fetch(client, topic, partition, offset, 1 << 22)
            fetched = list(iter_record_batches(records))
            if not fetched:
                return batches
            batches += fetched
            offset = fetched[-1].next_offset
            if offset >= high_watermark:
                return batches


def raw_fetch(
    client: RawClient, topic: str, partition: int, offset: int, partition_max_bytes: int
) -> tuple[bytes, int]:
    """One Fetch v11 of a partition: its records bytes, as the broker sent them, and the high watermark."""
    request = FetchRequest(
        max_wait_ms=0,
        min_bytes=0,
        topics=[
            FetchTopic(
                topic=topic,
                partitions=[
                    FetchPartition(
                        partition=partition, fetch_offset=offset, partition_max_bytes=partition_max_bytes
                    )
                ],
            )
        ],
    )
    [data] = client.request(request, 11).responses[0].partitions
    assert data.error_code == ErrorCode.NONE, f"fetch of {topic}-{partition}: error {data.error_code}"
    return bytes(data.records or b""), data.high_watermark
