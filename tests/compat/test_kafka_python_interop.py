"""kafka-python against odradek: codecs it can use here, acks, idempotence, time lookups, limits."""

from __future__ import annotations

import time
from typing import Any

import pytest
from kafka import KafkaConsumer, TopicPartition, codec
from kafka.consumer.fetcher import ConsumerRecord
from kafka.errors import MessageSizeTooLargeError

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
    wait_until,
)
from tests.support.interop_clients import (
    kafka_python_consume,
    kafka_python_consumed,
    kafka_python_consumer,
    kafka_python_produce,
    kafka_python_producer,
)
from tests.support.requirements import missing

pytestmark = pytest.mark.timeout(60)

CREATE_TIME = 0
LOG_APPEND_TIME = 1
_CODECS_AVAILABLE = {
    "none": True,
    "gzip": codec.has_gzip(),
    "snappy": codec.has_snappy(),
    "lz4": codec.has_lz4(),
    "zstd": codec.has_zstd(),
}


@pytest.mark.parametrize("codec_name", list(_CODECS_AVAILABLE))
def test_each_available_codec_round_trips_keys_headers_and_timestamps(
    interop_broker: BrokerProcess, codec_name: str
) -> None:
    if not _CODECS_AVAILABLE[codec_name]:
        missing(f"kafka-python has no {codec_name} here: its optional codec library is not installed")
    topic = f"kafka-python-codec-{codec_name}"
    produced = samples(topic, INTEROP_PARTITIONS, 40, base_timestamp())
    compression = None if codec_name == "none" else codec_name
    metadata = kafka_python_produce(
        kafka_python_producer(interop_broker.bootstrap, compression_type=compression), topic, produced
    )
    want = expected(produced)
    assert [(m.partition, m.offset) for m in metadata] == [
        (s.partition, i // INTEROP_PARTITIONS) for i, s in enumerate(produced)
    ]
    consumed = kafka_python_consume(interop_broker.bootstrap, topic, {p: len(v) for p, v in want.items()})
    assert by_partition(kafka_python_consumed(r) for r in consumed) == want
    assert {r.timestamp_type for r in consumed} == {CREATE_TIME}
    stored = [b for p in want for b in stored_batches(interop_broker.port, topic, p)]
    assert {b.compression for b in stored} == {Compression[codec_name.upper()]}


@pytest.mark.parametrize("acks", [0, 1, "all"])
def test_each_acks_setting_delivers_everything(interop_broker: BrokerProcess, acks: int | str) -> None:
    topic = f"kafka-python-acks-{acks}"
    produced = samples(topic, INTEROP_PARTITIONS, 20, base_timestamp())
    metadata = kafka_python_produce(
        kafka_python_producer(interop_broker.bootstrap, acks=acks), topic, produced
    )
    if acks != 0:  # with acks=0 the producer never learns offsets
        assert sorted(m.offset for m in metadata if m.partition == 1) == list(range(20))
    want = expected(produced)
    consumed = kafka_python_consume(interop_broker.bootstrap, topic, {p: len(v) for p, v in want.items()})
    assert by_partition(kafka_python_consumed(r) for r in consumed) == want


def test_an_idempotent_producer_writes_each_message_once(interop_broker: BrokerProcess) -> None:
    topic = "kafka-python-idempotent"
    produced = samples(topic, INTEROP_PARTITIONS, 60, base_timestamp())
    producer = kafka_python_producer(
        interop_broker.bootstrap, enable_idempotence=True, acks="all", batch_size=2000
    )
    kafka_python_produce(producer, topic, produced)
    want = expected(produced)
    consumed = kafka_python_consume(interop_broker.bootstrap, topic, {p: len(v) for p, v in want.items()})
    assert by_partition(kafka_python_consumed(r) for r in consumed) == want
    for partition in want:
        batches = stored_batches(interop_broker.port, topic, partition)
        assert len({b.producer_id for b in batches}) == 1 and batches[0].producer_id >= 0
        assert batches[0].base_sequence == 0


def test_offsets_for_times_finds_the_first_offset_at_or_after_each_timestamp(
    interop_broker: BrokerProcess,
) -> None:
    topic = "kafka-python-times"
    produced = samples(topic, INTEROP_PARTITIONS, 20, base_timestamp())
    kafka_python_produce(kafka_python_producer(interop_broker.bootstrap), topic, produced)
    queries = time_queries(expected(produced))
    consumer = kafka_python_consumer(interop_broker.bootstrap)
    try:
        for round_ in zip(*queries.values(), strict=True):
            asked = {TopicPartition(topic, p): ts for p, (ts, _) in zip(queries, round_, strict=True)}
            found = consumer.offsets_for_times(asked)
            answers = {tp.partition: (-1 if hit is None else hit.offset) for tp, hit in found.items()}
            assert answers == {p: offset for p, (_, offset) in zip(queries, round_, strict=True)}
    finally:
        consumer.close()


def test_log_append_time_topics_carry_the_broker_clock(interop_broker: BrokerProcess) -> None:
    topic = log_append_time_topic(interop_broker.bootstrap, "kafka-python-append-time")
    produced = samples(topic, 1, 30, first_timestamp=1_000_000_000_000)
    before = int(time.time() * 1000)
    metadata = kafka_python_produce(
        kafka_python_producer(interop_broker.bootstrap, compression_type="gzip"), topic, produced
    )
    after = int(time.time() * 1000)
    assert all(before <= m.timestamp <= after for m in metadata)  # the produce response's log-append time
    consumed = kafka_python_consume(interop_broker.bootstrap, topic, {0: len(produced)})
    assert [(r.key, r.value) for r in consumed] == [(s.key, s.value) for s in produced]
    assert {r.timestamp_type for r in consumed} == {LOG_APPEND_TIME}
    assert all(before <= r.timestamp <= after for r in consumed)
    batches = stored_batches(interop_broker.port, topic, 0)
    assert {b.timestamp_type for b in batches} == {TimestampType.LOG_APPEND_TIME}


def test_a_message_over_message_max_bytes_fails_with_message_too_large(
    interop_broker: BrokerProcess,
) -> None:
    topic = small_messages_topic(interop_broker.bootstrap, "kafka-python-too-large")
    producer = kafka_python_producer(interop_broker.bootstrap, linger_ms=0, retries=0)
    try:
        too_large = producer.send(topic, value=b"x" * (SMALL_MESSAGE_MAX_BYTES * 3))
        with pytest.raises(MessageSizeTooLargeError):
            too_large.get(timeout=20)
        assert producer.send(topic, value=b"fits").get(timeout=20).offset == 0
    finally:
        producer.close(5)


def _fill(bootstrap: str, topic: str, count: int) -> None:
    kafka_python_produce(
        kafka_python_producer(bootstrap),
        topic,
        [Sample(0, None, b"r%d" % i, (), base_timestamp() + i) for i in range(count)],
    )


def test_an_out_of_range_offset_resets_to_earliest(interop_broker: BrokerProcess) -> None:
    topic = "kafka-python-reset-earliest"
    _fill(interop_broker.bootstrap, topic, 10)
    consumer = kafka_python_consumer(interop_broker.bootstrap, auto_offset_reset="earliest")
    partition = TopicPartition(topic, 0)
    consumer.assign([partition])
    consumer.seek(partition, 1000)
    try:
        received = _poll(consumer, partition, 10)
    finally:
        consumer.close()
    assert [r.offset for r in received] == list(range(10))


def test_an_out_of_range_offset_resets_to_latest(interop_broker: BrokerProcess) -> None:
    topic = "kafka-python-reset-latest"
    _fill(interop_broker.bootstrap, topic, 10)
    consumer = kafka_python_consumer(interop_broker.bootstrap, auto_offset_reset="latest")
    partition = TopicPartition(topic, 0)
    consumer.assign([partition])
    consumer.seek(partition, 1000)
    try:

        def reset() -> bool:
            assert not consumer.poll(timeout_ms=50)
            return bool(consumer.position(partition) == 10)

        wait_until(reset, 20, "the consumer to reset offset 1000 to the log end (10)")
        _fill(interop_broker.bootstrap, topic, 1)
        assert [(r.offset, r.value) for r in _poll(consumer, partition, 1)] == [(10, b"r0")]
    finally:
        consumer.close()


def _poll(consumer: KafkaConsumer, partition: TopicPartition, count: int, timeout: float = 20) -> list[Any]:
    """Poll until `count` records of `partition` arrived or `timeout` passed; returns what came."""
    received: list[ConsumerRecord] = []
    deadline = time.monotonic() + timeout
    while len(received) < count and time.monotonic() < deadline:
        received += consumer.poll(timeout_ms=200).get(partition, [])
    return received
