"""confluent-kafka (librdkafka) against odradek: every codec, acks, idempotence, time lookups, limits."""

from __future__ import annotations

import time
from typing import Any, cast

import pytest
from confluent_kafka import (
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    Consumer,
    KafkaError,
    Message,
    TopicPartition,
)

from odradek.protocol.records import TimestampType
from odradek.protocol.records.header import iter_batch_headers
from tests.support.broker_process import BrokerProcess
from tests.support.interop import (
    INTEROP_PARTITIONS,
    SMALL_MESSAGE_MAX_BYTES,
    Sample,
    base_timestamp,
    by_partition,
    expected,
    librdkafka_codecs,
    log_append_time_topic,
    raw_fetch,
    samples,
    small_messages_topic,
    stored_batches,
    time_queries,
)
from tests.support.interop_clients import (
    confluent_consume,
    confluent_consumed,
    confluent_consumer,
    confluent_produce,
    confluent_producer,
)
from tests.support.raw_client import RawClient

pytestmark = pytest.mark.timeout(60)


def _error_code(message: Message) -> int | None:
    error = message.error()
    return None if error is None else int(error.code())


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_every_codec_round_trips_keys_headers_and_timestamps_over_explicit_partitions(
    interop_broker: BrokerProcess, codec: str
) -> None:
    topic = f"confluent-codec-{codec}"
    produced = samples(topic, INTEROP_PARTITIONS, 40, base_timestamp())
    reports = confluent_produce(
        confluent_producer(interop_broker.bootstrap, **{"compression.type": codec}), topic, produced
    )
    assert [r.error() for r in reports if r.error() is not None] == []
    want = expected(produced)
    assert {(r.partition(), r.offset()) for r in reports} == {
        (c.partition, c.offset) for p in want.values() for c in p
    }

    consumed = confluent_consume(interop_broker.bootstrap, topic, {p: len(v) for p, v in want.items()})
    assert by_partition(confluent_consumed(m) for m in consumed) == want
    assert {m.timestamp()[0] for m in consumed} == {TIMESTAMP_CREATE_TIME}
    stored = [b for p in want for b in stored_batches(interop_broker.port, topic, p)]
    assert librdkafka_codecs(stored) == {codec}


@pytest.mark.parametrize("acks", ["0", "1", "all"])
def test_each_acks_setting_delivers_everything(interop_broker: BrokerProcess, acks: str) -> None:
    topic = f"confluent-acks-{acks}"
    produced = samples(topic, INTEROP_PARTITIONS, 30, base_timestamp())
    reports = confluent_produce(confluent_producer(interop_broker.bootstrap, acks=acks), topic, produced)
    assert [r.error() for r in reports if r.error() is not None] == []
    if acks != "0":  # with acks=0 the producer never learns offsets
        assert sorted(cast(int, r.offset()) for r in reports if r.partition() == 0) == list(range(30))
    want = expected(produced)
    consumed = confluent_consume(interop_broker.bootstrap, topic, {p: len(v) for p, v in want.items()})
    assert by_partition(confluent_consumed(m) for m in consumed) == want


def test_an_idempotent_producer_writes_each_message_once_with_its_producer_id(
    interop_broker: BrokerProcess,
) -> None:
    topic = "confluent-idempotent"
    produced = samples(topic, INTEROP_PARTITIONS, 200, base_timestamp())
    producer = confluent_producer(
        interop_broker.bootstrap,
        **{"enable.idempotence": True, "linger.ms": 1, "batch.num.messages": 7},
    )
    reports = confluent_produce(producer, topic, produced)
    assert [r.error() for r in reports if r.error() is not None] == []
    want = expected(produced)
    consumed = confluent_consume(interop_broker.bootstrap, topic, {p: len(v) for p, v in want.items()})
    assert by_partition(confluent_consumed(m) for m in consumed) == want
    for partition in want:
        batches = stored_batches(interop_broker.port, topic, partition)
        assert len({b.producer_id for b in batches}) == 1 and batches[0].producer_id >= 0
        sequences = [(b.base_sequence, b.last_offset_delta) for b in batches]
        expected_sequence = 0
        for base_sequence, last_delta in sequences:  # sequences are contiguous per partition
            assert base_sequence == expected_sequence
            expected_sequence += last_delta + 1


