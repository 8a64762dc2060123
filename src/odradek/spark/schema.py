"""Spark's Kafka-source schema, its Arrow twin, projections of it given as a user schema, and assembling
Arrow record batches column by column."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

import pyarrow as pa
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
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

# Spark's Kafka-source columns in their order, with their Spark and Arrow types (the Arrow type is
# exactly what `to_arrow_schema(..., timezone="UTC")` gives, written out so that workers need not import
# pyspark's pandas helpers, and pandas, to get it). `headers` only with includeHeaders=true.
_HEADER_ARROW = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
_COLUMN_TYPES: dict[str, tuple[DataType, pa.DataType]] = {
    "key": (BinaryType(), pa.binary()),
    "value": (BinaryType(), pa.binary()),
    "topic": (StringType(), pa.string()),
    "partition": (IntegerType(), pa.int32()),
    "offset": (LongType(), pa.int64()),
    "timestamp": (TimestampType(), pa.timestamp("us", tz="UTC")),
    "timestampType": (IntegerType(), pa.int32()),
    "headers": (ArrayType(HEADER_TYPE), pa.list_(pa.field("element", _HEADER_ARROW))),
}
HEADERS = "headers"


def source_columns(include_headers: bool) -> tuple[str, ...]:
    """The source's columns when no schema is given: all seven, and `headers` with includeHeaders=true."""
    return tuple(name for name in _COLUMN_TYPES if include_headers or name != HEADERS)


def source_schema(include_headers: bool = False) -> StructType:
    return StructType([StructField(name, _COLUMN_TYPES[name][0]) for name in source_columns(include_headers)])


def projected_columns(schema: StructType, include_headers: bool) -> tuple[str, ...]:
    """The columns a schema given with `.schema(...)` asks for, in its order; it must name source columns
    only, each at most once, nullable and of exactly the Kafka source's type. Spark does not push column
    pruning into a Python data source, so such a schema is how a query reads fewer columns.
    Raises ValueError naming the offending column."""
    where = "in the schema given to the odradek source"
    known = source_columns(include_headers)
    if not schema.fields:
        raise ValueError(
            f"The schema given to the odradek source has no columns; name some of: {', '.join(known)}"
        )
    columns: list[str] = []
    for field in schema.fields:
        name = field.name
        if name == HEADERS and not include_headers:
            raise ValueError(f"Column 'headers' {where} needs the option includeHeaders=true")
        if name not in _COLUMN_TYPES:
            same_but_case = [c for c in known if c.lower() == name.lower()]
            hint = f" (did you mean '{same_but_case[0]}'?)" if same_but_case else ""
            raise ValueError(
                f"Column '{name}' {where} is not a column of Spark's Kafka source{hint}; "
                f"the columns are: {', '.join(known)}"
            )
        if name in columns:
            raise ValueError(f"Column '{name}' appears more than once {where}")
        expected = _COLUMN_TYPES[name][0]
        if field.dataType != expected:
            raise ValueError(
                f"Column '{name}' {where} has type {field.dataType.simpleString()}, but the Kafka source's "
                f"'{name}' is {expected.simpleString()}"
            )
        if not field.nullable:
            raise ValueError(f"Column '{name}' {where} must be nullable, as in Spark's Kafka source")
        columns.append(name)
    return tuple(columns)


@cache
def arrow_schema(columns: tuple[str, ...]) -> pa.Schema:
    """Exactly what Spark checks yielded batches against, `to_arrow_schema(schema, timezone="UTC")`."""
    return pa.schema([pa.field(name, _COLUMN_TYPES[name][1]) for name in columns])


def record_batch(
    columns: tuple[str, ...],
    count: int,
    *,
    topic: str,
    partition: int,
    keys: pa.Array | None = None,
    values: pa.Array | None = None,
    offsets: Any = None,
    timestamps_ms: Any = None,
    timestamp_types: Any = None,
    headers: pa.Array | None = None,
) -> pa.RecordBatch:
    """One Arrow batch of `count` rows with `columns`, in their order. Only the columns asked for are
    built, and only their inputs need be given; offsets, timestamps and types may be numpy arrays or
    lists; headers None is a null per record."""
    arrays: list[pa.Array] = []
    for name in columns:
        if name == "key":
            arrays.append(_given(keys, name))
        elif name == "value":
            arrays.append(_given(values, name))
        elif name == "topic":
            arrays.append(pa.repeat(pa.scalar(topic, pa.string()), count))
        elif name == "partition":
            arrays.append(pa.repeat(pa.scalar(partition, pa.int32()), count))
        elif name == "offset":
            arrays.append(pa.array(_given(offsets, name), pa.int64()))
        elif name == "timestamp":
            millis = pa.array(_given(timestamps_ms, name), pa.int64())
            arrays.append(millis.cast(pa.timestamp("ms", tz="UTC")).cast(_COLUMN_TYPES[name][1]))
        elif name == "timestampType":
            arrays.append(pa.array(_given(timestamp_types, name), pa.int32()))
        else:
            arrays.append(headers if headers is not None else pa.nulls(count, _COLUMN_TYPES[HEADERS][1]))
    return pa.RecordBatch.from_arrays(arrays, schema=arrow_schema(columns))


def _given(column: Any, name: str) -> Any:
    if column is None:
        raise ValueError(f"column '{name}' was asked for but not built")
    return column


def headers_array(headers: Sequence[Sequence[tuple[str, bytes | None]] | None]) -> pa.Array:
    """The `headers` column from per-record lists of (key, value); records without headers get null."""
    return pa.array(
        [None if not h else [{"key": k, "value": v} for k, v in h] for h in headers],
        _COLUMN_TYPES[HEADERS][1],
    )
