"""The sink's exactly-once mode (`exactlyOnce=true`): tasks prepare two-phase-commit transactions, the
driver's commit step commits them, a replayed batch is not written twice, a failed job leaves nothing
visible, and a restarted query aborts what an unfinished batch left prepared."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from odradek.client.two_phase_commit import (
    TwoPhaseProducer,
    committed_offset,
    open_transactions,
)
from odradek.spark.exactly_once import MARKER_TOPIC
from tests.spark.kafka_helpers import produce
from tests.support.broker_process import BrokerProcess
from tests.support.txn_reader import read_committed_values

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    settings = {
        "num.partitions": "3",
        "offsets.topic.num.partitions": "1",
        "transaction.state.log.num.partitions": "3",
        "transaction.two.phase.commit.enable": "true",
    }
    process = BrokerProcess(tmp_path_factory.mktemp("spark-eos") / "data", settings).start()
    try:
        yield process
    finally:
        process.stop()


def committed(broker: BrokerProcess, topic: str) -> list[bytes]:
    return sorted(v for values in read_committed_values(broker.bootstrap, topic, 3).values() for v in values)


def write(spark: Any, broker: BrokerProcess, frame: Any, topic: str, prefix: str, batch_id: int) -> None:
    (
        frame.write.format("odradek")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("topic", topic)
        .option("exactlyOnce", "true")
        .option("transactionalIdPrefix", prefix)
        .option("batchId", str(batch_id))
        .mode("append")
        .save()
    )


def test_a_batch_write_is_committed_once_and_a_replay_of_its_batch_id_adds_nothing(
    spark: Any, broker: BrokerProcess
) -> None:
    frame = spark.range(300).selectExpr("concat('k', id) AS key", "concat('v', id) AS value").repartition(3)
    write(spark, broker, frame, "eos-batch", "eos-batch-query", 0)
    expected = sorted(f"v{i}".encode() for i in range(300))
    assert committed(broker, "eos-batch") == expected
    assert [committed_offset(broker.bootstrap, "eos-batch-query", MARKER_TOPIC, p) for p in range(3)] == [
        1
    ] * 3
    write(spark, broker, frame, "eos-batch", "eos-batch-query", 0)  # the driver died before Spark noted it
    assert committed(broker, "eos-batch") == expected
    write(spark, broker, frame, "eos-batch", "eos-batch-query", 1)  # the next batch is written
    assert committed(broker, "eos-batch") == sorted(expected * 2)
    assert not [t for t in open_transactions(broker.bootstrap) if t.startswith("eos-batch-query")]


def test_a_failed_job_makes_none_of_its_rows_visible(spark: Any, broker: BrokerProcess) -> None:
    # One of the two partitions has a row without a topic: its task fails, Spark aborts the job, and
    # the other task's prepared transaction is aborted with it.
    frame = spark.range(100).selectExpr(
        "CASE WHEN id = 99 THEN NULL ELSE 'eos-failed' END AS topic", "concat('v', id) AS value"
    )
    with pytest.raises(Exception, match="null topic"):
        (
            frame.repartition(2)
            .write.format("odradek")
            .option("kafka.bootstrap.servers", broker.bootstrap)
            .option("exactlyOnce", "true")
            .option("transactionalIdPrefix", "eos-failed-query")
            .mode("append")
            .save()
        )
    assert committed(broker, "eos-failed") == []
    assert not [t for t in open_transactions(broker.bootstrap) if t.startswith("eos-failed-query")]


def test_a_streaming_query_writes_every_row_once_and_aborts_what_a_crashed_run_left_prepared(
    spark: Any, broker: BrokerProcess, tmp_path: Path
) -> None:
    produce(broker.bootstrap, "eos-stream-in", 900)
    # What a crashed earlier run of this query left: a prepared transaction of a partition.
    with TwoPhaseProducer(broker.bootstrap, "eos-stream-query-1") as crashed:
        crashed.begin()
        crashed.send("eos-stream-out", b"from a batch never committed")
        crashed.prepare()
    source = (
        spark.readStream.format("odradek")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("subscribe", "eos-stream-in")
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "400")
        .load()
    )
    query = (
        source.selectExpr("key", "value")
        .writeStream.format("odradek")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("topic", "eos-stream-out")
        .option("exactlyOnce", "true")
        .option("transactionalIdPrefix", "eos-stream-query")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    try:
        query.awaitTermination(180)
    finally:
        query.stop()
    assert query.exception() is None
    assert committed(broker, "eos-stream-out") == committed(broker, "eos-stream-in")
    assert len(committed(broker, "eos-stream-out")) == 900
    # Each task's marker names the last micro-batch (0, 1, 2 for 900 records by 400) it committed.
    markers = [committed_offset(broker.bootstrap, "eos-stream-query", MARKER_TOPIC, p) for p in range(3)]
    assert max(markers) == 3
    assert not [t for t in open_transactions(broker.bootstrap) if t.startswith("eos-stream-query")]


def test_exactly_once_needs_a_transactional_id_prefix(spark: Any, broker: BrokerProcess) -> None:
    frame = spark.range(1).selectExpr("'x' AS value")
    with pytest.raises(Exception, match="transactionalIdPrefix"):
        (
            frame.write.format("odradek")
            .option("kafka.bootstrap.servers", broker.bootstrap)
            .option("topic", "eos-refused")
            .option("exactlyOnce", "true")
            .mode("append")
            .save()
        )


@pytest.mark.parametrize(
    ("options", "refusal"),
    [
        ({"transactionalIdPrefix": "q"}, "apply only with exactlyOnce=true"),
        ({"exactlyOnce": "true", "transactionalIdPrefix": "q", "batchId": "x"}, "Invalid value 'x'"),
        ({"exactlyOnce": "yes", "transactionalIdPrefix": "q"}, "must be true or false"),
        (
            {"exactlyOnce": "true", "transactionalIdPrefix": "q", "kafka.ssl.crl.location": "/x.pem"},
            "ssl.crl.location not supported with exactlyOnce=true",
        ),
        (
            {"exactlyOnce": "true", "transactionalIdPrefix": "q", "kafka.transactional.id": "t"},
            "set by the sink",
        ),
    ],
)
def test_exactly_once_options_are_checked(options: dict[str, str], refusal: str) -> None:
    from odradek.spark.options import parse_sink_options

    with pytest.raises(ValueError, match=refusal):
        parse_sink_options({"kafka.bootstrap.servers": "127.0.0.1:9092", "topic": "t", **options})
