"""Writes (`df.write` / `writeStream` with format "odradek"): every row lands as given."""

from __future__ import annotations

from typing import Any

import pytest

from tests.spark.kafka_helpers import consume_all, produce
from tests.support.broker_process import BrokerProcess

HEADERS_TYPE = "array<struct<key:string,value:binary>>"


def rows_frame(spark: Any, count: int) -> Any:
    """Rows with key, value, partition and headers; the value says which row it was."""
    return spark.range(count).selectExpr(
        "CASE WHEN id % 10 = 0 THEN NULL ELSE concat('key-', id) END AS key",
        "cast(concat('value-', id) AS binary) AS value",
        "cast(id % 3 AS int) AS partition",
        "CASE WHEN id % 2 = 0 THEN NULL ELSE array("
        "named_struct('key', 'id', 'value', cast(cast(id AS string) AS binary)), "
        "named_struct('key', 'none', 'value', cast(NULL AS binary))) END AS headers",
    )


def expected_messages(
    count: int,
) -> dict[bytes, tuple[int, bytes | None, tuple[tuple[str, bytes | None], ...]]]:
    return {
        b"value-%d" % i: (
            i % 3,
            None if i % 10 == 0 else b"key-%d" % i,
            () if i % 2 == 0 else (("id", b"%d" % i), ("none", None)),
        )
        for i in range(count)
    }


def landed(
    broker: BrokerProcess, topic: str
) -> dict[bytes, tuple[int, bytes | None, tuple[tuple[str, bytes | None], ...]]]:
    messages = consume_all(broker.bootstrap, topic)
    assert len(messages) == len({m.value for m in messages}), "duplicates"
    return {m.value: (m.partition, m.key, m.headers) for m in messages if m.value is not None}


def test_batch_write_lands_every_row_with_keys_headers_and_partitions(
    spark: Any, spark_broker: BrokerProcess
) -> None:
    (
        rows_frame(spark, 2000)
        .repartition(4)
        .write.format("odradek")
        .option("kafka.bootstrap.servers", spark_broker.bootstrap)
        .option("topic", "sink-batch")
        .mode("append")
        .save()
    )
    assert landed(spark_broker, "sink-batch") == expected_messages(2000)


def test_topic_column_routes_rows(spark: Any, spark_broker: BrokerProcess) -> None:
    df = spark.range(20).selectExpr(
        "CASE WHEN id % 2 = 0 THEN 'sink-even' ELSE 'sink-odd' END AS topic", "cast(id AS string) AS value"
    )
    df.write.format("odradek").option("kafka.bootstrap.servers", spark_broker.bootstrap).mode("append").save()
    assert sorted(int(m.value) for m in consume_all(spark_broker.bootstrap, "sink-even")) == list(
        range(0, 20, 2)
    )
    assert sorted(int(m.value) for m in consume_all(spark_broker.bootstrap, "sink-odd")) == list(
        range(1, 20, 2)
    )


def test_streaming_write_lands_every_row(spark: Any, spark_broker: BrokerProcess, checkpoint: str) -> None:
    produce(spark_broker.bootstrap, "sink-stream-in", 900)
    source = (
        spark.readStream.format("odradek")
        .option("kafka.bootstrap.servers", spark_broker.bootstrap)
        .option("subscribe", "sink-stream-in")
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "500")
        .load()
    )
    query = (
        source.selectExpr(
            "key",
            "value",
            "partition",
            "array(named_struct('key', 'from', 'value', cast(cast(offset AS string) AS binary))) AS headers",
        )
        .writeStream.format("odradek")
        .option("kafka.bootstrap.servers", spark_broker.bootstrap)
        .option("topic", "sink-stream-out")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert query.exception() is None

    source_messages = {m.value: m for m in consume_all(spark_broker.bootstrap, "sink-stream-in")}
    out = consume_all(spark_broker.bootstrap, "sink-stream-out")
    assert len(out) == 900
    for m in out:
        original = source_messages[m.value]
        assert (m.key, m.partition) == (original.key, original.partition)
        assert m.headers == (("from", b"%d" % original.offset),)


def test_missing_value_column_fails_with_sparks_message(spark: Any, spark_broker: BrokerProcess) -> None:
    with pytest.raises(Exception, match="Required attribute 'value' not found"):
        spark.range(3).selectExpr("cast(id AS string) AS key").write.format("odradek").option(
            "kafka.bootstrap.servers", spark_broker.bootstrap
        ).option("topic", "sink-bad").mode("append").save()


def test_a_failed_delivery_fails_the_write_with_the_error(spark: Any, spark_broker: BrokerProcess) -> None:
    with pytest.raises(Exception, match=r"(?i)Failed to send records to Kafka.*unknown partition"):
        spark.range(3).selectExpr("cast(id AS string) AS value", "7 AS partition").write.format(
            "odradek"
        ).option("kafka.bootstrap.servers", spark_broker.bootstrap).option("topic", "sink-batch").option(
            "kafka.message.timeout.ms", "3000"
        ).mode("append").save()


def test_a_broker_rejection_fails_the_write_with_the_brokers_error(
    spark: Any, spark_broker: BrokerProcess
) -> None:
    # 1.5 MB: within what the producer is told to allow, above the broker's max.message.bytes (1 MB).
    big = spark.range(1).selectExpr("repeat('x', 1500000) AS value")
    with pytest.raises(Exception, match=r"(?i)Failed to send records to Kafka.*too large"):
        big.write.format("odradek").option("kafka.bootstrap.servers", spark_broker.bootstrap).option(
            "topic", "sink-too-large"
        ).option("kafka.message.max.bytes", "5000000").option("kafka.message.timeout.ms", "10000").mode(
            "append"
        ).save()
