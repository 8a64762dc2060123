"""The Structured Streaming job: page views in, per-minute aggregates out (to a topic and to Parquet).

    page-views topic --odradek source--> parse JSON --> watermark on event time
        --> views per page per minute  --+ union --> output topic (odradek sink), JSON per row
        --> active users per minute    --+       --> Parquet, partitioned by metric

The topics are read and written with odradek's source and sink, or with Spark's own `kafka` connector
(`connector`, pipelines/connectors.py).

Both aggregates run in append mode: a window is written once, when the watermark passes its end, so the
output holds final numbers only. Active users are counted exactly, by a first aggregation to one row per
(minute, user) and a second one counting those rows (chained time-window aggregations).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from odradek.pipelines.connectors import KAFKA, ODRADEK, check_connector, java_client_settings

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

QUERY_NAME = "page_stats"
EVENT_SCHEMA = (
    "kind STRING, event_id LONG, user_id STRING, session_id STRING, page STRING, referrer STRING, "
    "ts LONG, duration_ms LONG"
)


@dataclass(frozen=True)
class JobSettings:
    bootstrap: str
    input_topic: str
    output_topic: str
    output_dir: str
    checkpoint_dir: str
    window: str = "1 minute"
    watermark_delay: str = "30 seconds"
    max_offsets_per_trigger: int | None = 5000
    trigger: str = "available-now"  # or a processing-time interval such as "2 seconds"
    starting_offsets: str = "earliest"
    # Kafka client settings for a secured broker (security.protocol, sasl.*, ssl.*), Java or librdkafka
    # names, without the `kafka.` prefix: given to the source, the sink, the generator and the topic admin.
    client_settings: Mapping[str, str] = field(default_factory=dict)
    # The output topic written exactly once (the sink's two-phase-commit mode; the broker must enable
    # transaction.two.phase.commit.enable), or at least once.
    exactly_once: bool = False
    # `odradek` (odradek's Python source and sink) or `kafka` (Spark's own connector, whose jars the
    # session must have; at least once only).
    connector: str = ODRADEK

    def __post_init__(self) -> None:
        check_connector(self.connector, self.exactly_once)
        if self.connector == KAFKA:
            java_client_settings(self.client_settings)

    def kafka_options(self) -> dict[str, str]:
        """The client settings as the connector's source and sink take them (`kafka.` + name)."""
        return {f"kafka.{key}": value for key, value in self.client_settings.items()}


@dataclass
class OutputTally:
    """What the job has written so far: micro-batches with rows, and aggregate rows (each went to the
    topic and to Parquet). Updated by the foreachBatch callback, on a py4j thread of the driver."""

    batches: int = 0
    rows: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, rows: int) -> None:
        with self._lock:
            self.batches += 1
            self.rows += rows


def page_view_events(spark: SparkSession, settings: JobSettings) -> DataFrame:
    """The input topic as typed events with an `event_time` column and the watermark on it."""
    from pyspark.sql import functions as F

    reader = spark.readStream.format(settings.connector)
    if settings.connector == ODRADEK:
        # only the column the job parses: the source then decodes and hands Spark nothing else (Spark
        # does not prune a Python source's columns by itself; Spark's kafka source refuses a schema and
        # has its columns pruned by Spark)
        reader = reader.schema("value BINARY")
    reader = (
        reader.option("kafka.bootstrap.servers", settings.bootstrap)
        .options(**settings.kafka_options())
        .option("subscribe", settings.input_topic)
        .option("startingOffsets", settings.starting_offsets)
    )
    if settings.max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(settings.max_offsets_per_trigger))
    return (
        reader.load()
        .select(F.from_json(F.col("value").cast("string"), EVENT_SCHEMA).alias("event"))
        .select("event.*")
        .withColumn("event_time", F.timestamp_millis("ts"))
        .withWatermark("event_time", settings.watermark_delay)
    )


def views_per_page(events: DataFrame, settings: JobSettings) -> DataFrame:
    from pyspark.sql import functions as F

    return (
        _page_views_only(events)
        .groupBy(F.window("event_time", settings.window), "page")
        .agg(F.count("*").alias("views"), F.approx_count_distinct("user_id").alias("approx_users"))
        .select(
            F.lit("views_per_page").alias("metric"),
            F.col("window.start").alias("window_start"),
            F.col("window.end").alias("window_end"),
            "page",
            F.col("views").alias("value"),
            "approx_users",
        )
    )


def active_users(events: DataFrame, settings: JobSettings) -> DataFrame:
    from pyspark.sql import functions as F

    per_user = (
        events.where("kind = 'page_view'").groupBy(F.window("event_time", settings.window), "user_id").count()
    )
    return (
        per_user.groupBy(F.window(F.window_time("window"), settings.window))
        .agg(F.count("*").alias("users"))
        .select(
            F.lit("active_users").alias("metric"),
            F.col("window.start").alias("window_start"),
            F.col("window.end").alias("window_end"),
            F.lit(None).cast("string").alias("page"),
            F.col("users").alias("value"),
            F.lit(None).cast("long").alias("approx_users"),
        )
    )


