"""Batch reads (`spark.read.format("odradek")`): exact offset ranges, every column as the broker has it."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from confluent_kafka import Producer

from tests.spark.kafka_helpers import consume_all, produce
from tests.support.broker_process import BrokerProcess


def read(spark: Any, broker: BrokerProcess, **options: str) -> Any:
    reader = spark.read.format("odradek").option("kafka.bootstrap.servers", broker.bootstrap)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def test_reads_every_message_with_all_columns(spark: Any, spark_broker: BrokerProcess) -> None:
    base = int(time.time() * 1000) - 60_000
    produce(spark_broker.bootstrap, "batch-all", 300, timestamp_ms=base, with_headers=True)
    expected = consume_all(spark_broker.bootstrap, "batch-all")

    rows = read(spark, spark_broker, subscribe="batch-all", includeHeaders="true").collect()

    assert len(rows) == 300
    got = {(r.partition, r.offset): r for r in rows}
    for m in expected:
        row = got[(m.partition, m.offset)]
        assert (row.topic, row.key, row.value) == (m.topic, m.key, m.value)
        assert int(row.timestamp.timestamp() * 1000) == m.timestamp
        assert row.timestampType == 0
        assert [(h.key, h.value) for h in row.headers] == list(m.headers)


def test_headers_column_only_when_asked(spark: Any, spark_broker: BrokerProcess) -> None:
    produce(spark_broker.bootstrap, "batch-noheaders", 3)
    df = read(spark, spark_broker, subscribe="batch-noheaders")
    assert df.columns == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]
    assert df.count() == 3


def test_per_partition_json_offsets(spark: Any, spark_broker: BrokerProcess) -> None:
    produce(spark_broker.bootstrap, "batch-json", 90)  # 30 per partition
    starting = {"batch-json": {"0": 10, "1": -2, "2": 25}}
    ending = {"batch-json": {"0": 20, "1": 7, "2": -1}}

    df = read(
        spark,
        spark_broker,
        subscribe="batch-json",
        startingOffsets=json.dumps(starting),
        endingOffsets=json.dumps(ending),
    )
    got = sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect())

    expected = (
        [(0, o) for o in range(10, 20)] + [(1, o) for o in range(0, 7)] + [(2, o) for o in range(25, 30)]
    )
    assert got == expected


def test_assign_reads_only_the_assigned_partitions(spark: Any, spark_broker: BrokerProcess) -> None:
    produce(spark_broker.bootstrap, "batch-assign", 30)
    df = read(spark, spark_broker, assign=json.dumps({"batch-assign": [0, 2]}))
    assert sorted({r.partition for r in df.select("partition").collect()}) == [0, 2]
    assert df.count() == 20


def test_timestamps_choose_offsets(spark: Any, spark_broker: BrokerProcess) -> None:
    base = 1_700_000_000_000
    produce(spark_broker.bootstrap, "batch-ts", 90, timestamp_ms=base)  # message i has timestamp base + i
    messages = consume_all(spark_broker.bootstrap, "batch-ts")

    # A global starting timestamp, per-partition ending timestamps.
    ending = {"batch-ts": {"0": str(base + 60), "1": str(base + 1_000_000), "2": str(base + 45)}}
    df = read(
        spark,
        spark_broker,
        subscribe="batch-ts",
        startingTimestamp=str(base + 30),
        endingOffsetsByTimestamp=json.dumps(ending),
    )
    got = sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect())

    def first_at_or_after(partition: int, ts: int) -> int:
        candidates = [m.offset for m in messages if m.partition == partition and m.timestamp >= ts]
        return min(candidates) if candidates else 30

    expected = []
    for partition in range(3):
        start = first_at_or_after(partition, base + 30)
        end = first_at_or_after(partition, int(ending["batch-ts"][str(partition)]))
        expected += [(partition, o) for o in range(start, end)]
    assert got == expected and got


def test_starting_timestamp_without_match_fails_or_takes_latest(
    spark: Any, spark_broker: BrokerProcess
) -> None:
    produce(spark_broker.bootstrap, "batch-ts-late", 9, timestamp_ms=1_700_000_000_000)
    late = str(1_800_000_000_000)
    with pytest.raises(Exception, match="No offset matched"):
        read(spark, spark_broker, subscribe="batch-ts-late", startingTimestamp=late).collect()
    df = read(
        spark,
        spark_broker,
        subscribe="batch-ts-late",
        startingTimestamp=late,
        startingOffsetsByTimestampStrategy="latest",
    )
    assert df.count() == 0


def test_min_partitions_splits_large_ranges(spark: Any, spark_broker: BrokerProcess) -> None:
    produce(spark_broker.bootstrap, "batch-split", 3000)
    df = read(spark, spark_broker, subscribe="batch-split", minPartitions="8")
    assert df.rdd.getNumPartitions() >= 8
    offsets = sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect())
    assert offsets == sorted((p, o) for p in range(3) for o in range(1000))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "One of the following options must be specified"),
        ({"subscribe": "a", "assign": '{"a":[0]}'}, "Only one of the following options"),
        ({"subscribe": "a", "startingOffsets": "latest"}, "starting offset can't be latest"),
        ({"subscribe": "a", "kafka.auto.offset.reset": "earliest"}, "auto.offset.reset' is not supported"),
        ({"subscribe": "a", "minPartitions": "0"}, "minPartitions must be positive"),
        ({"subscribe": "a", "startingOffset": "earliest"}, "Unknown option"),
    ],
)
def test_bad_options_fail_at_start(
    spark: Any, spark_broker: BrokerProcess, options: dict[str, str], message: str
) -> None:
    with pytest.raises(Exception, match=message):
        read(spark, spark_broker, **options).collect()


def test_read_committed_leaves_out_aborted_records_on_a_plaintext_listener(
    spark: Any, spark_broker: BrokerProcess
) -> None:
    """`kafka.isolation.level=read_committed` was handed to librdkafka only: the raw Fetch reader, which
    `reader=auto` picks on plaintext listeners, fetched read_uncommitted and returned aborted records."""
    producer = Producer({"bootstrap.servers": spark_broker.bootstrap, "transactional.id": "batch-rc-txn"})
    producer.init_transactions(30)
    for outcome, prefix in ((producer.abort_transaction, "aborted"), (producer.commit_transaction, "kept")):
        producer.begin_transaction()
        for i in range(6):
            producer.produce("batch-read-committed", f"{prefix}{i}".encode(), partition=i % 3)
        assert producer.flush(30) == 0  # in the log before the abort (librdkafka purges what it holds)
        outcome(30)
    values = sorted(
        r.value.decode()
        for r in read(
            spark,
            spark_broker,
            subscribe="batch-read-committed",
            **{"kafka.isolation.level": "read_committed"},
        ).collect()
    )
    assert values == [f"kept{i}" for i in range(6)]
