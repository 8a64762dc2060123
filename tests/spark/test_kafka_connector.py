"""Spark's own Kafka connector (`spark-sql-kafka-0-10`, the `kafka` format, with Apache Kafka's Java
client inside) against a single odradek node: batch and streaming reads and writes, `kafka.group.id`,
`startingOffsetsByTimestamp`, `includeHeaders`. The jars come from tests/support/spark_kafka_jars.py; the
session is the one every Spark test shares (conftest.py), the broker this module's own."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.spark.kafka_helpers import Message, consume_all, produce
from tests.spark.pipeline_commands import SUMMARY, parquet_rows, run_pipeline_command
from tests.support.broker_process import BrokerProcess
from tests.support.spark_kafka_jars import spark_jars_setting

#: Timestamps of the produced records: record i is stamped BASE_MS + i (CreateTime).
BASE_MS = 1_700_000_000_000
COUNT = 9
PARTITIONS = 3


def expected_record(topic: str, i: int) -> tuple[Any, ...]:
    """Record i of kafka_helpers.produce: partition i % 3, offset i // 3 there."""
    return (topic, i % PARTITIONS, i // PARTITIONS, b"k%d" % i, b"v%d" % i, BASE_MS + i, 0)


@pytest.fixture(scope="module")
def broker(spark_broker: BrokerProcess) -> Iterator[BrokerProcess]:
    produce(spark_broker.bootstrap, "connector-in", COUNT, timestamp_ms=BASE_MS, with_headers=True)
    yield spark_broker


def kafka_read(spark: Any, broker: BrokerProcess, topic: str, **options: str) -> Any:
    return (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("subscribe", topic)
        .options(**options)
        .load()
    )


def record_tuples(frame: Any) -> list[tuple[Any, ...]]:
    rows = frame.selectExpr(
        "topic", "partition", "offset", "key", "value", "unix_millis(timestamp) AS ts", "timestampType"
    ).collect()
    return sorted(tuple(row) for row in rows)


def test_batch_read_gives_every_record_with_its_partition_offset_and_timestamp(
    kafka_connector: Any, broker: BrokerProcess
) -> None:
    frame = kafka_read(kafka_connector, broker, "connector-in")
    assert frame.columns == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]
    assert record_tuples(frame) == sorted(expected_record("connector-in", i) for i in range(COUNT))