def test_offsets_for_times_finds_the_first_offset_at_or_after_each_timestamp(
    interop_broker: BrokerProcess,
) -> None:
    topic = "confluent-times"
    produced = samples(topic, INTEROP_PARTITIONS, 20, base_timestamp())
    confluent_produce(confluent_producer(interop_broker.bootstrap), topic, produced)
    queries = time_queries(expected(produced))
    consumer = confluent_consumer(interop_broker.bootstrap)
    try:
        # One lookup per partition per request: a partition twice in one request is INVALID_REQUEST.
        for round_ in zip(*queries.values(), strict=True):
            asked = [TopicPartition(topic, p, ts) for p, (ts, _) in zip(queries, round_, strict=True)]
            found = consumer.offsets_for_times(asked, 10)
            assert [(tp.partition, tp.offset) for tp in found] == [
                (p, offset) for p, (_, offset) in zip(queries, round_, strict=True)
            ]
    finally:
        consumer.close()


def test_log_append_time_topics_carry_the_broker_clock(interop_broker: BrokerProcess) -> None:
    topic = log_append_time_topic(interop_broker.bootstrap, "confluent-append-time")
    produced = samples(topic, 1, 30, first_timestamp=1_000_000_000_000)  # 2001: clearly not the broker's
    before = int(time.time() * 1000)
    reports = confluent_produce(
        confluent_producer(interop_broker.bootstrap, **{"compression.type": "lz4"}), topic, produced
    )
    after = int(time.time() * 1000)
    assert [r.error() for r in reports if r.error() is not None] == []
    consumed = confluent_consume(interop_broker.bootstrap, topic, {0: len(produced)})
    assert [(m.key(), m.value()) for m in consumed] == [(s.key, s.value) for s in produced]
    for message in consumed:
        kind, timestamp = message.timestamp()
        assert kind == TIMESTAMP_LOG_APPEND_TIME and before <= timestamp <= after
    batches = stored_batches(interop_broker.port, topic, 0)
    assert {b.timestamp_type for b in batches} == {TimestampType.LOG_APPEND_TIME}


def _refused_then_stored(
    bootstrap: str, topic: str, refused: dict[str, Any], stored: dict[str, Any]
) -> Message:
    """Produce a record the broker refuses, then one it stores, both to partition 0; check the stored one
    gets offset 0 and is read back, and return the refused one's delivery report."""
    producer = confluent_producer(bootstrap, **{"linger.ms": 0, "retries": 0})
    reports: list[Message] = []
    for record in (refused, stored):
        producer.produce(topic, partition=0, on_delivery=lambda e, m: reports.append(m), **record)
        assert producer.flush(20) == 0
    refused_report, stored_report = reports
    assert stored_report.error() is None and stored_report.offset() == 0
    [message] = confluent_consume(bootstrap, topic, {0: 1})
    assert message.value() == stored["value"]
    return refused_report


def test_a_message_over_message_max_bytes_fails_with_message_too_large(
    interop_broker: BrokerProcess,
) -> None:
    topic = small_messages_topic(interop_broker.bootstrap, "confluent-too-large")
    too_large = _refused_then_stored(
        interop_broker.bootstrap, topic, {"value": b"x" * (SMALL_MESSAGE_MAX_BYTES * 3)}, {"value": b"fits"}
    )
    assert _error_code(too_large) == KafkaError.MSG_SIZE_TOO_LARGE


def test_a_timestamp_over_an_hour_ahead_fails_with_invalid_timestamp(interop_broker: BrokerProcess) -> None:
    """Kafka 4's default message.timestamp.after.max.ms (one hour) applies to CreateTime records."""
    now = int(time.time() * 1000)
    future = _refused_then_stored(
        interop_broker.bootstrap,
        "confluent-future-timestamp",
        {"value": b"late", "timestamp": now + 2 * 60 * 60 * 1000},
        {"value": b"now", "timestamp": now},
    )
    assert _error_code(future) == KafkaError.INVALID_TIMESTAMP


