"""A user-specified schema as a column projection: `.schema("value BINARY, offset LONG")` on a batch or
streaming read gives batches of just those columns, in that order.

pyspark 4.3 hands a user's schema to `reader(schema)` / `streamReader(schema)` in place of the source's
`schema()`, and checks every yielded Arrow batch against `to_arrow_schema(that schema)`; the Spark tests
here pass only if the reader built its batches from the user's schema, not ours.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType, _parse_datatype_string

from odradek.spark.schema import arrow_schema, projected_columns, source_columns, source_schema
from tests.spark.kafka_helpers import produce
from tests.spark.test_streaming_read import BatchRecorder, run_available_now
from tests.support.broker_process import BrokerProcess

HEADERS_DDL = "headers ARRAY<STRUCT<key: STRING, value: BINARY>>"
DDL = {
    "key": "key BINARY",
    "value": "value BINARY",
    "topic": "topic STRING",
    "partition": "partition INT",
    "offset": "offset LONG",
    "timestamp": "timestamp TIMESTAMP",
    "timestampType": "timestampType INT",
    "headers": HEADERS_DDL,
}


def ddl(*columns: str) -> str:
    return ", ".join(DDL[c] for c in columns)


def struct(text: str) -> StructType:
    """A DDL string as Spark parses `.schema(...)` (needs a running session: the tests ask for `spark`)."""
    parsed = _parse_datatype_string(text)
    assert isinstance(parsed, StructType)
    return parsed


def test_every_projection_has_spark_s_own_arrow_schema(spark: Any) -> None:
    """What the decoder builds is what Spark checks batches against, for subsets in any order."""
    names = source_columns(True)
    for size in (1, 2, 3, len(names)):
        for columns in itertools.permutations(names, size):
            if size > 2 and columns[0] != "headers":
                continue  # enough of them
            schema = struct(ddl(*columns))
            assert projected_columns(schema, include_headers=True) == columns
            assert arrow_schema(columns).equals(to_arrow_schema(schema, timezone="UTC"))
    for include_headers in (False, True):
        full = source_schema(include_headers)
        assert projected_columns(full, include_headers) == source_columns(include_headers)


@pytest.mark.parametrize(
    ("schema", "include_headers", "message"),
    [
        ("value BINARY, offst LONG", False, "Column 'offst' .* is not a column of Spark's Kafka source"),
        ("Value BINARY", False, "Column 'Value' .*did you mean 'value'"),
        (
            "value STRING",
            False,
            "Column 'value' .* has type string, but the Kafka source's 'value' is binary",
        ),
        ("offset INT", False, "Column 'offset' .* has type int, but .* is bigint"),
        ("timestamp TIMESTAMP_NTZ", False, "Column 'timestamp' .* has type timestamp_ntz"),
        (HEADERS_DDL, False, "Column 'headers' .* needs the option includeHeaders=true"),
        ("headers ARRAY<STRUCT<k: STRING, v: BINARY>>", True, "Column 'headers' .* has type"),
        ("offset LONG, value BINARY, offset LONG", False, "Column 'offset' appears more than once"),
        ("offset LONG NOT NULL", False, "Column 'offset' .* must be nullable"),
    ],
)
def test_bad_schemas_are_refused_naming_the_column(
    spark: Any, schema: str, include_headers: bool, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        projected_columns(struct(schema), include_headers)
    with pytest.raises(ValueError, match="has no columns"):
        projected_columns(StructType(), include_headers)


def read(spark: Any, broker: BrokerProcess, schema: str | None, **options: str) -> Any:
    reader = spark.read.format("odradek").option("kafka.bootstrap.servers", broker.bootstrap)
    if schema is not None:
        reader = reader.schema(schema)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


@pytest.fixture(scope="module")
def topic(spark_broker: BrokerProcess) -> str:
    produce(spark_broker.bootstrap, "projected", 600, timestamp_ms=1_700_000_000_000, with_headers=True)
    return "projected"


@pytest.mark.parametrize("reader", ["raw", "consumer"])
@pytest.mark.parametrize(
    "columns",
    [
        ("value", "offset"),
        ("offset", "value"),
        ("key",),
        ("partition", "topic", "timestamp"),
        ("timestampType", "offset", "headers"),
        ("headers", "timestampType", "timestamp", "offset", "partition", "topic", "value", "key"),
    ],
)
def test_batch_read_with_a_projected_schema(
    spark: Any, spark_broker: BrokerProcess, topic: str, columns: tuple[str, ...], reader: str
) -> None:
    options = {"subscribe": topic, "includeHeaders": "true", "reader": reader}
    full = read(spark, spark_broker, None, **options)
    projected = read(spark, spark_broker, ddl(*columns), **options)

    assert projected.columns == list(columns)
    assert projected.count() == 600
    expected = [tuple(r) for r in full.select(*columns).collect()]
    got = [tuple(r) for r in projected.collect()]
    assert sorted(got, key=repr) == sorted(expected, key=repr)


def test_scan_query_over_a_projected_schema(spark: Any, spark_broker: BrokerProcess, topic: str) -> None:
    """The benchmark's scan, as a user would write it with the projection."""
    query = ("count(*) AS n", "sum(length(value)) AS bytes", "max(offset) AS last")
    full = read(spark, spark_broker, None, subscribe=topic).selectExpr(*query).collect()
    projected = read(spark, spark_broker, "value BINARY, offset LONG", subscribe=topic)
    assert projected.selectExpr(*query).collect() == full
    assert projected.filter("offset < 10").count() == 30


