"""Spark's Kafka-source schema, its Arrow twin, and assembling Arrow record batches column by column."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

import pyarrow as pa
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

HEADER_TYPE = StructType([StructField("key", StringType()), StructField("value", BinaryType())])

# Kafka's TimestampType ids, as Spark's `timestampType` column shows them.
NO_TIMESTAMP_TYPE = -1
CREATE_TIME = 0
LOG_APPEND_TIME = 1


def source_schema(include_headers: bool = False) -> StructType:
    fields = [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
    if include_headers:
        fields.append(StructField("headers", ArrayType(HEADER_TYPE)))
    return StructType(fields)


@cache
def arrow_schema(include_headers: bool) -> pa.Schema:
    """Exactly what Spark checks yielded batches against, `to_arrow_schema(schema, timezone="UTC")`, written
    out so that workers need not import pyspark's pandas helpers (and pandas) to get it."""
    fields = [
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("offset", pa.int64()),
        pa.field("timestamp", pa.timestamp("us", tz="UTC")),
        pa.field("timestampType", pa.int32()),
    ]
    if include_headers:
        header = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
        fields.append(pa.field("headers", pa.list_(pa.field("element", header))))
    return pa.schema(fields)


def record_batch(
    include_headers: bool,
    *,
    keys: pa.Array,
    values: pa.Array,
    topic: str,
    partition: int,
    offsets: Any,
    timestamps_ms: Any,
    timestamp_types: Any,
    headers: pa.Array | None = None,
) -> pa.RecordBatch:
    """One Arrow batch in the source schema; offsets, timestamps and types may be numpy arrays or lists."""
    schema = arrow_schema(include_headers)
    count = len(keys)
    columns: list[pa.Array] = [
        keys,
        values,
        pa.repeat(pa.scalar(topic, pa.string()), count),
        pa.repeat(pa.scalar(partition, pa.int32()), count),
        pa.array(offsets, pa.int64()),
        pa.array(timestamps_ms, pa.int64()).cast(pa.timestamp("ms", tz="UTC")).cast(schema.field(5).type),
        pa.array(timestamp_types, pa.int32()),
    ]
    if include_headers:
        columns.append(headers if headers is not None else pa.nulls(count, schema.field(7).type))
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def headers_array(headers: Sequence[Sequence[tuple[str, bytes | None]] | None]) -> pa.Array:
    """The `headers` column from per-record lists of (key, value); records without headers get null."""
    return pa.array(
        [None if not h else [{"key": k, "value": v} for k, v in h] for h in headers],
        arrow_schema(True).field(7).type,
    )