def _fill(bootstrap: str, topic: str, count: int) -> None:
    produced = [Sample(0, None, b"r%d" % i, (), base_timestamp() + i) for i in range(count)]
    assert all(r.error() is None for r in confluent_produce(confluent_producer(bootstrap), topic, produced))


def test_a_fetch_limit_smaller_than_a_few_batches_reads_every_record_once(
    interop_broker: BrokerProcess,
) -> None:
    """30 batches of ~1.1 KB read with max.partition.fetch.bytes=2500: every fetch stops at the last whole
    batch that fits (never inside one), and librdkafka reads on from there, each record exactly once."""
    topic = "confluent-small-fetches"
    producer = confluent_producer(interop_broker.bootstrap, **{"linger.ms": 0})
    values = [b"%04d" % i + b"v" * 250 for i in range(120)]
    now = base_timestamp()
    for group in range(30):  # a flush per group: a batch (or a few) of its own, ~1.1 KB at most
        group_values = values[group * 4 : group * 4 + 4]
        confluent_produce(producer, topic, [Sample(0, None, v, (), now) for v in group_values])
    assert len(stored_batches(interop_broker.port, topic, 0)) >= 30
    with RawClient(interop_broker.port) as client:
        region, _ = raw_fetch(client, topic, 0, 0, 2500)
    whole = sum(header.size for header in iter_batch_headers(region))
    assert 1000 < len(region) == whole <= 2500  # whole batches only, as many as fit
    received = confluent_consume(
        interop_broker.bootstrap, topic, {0: len(values)}, **{"max.partition.fetch.bytes": 2500}
    )
    assert [m.offset() for m in received] == list(range(len(values)))
    assert [m.value() for m in received] == values


def test_an_out_of_range_offset_resets_to_earliest(interop_broker: BrokerProcess) -> None:
    topic = "confluent-reset-earliest"
    _fill(interop_broker.bootstrap, topic, 10)
    consumer = confluent_consumer(interop_broker.bootstrap, **{"auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(topic, 0, 1000)])
    received: list[Message] = []
    deadline = time.monotonic() + 20
    try:
        while len(received) < 10 and time.monotonic() < deadline:
            received += [m for m in consumer.consume(100, 0.2) if m.error() is None]
    finally:
        consumer.close()
    assert [m.offset() for m in received] == list(range(10))


def test_an_out_of_range_offset_resets_to_latest(interop_broker: BrokerProcess) -> None:
    topic = "confluent-reset-latest"
    _fill(interop_broker.bootstrap, topic, 10)
    consumer = confluent_consumer(
        interop_broker.bootstrap, **{"auto.offset.reset": "latest", "enable.partition.eof": True}
    )
    consumer.assign([TopicPartition(topic, 0, 1000)])
    try:
        eof = _first_event(consumer, lambda m: _error_code(m) == KafkaError._PARTITION_EOF)
        assert eof.offset() == 10  # reset to the log end, not to the 1000 asked for
        _fill(interop_broker.bootstrap, topic, 1)
        message = _first_event(consumer, lambda m: m.error() is None)
        assert (message.offset(), message.value()) == (10, b"r0")
    finally:
        consumer.close()


def test_an_out_of_range_offset_without_reset_policy_is_reported(interop_broker: BrokerProcess) -> None:
    topic = "confluent-reset-error"
    _fill(interop_broker.bootstrap, topic, 3)
    consumer = confluent_consumer(interop_broker.bootstrap, **{"auto.offset.reset": "error"})
    consumer.assign([TopicPartition(topic, 0, 1000)])
    try:
        event = _first_event(consumer, lambda m: m.error() is not None)
        assert _error_code(event) == KafkaError._AUTO_OFFSET_RESET
    finally:
        consumer.close()


def _first_event(consumer: Consumer, matches: Any, timeout: float = 20) -> Message:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for message in consumer.consume(100, 0.2):
            if matches(message):
                return message
    raise AssertionError(f"no matching event within {timeout}s")
