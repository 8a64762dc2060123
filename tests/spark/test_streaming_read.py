"""Streaming reads: admission control, restart from a checkpoint, new partitions and topics."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from tests.spark.kafka_helpers import produce
from tests.support.broker_process import BrokerProcess


def stream(spark: Any, broker: BrokerProcess, **options: str) -> Any:
    reader = spark.readStream.format("odradek").option("kafka.bootstrap.servers", broker.bootstrap)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


class BatchRecorder:
    """A foreachBatch function that keeps what each micro-batch saw, by batch id (a replay overwrites)."""

    def __init__(self) -> None:
        self.batches: dict[int, list[tuple[str, int, int]]] = {}
        self.calls: list[int] = []
        self.lock = threading.Lock()

    def __call__(self, df: Any, batch_id: int) -> None:
        rows = sorted(
            (r.topic, r.partition, r.offset) for r in df.select("topic", "partition", "offset").collect()
        )
        with self.lock:
            if batch_id in self.batches:
                assert self.batches[batch_id] == rows, f"batch {batch_id} replayed with different records"
            self.batches[batch_id] = rows
            self.calls.append(batch_id)

    def all_records(self) -> list[tuple[str, int, int]]:
        return sorted(r for rows in self.batches.values() for r in rows)


def run_available_now(df: Any, recorder: BatchRecorder, checkpoint: str) -> Any:
    query = df.writeStream.foreachBatch(recorder).option("checkpointLocation", checkpoint)
    query = query.trigger(availableNow=True).start()
    query.awaitTermination(120)
    assert query.exception() is None, query.exception()
    return query


def test_max_offsets_per_trigger_caps_every_micro_batch(
    spark: Any, spark_broker: BrokerProcess, checkpoint: str
) -> None:
    produce(spark_broker.bootstrap, "stream-limit", 1000)
    recorder = BatchRecorder()
    df = stream(
        spark, spark_broker, subscribe="stream-limit", startingOffsets="earliest", maxOffsetsPerTrigger="300"
    )

    query = run_available_now(df, recorder, checkpoint)

    sizes = [len(recorder.batches[b]) for b in sorted(recorder.batches)]
    assert sizes == [300, 300, 300, 100]
    assert [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]] == sizes
    assert recorder.all_records() == sorted(
        ("stream-limit", p, o) for p in range(3) for o in range(334 if p == 0 else 333)
    )


def test_restart_from_checkpoint_reads_every_message_exactly_once(
    spark: Any, spark_broker: BrokerProcess, checkpoint: str
) -> None:
    topic = "stream-restart"
    produce(spark_broker.bootstrap, topic, 600)
    recorder = BatchRecorder()
    df = stream(spark, spark_broker, subscribe=topic, startingOffsets="earliest", maxOffsetsPerTrigger="100")

    # Run with a processing-time trigger and stop it mid-stream, while data is still arriving.
    query = (
        df.writeStream.foreachBatch(recorder)
        .option("checkpointLocation", checkpoint)
        .trigger(processingTime="100 milliseconds")
        .start()
    )
    producer = threading.Thread(
        target=produce, args=(spark_broker.bootstrap, topic, 300), kwargs={"start": 600}
    )
    producer.start()
    deadline = time.monotonic() + 60
    while len(recorder.batches) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    query.stop()
    producer.join()
    assert 3 <= len(recorder.batches) < 9

    # As after a crash between writing the output and committing: the last planned batch runs again.
    last_planned = max(int(p.name) for p in Path(checkpoint, "offsets").glob("[0-9]*"))
    Path(checkpoint, "commits", str(last_planned)).unlink(missing_ok=True)
    Path(checkpoint, "commits", f".{last_planned}.crc").unlink(missing_ok=True)
    calls_before = len(recorder.calls)

    query = run_available_now(df, recorder, checkpoint)

    assert recorder.calls[calls_before] == last_planned
    produced = sorted((topic, i % 3, i // 3) for i in range(900))
    assert recorder.all_records() == produced


def test_new_partitions_and_topics_matching_the_pattern_are_picked_up(
    spark: Any, spark_broker: BrokerProcess, checkpoint: str
) -> None:
    produce(spark_broker.bootstrap, "pattern-a", 30)
    recorder = BatchRecorder()
    df = stream(spark, spark_broker, subscribePattern="pattern-.*", startingOffsets="earliest")

    run_available_now(df, recorder, checkpoint)
    assert {t for t, _, _ in recorder.all_records()} == {"pattern-a"}

    produce(spark_broker.bootstrap, "pattern-b", 12)
    produce(spark_broker.bootstrap, "pattern-a", 3, start=30)
    run_available_now(df, recorder, checkpoint)

    records = recorder.all_records()
    assert len(records) == len(set(records)) == 45
    assert sum(1 for t, _, _ in records if t == "pattern-b") == 12


def test_starting_offsets_latest_skips_what_is_already_there(
    spark: Any, spark_broker: BrokerProcess, checkpoint: str
) -> None:
    produce(spark_broker.bootstrap, "stream-latest", 30)
    recorder = BatchRecorder()
    df = stream(spark, spark_broker, subscribe="stream-latest")  # startingOffsets defaults to latest

    run_available_now(df, recorder, checkpoint)
    assert recorder.all_records() == []

    produce(spark_broker.bootstrap, "stream-latest", 6, start=30)
    run_available_now(df, recorder, checkpoint)
    assert len(recorder.all_records()) == 6