def _page_views_only(events: DataFrame) -> DataFrame:
    """Drop heartbeats after the watermark has seen them. A plain `kind = 'page_view'` filter would be
    pushed below the watermark by the optimizer (it does not involve the event time), and heartbeats
    would then never move the watermark; a predicate on the event time column stays above it."""
    from pyspark.sql import functions as F

    return events.where(F.when(F.col("kind") == "page_view", F.col("event_time")).isNotNull())


def start(
    spark: SparkSession, settings: JobSettings, tally: OutputTally | None = None
) -> list[StreamingQuery]:
    """One query (one checkpoint, one set of offsets per micro-batch) for both aggregates; Spark scans each
    micro-batch's offsets once per aggregate, so its progress counts every record twice. Each micro-batch
    of final windows goes to the output topic and to Parquet."""
    events = page_view_events(spark, settings)
    aggregates = views_per_page(events, settings).unionByName(active_users(events, settings))
    return [_start_query(aggregates, QUERY_NAME, settings, tally or OutputTally())]


def _start_query(
    aggregate: DataFrame, name: str, settings: JobSettings, tally: OutputTally
) -> StreamingQuery:
    writer = (
        aggregate.writeStream.queryName(name)
        .outputMode("append")
        .foreachBatch(_BatchOutput(settings, name, tally))
        .option("checkpointLocation", f"{settings.checkpoint_dir}/{name}")
    )
    if settings.trigger == "available-now":
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=settings.trigger)
    return writer.start()


class _BatchOutput:
    """Writes one micro-batch of final windows to the output topic (through the connector's sink, keyed
    by metric and window) and appends it to Parquet."""

    def __init__(self, settings: JobSettings, name: str, tally: OutputTally) -> None:
        self.settings = settings
        self.name = name
        self.tally = tally

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        from pyspark.sql import functions as F

        batch = batch.persist()
        try:
            rows = batch.count()
            if rows == 0:
                return
            writer = (
                batch.select(
                    F.concat_ws("|", "metric", F.col("window_start").cast("string"), "page").alias("key"),
                    F.to_json(F.struct(*batch.columns)).alias("value"),
                )
                .write.format(self.settings.connector)
                .option("kafka.bootstrap.servers", self.settings.bootstrap)
                .options(**self.settings.kafka_options())
                .option("topic", self.settings.output_topic)
                .mode("append")
            )
            if self.settings.exactly_once:
                writer = (
                    writer.option("exactlyOnce", "true")
                    .option("transactionalIdPrefix", transactional_id_prefix(self.settings, self.name))
                    .option("batchId", str(batch_id))
                )
            writer.save()
            batch.withColumn("batch_id", F.lit(batch_id)).write.mode("append").partitionBy("metric").parquet(
                self.settings.output_dir
            )
            self.tally.add(rows)
        finally:
            batch.unpersist()


def transactional_id_prefix(settings: JobSettings, name: str) -> str | None:
    """The exactly-once sink's prefix for the query: named after Spark's query id (kept in the
    checkpoint, so the same across restarts; a fresh checkpoint is a new query, whose batch ids start
    over, and gets new transactional ids and batch markers). None before the query's first start."""
    import json
    from pathlib import Path

    metadata = Path(settings.checkpoint_dir) / name / "metadata"
    try:
        query_id = json.loads(metadata.read_text().splitlines()[0])["id"]
    except (OSError, ValueError, KeyError, IndexError):
        return None
    return f"odradek-pipeline-{query_id}"


def abort_prepared_transactions(settings: JobSettings) -> list[str]:
    """Before a resumed query starts: abort what its last micro-batch left prepared (that batch was not
    recorded by Spark, whose commit step finishes every transaction first, and is replayed)."""
    from odradek.spark.exactly_once import abort_leftovers
    from odradek.spark.options import parse_sink_options

    prefix = transactional_id_prefix(settings, QUERY_NAME)
    if prefix is None:
        return []
    options = parse_sink_options(
        {
            "kafka.bootstrap.servers": settings.bootstrap,
            **settings.kafka_options(),
            "exactlyOnce": "true",
            "transactionalIdPrefix": prefix,
        }
    )
    return abort_leftovers(options)


def progress_line(query: Any) -> str:
    """One line about a running query: batches, rows in, rates, watermark."""
    progress = query.lastProgress
    if not progress:
        return f"{query.name}: starting"
    watermark = progress.get("eventTime", {}).get("watermark", "-")
    return (
        f"{query.name}: batch {progress['batchId']}, {progress['numInputRows']} rows in, "
        f"{progress.get('processedRowsPerSecond', 0.0):.0f} rows/s, watermark {watermark}"
    )