def test_include_headers_gives_each_records_headers_in_order_a_null_value_kept(
    kafka_connector: Any, broker: BrokerProcess
) -> None:
    frame = kafka_read(kafka_connector, broker, "connector-in", includeHeaders="true")
    rows = frame.select("partition", "offset", "headers").collect()
    got = sorted((r.partition, r.offset, [(h.key, h.value) for h in r.headers]) for r in rows)
    assert got == sorted(
        (i % PARTITIONS, i // PARTITIONS, [("n", b"%d" % i), ("empty", None)]) for i in range(COUNT)
    )


def test_offsets_by_timestamp_start_at_the_first_record_at_or_after_each_partitions_time(
    kafka_connector: Any, broker: BrokerProcess
) -> None:
    """ListOffsets by timestamp, as the Java admin client asks it: the start is the first record at or
    after the time, the end (exclusive) the first at or after the ending time."""
    frame = kafka_read(
        kafka_connector,
        broker,
        "connector-in",
        startingOffsetsByTimestamp=by_partition("connector-in", BASE_MS + 3),
        endingOffsetsByTimestamp=by_partition("connector-in", BASE_MS + 7),
    )
    assert record_tuples(frame) == sorted(expected_record("connector-in", i) for i in (3, 4, 5, 6))


def by_partition(topic: str, value: int) -> str:
    """Spark's per-partition JSON, the same value for every partition."""
    return json.dumps({topic: {str(p): value for p in range(PARTITIONS)}})


def test_a_starting_timestamp_after_every_record_fails_or_starts_at_the_end_by_strategy(
    kafka_connector: Any, broker: BrokerProcess
) -> None:
    """No offset at or after the time (ListOffsets answers -1): `error` (the default) fails the read,
    `latest` starts at the end and reads nothing."""
    after = by_partition("connector-in", BASE_MS + 1_000_000)
    with pytest.raises(Exception, match="No offset matched"):
        kafka_read(kafka_connector, broker, "connector-in", startingOffsetsByTimestamp=after).collect()
    latest = kafka_read(
        kafka_connector,
        broker,
        "connector-in",
        startingOffsetsByTimestamp=after,
        startingOffsetsByTimestampStrategy="latest",
    )
    assert latest.collect() == []


class BatchRecorder:
    """A foreachBatch function keeping each micro-batch's records by batch id."""

    def __init__(self) -> None:
        self.batches: dict[int, list[tuple[Any, ...]]] = {}
        self.lock = threading.Lock()

    def __call__(self, frame: Any, batch_id: int) -> None:
        rows = record_tuples(frame)
        with self.lock:
            self.batches[batch_id] = rows

    def records(self) -> list[tuple[Any, ...]]:
        return sorted(r for rows in self.batches.values() for r in rows)


def run_available_now(writer: Any) -> None:
    query = writer.trigger(availableNow=True).start()
    try:
        query.awaitTermination(120)
        assert query.exception() is None, query.exception()
        assert not query.isActive, "the available-now query did not finish in 120 s"
    finally:
        query.stop()


def test_stream_with_a_group_id_reads_every_record_then_only_new_ones_after_a_restart(
    kafka_connector: Any, broker: BrokerProcess, checkpoint: str
) -> None:
    """`kafka.group.id` replaces Spark's generated group id; the offsets live in the checkpoint, so a
    restarted query reads only what came after."""
    produce(broker.bootstrap, "connector-stream", 6, timestamp_ms=BASE_MS)

    def run() -> BatchRecorder:
        recorder = BatchRecorder()
        stream = (
            kafka_connector.readStream.format("kafka")
            .option("kafka.bootstrap.servers", broker.bootstrap)
            .option("subscribe", "connector-stream")
            .option("startingOffsets", "earliest")
            .option("kafka.group.id", "odradek-spark-connector")
            .option("maxOffsetsPerTrigger", "4")
            .load()
        )
        run_available_now(stream.writeStream.foreachBatch(recorder).option("checkpointLocation", checkpoint))
        return recorder

    first = run()
    assert first.records() == sorted(expected_record("connector-stream", i) for i in range(6))
    assert len(first.batches) >= 2, "maxOffsetsPerTrigger=4 over 6 records is two micro-batches or more"
    produce(broker.bootstrap, "connector-stream", 3, start=6, timestamp_ms=BASE_MS)
    assert run().records() == sorted(expected_record("connector-stream", i) for i in range(6, 9))


def test_batch_write_puts_each_row_in_its_partition_with_key_value_and_headers(
    kafka_connector: Any, broker: BrokerProcess
) -> None:
    frame = kafka_connector.createDataFrame(
        [(f"k{i}", f"w{i}", i % 2, [("h", f"{i}".encode())]) for i in range(6)],
        "key STRING, value STRING, partition INT, headers ARRAY<STRUCT<key: STRING, value: BINARY>>",
    )
    frame.coalesce(1).write.format("kafka").option("kafka.bootstrap.servers", broker.bootstrap).option(
        "topic", "connector-written"
    ).save()
    got = [strip_timestamp(m) for m in consume_all(broker.bootstrap, "connector-written")]
    assert got == [
        (p, n, b"k%d" % i, b"w%d" % i, (("h", b"%d" % i),))
        for p in (0, 1)
        for n, i in enumerate(i for i in range(6) if i % 2 == p)
    ]


def strip_timestamp(message: Message) -> tuple[Any, ...]:
    return (message.partition, message.offset, message.key, message.value, message.headers)


def test_stream_write_copies_every_record_with_its_partition_and_headers(
    kafka_connector: Any, broker: BrokerProcess, checkpoint: str
) -> None:
    stream = (
        kafka_connector.readStream.format("kafka")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("subscribe", "connector-in")
        .option("startingOffsets", "earliest")
        .option("includeHeaders", "true")
        .load()
        .selectExpr("key", "value", "partition", "headers")
    )
    run_available_now(
        stream.writeStream.format("kafka")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("topic", "connector-copy")
        .option("checkpointLocation", checkpoint)
    )
    got = [strip_timestamp(m) for m in consume_all(broker.bootstrap, "connector-copy")]
    assert got == sorted(
        (i % PARTITIONS, i // PARTITIONS, b"k%d" % i, b"v%d" % i, (("n", b"%d" % i), ("empty", None)))
        for i in range(COUNT)
    )


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_batch_write_compressed_by_the_java_producer_reads_back_exactly(
    kafka_connector: Any, broker: BrokerProcess, codec: str
) -> None:
    topic = f"connector-{codec}"
    frame = kafka_connector.createDataFrame(
        [(f"k{i}", f"{codec}-{i}" * 20, i % PARTITIONS) for i in range(30)],
        "key STRING, value STRING, partition INT",
    )
    frame.coalesce(1).write.format("kafka").option("kafka.bootstrap.servers", broker.bootstrap).option(
        "kafka.compression.type", codec
    ).option("topic", topic).save()
    expected = sorted(
        (i % PARTITIONS, i // PARTITIONS, b"k%d" % i, f"{codec}-{i}".encode() * 20) for i in range(30)
    )
    independent = [(m.partition, m.offset, m.key, m.value) for m in consume_all(broker.bootstrap, topic)]
    assert independent == expected
    read = kafka_read(kafka_connector, broker, topic).select("partition", "offset", "key", "value")
    assert sorted(tuple(r) for r in read.collect()) == expected


def test_read_committed_skips_aborted_records_and_markers_read_uncommitted_keeps_aborted_ones(
    kafka_connector: Any, broker: BrokerProcess
) -> None:
    """`kafka.isolation.level`: the Java consumer's aborted-transaction filtering over odradek's Fetch
    (aborted transactions list, last stable offset), and the offset gaps the markers leave."""
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "connector-txn"})
    producer.init_transactions(30)
    for round_, commit in enumerate((True, False, True)):
        producer.begin_transaction()
        for partition in range(PARTITIONS):
            producer.produce("connector-txn", value=b"r%d-%d" % (round_, partition), partition=partition)
        producer.flush(30)
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)

    def values(isolation: str) -> list[tuple[int, int, bytes]]:
        frame = kafka_read(kafka_connector, broker, "connector-txn", **{"kafka.isolation.level": isolation})
        return sorted((r.partition, r.offset, r.value) for r in frame.collect())

    # Each transaction is one record and its marker: offsets 0, 2, 4 hold r0, r1, r2.
    assert values("read_committed") == sorted(
        (p, offset, b"r%d-%d" % (round_, p)) for p in range(PARTITIONS) for round_, offset in ((0, 0), (2, 4))
    )
    assert values("read_uncommitted") == sorted(
        (p, 2 * round_, b"r%d-%d" % (round_, p)) for p in range(PARTITIONS) for round_ in range(3)
    )