@pytest.mark.parametrize(
    ("schema", "options", "message"),
    [
        ("value BINARY, offst LONG", {}, "Column 'offst'"),
        ("value STRING", {}, "Column 'value' .* has type string"),
        (HEADERS_DDL, {}, "Column 'headers' .* needs the option includeHeaders=true"),
        (HEADERS_DDL, {"includeHeaders": "false"}, "includeHeaders=true"),
    ],
)
def test_bad_schemas_fail_at_start(
    spark: Any, spark_broker: BrokerProcess, schema: str, options: dict[str, str], message: str
) -> None:
    with pytest.raises(Exception, match=message):
        read(spark, spark_broker, schema, subscribe="projected", **options).collect()


def stream(spark: Any, broker: BrokerProcess, schema: str, **options: str) -> Any:
    reader = spark.readStream.format("odradek").option("kafka.bootstrap.servers", broker.bootstrap)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.schema(schema).load()


def test_streaming_read_with_a_projected_schema(
    spark: Any, spark_broker: BrokerProcess, checkpoint: str
) -> None:
    produce(spark_broker.bootstrap, "projected-stream", 900)
    df = stream(
        spark,
        spark_broker,
        "offset LONG, topic STRING, value BINARY, partition INT",
        subscribe="projected-stream",
        startingOffsets="earliest",
        maxOffsetsPerTrigger="400",
    )
    assert df.columns == ["offset", "topic", "value", "partition"]
    recorder = BatchRecorder()
    values: list[tuple[int, int, bytes]] = []

    def record(batch: Any, batch_id: int) -> None:
        recorder(batch, batch_id)
        values.extend((r.partition, r.offset, r.value) for r in batch.collect())

    run_available_now(df, record, checkpoint)  # type: ignore[arg-type]

    assert [len(recorder.batches[b]) for b in sorted(recorder.batches)] == [400, 400, 100]
    assert recorder.all_records() == sorted(("projected-stream", p, o) for p in range(3) for o in range(300))
    # produce() sends message i to partition i % 3: its offset there is i // 3, its value v<i>
    assert sorted(values) == sorted((i % 3, i // 3, b"v%d" % i) for i in range(900))


def test_streaming_bad_schema_fails_at_start(
    spark: Any, spark_broker: BrokerProcess, checkpoint: str
) -> None:
    df = stream(spark, spark_broker, "offset LONG, partiton INT", subscribe="projected-stream")
    query = df.writeStream.foreachBatch(lambda batch, batch_id: None).option("checkpointLocation", checkpoint)
    with pytest.raises(Exception, match="Column 'partiton'"):
        started = query.trigger(availableNow=True).start()
        started.awaitTermination(60)
        raise AssertionError(f"query ended without the error: {started.exception()}")
