"""Offsets that are gone (deleted records) follow failOnDataLoss, in batch and streaming reads."""

from __future__ import annotations

import json
from typing import Any

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient

from tests.spark.kafka_helpers import produce
from tests.support.broker_process import BrokerProcess


def delete_records_before(broker: BrokerProcess, topic: str, partition: int, offset: int) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    futures = admin.delete_records([TopicPartition(topic, partition, offset)])
    for future in futures.values():
        future.result(timeout=30)


def test_batch_read_below_the_log_start_offset(spark: Any, spark_broker: BrokerProcess) -> None:
    produce(spark_broker.bootstrap, "loss-batch", 30)
    delete_records_before(spark_broker, "loss-batch", 0, 4)

    def read(fail_on_data_loss: str) -> Any:
        return (
            spark.read.format("odradek")
            .option("kafka.bootstrap.servers", spark_broker.bootstrap)
            .option("subscribe", "loss-batch")
            .option("startingOffsets", json.dumps({"loss-batch": {"0": 0, "1": 0, "2": 0}}))
            .option("failOnDataLoss", fail_on_data_loss)
            .load()
        )

    with pytest.raises(Exception, match="Some data may have been lost"):
        read("true").collect()
    rows = read("false").select("partition", "offset").collect()
    assert sorted(r.offset for r in rows if r.partition == 0) == list(range(4, 10))
    assert len(rows) == 26


def test_stream_whose_next_offsets_were_deleted(
    spark: Any, spark_broker: BrokerProcess, tmp_path: Any
) -> None:
    produce(spark_broker.bootstrap, "loss-stream", 9)
    seen: list[tuple[int, int]] = []

    def run(checkpoint: str, fail_on_data_loss: str) -> Any:
        df = (
            spark.readStream.format("odradek")
            .option("kafka.bootstrap.servers", spark_broker.bootstrap)
            .option("subscribe", "loss-stream")
            .option("startingOffsets", "earliest")
            .option("failOnDataLoss", fail_on_data_loss)
            .load()
        )
        query = (
            df.writeStream.foreachBatch(
                lambda batch, _: seen.extend(
                    (r.partition, r.offset) for r in batch.select("partition", "offset").collect()
                )
            )
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start()
        )
        try:
            query.awaitTermination(120)
        except Exception as error:  # a failed query raises here
            return error
        return query.exception()

    strict, lenient = str(tmp_path / "strict"), str(tmp_path / "lenient")
    assert run(strict, "true") is None and run(lenient, "false") is None
    produce(spark_broker.bootstrap, "loss-stream", 15, start=9)  # offsets 3..7 in each partition
    delete_records_before(spark_broker, "loss-stream", 1, 6)
    seen.clear()

    assert "Some data may have been lost" in str(run(strict, "true"))
    seen.clear()
    assert run(lenient, "false") is None
    assert sorted(o for p, o in seen if p == 1) == [6, 7]
    assert sorted(o for p, o in seen if p == 0) == [3, 4, 5, 6, 7]