def test_offsets_below_the_log_start_follow_fail_on_data_loss(
    kafka_connector: Any, broker: BrokerProcess
) -> None:
    """Records deleted (DeleteRecords): a read from below the log start offset fails with
    failOnDataLoss=true and starts at the log start with false."""
    produce(broker.bootstrap, "connector-loss", 12)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for future in admin.delete_records([TopicPartition("connector-loss", 0, 2)]).values():
        future.result(timeout=30)

    def read(fail_on_data_loss: str) -> Any:
        return kafka_read(
            kafka_connector,
            broker,
            "connector-loss",
            startingOffsets=json.dumps({"connector-loss": {str(p): 0 for p in range(PARTITIONS)}}),
            failOnDataLoss=fail_on_data_loss,
        ).select("partition", "offset")

    with pytest.raises(Exception, match="lost"):
        read("true").collect()
    assert sorted(tuple(r) for r in read("false").collect()) == sorted(
        (i % PARTITIONS, i // PARTITIONS)
        for i in range(12)
        if not (i % PARTITIONS == 0 and i // PARTITIONS < 2)
    )


def test_pipeline_command_runs_on_sparks_kafka_connector(tmp_path: Path) -> None:
    """`--connector kafka`: Spark's own connector reads the page views and writes the aggregates (at
    least once, the default with it), its jars given with --connector-jars."""
    completed = run_pipeline_command(
        tmp_path,
        *("--connector", "kafka", "--connector-jars", spark_jars_setting()),
        *("--events", "1000", "--rate", "0", "--trigger", "available-now"),
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    summary = SUMMARY.search(completed.stdout)
    assert summary is not None, completed.stdout
    assert "exactly once" not in completed.stdout
    rows = parquet_rows(tmp_path / "pipeline-output")
    assert len(rows) == int(summary.group(3)) > 0
    assert sum(r["value"] for r in rows if r["metric"] == "views_per_page") == 1000
