"""The `odradek` data source: Spark's `kafka` format as a Python Data Source (batch and streaming).

Spark reserves the name `kafka`, so the short name is `odradek`; options, columns and semantics are
those of Spark's Kafka connector. Options are validated when a reader or writer is created, i.e. when
the query starts, so a bad option fails there with Spark's wording.

Spark 4.3 pushes no column pruning into a Python data source: every row crosses into the JVM with all
its columns. A query that needs fewer can say so with a schema, `.schema("value BINARY, offset LONG")`
(batch or streaming): any subset of the source's columns with their Kafka-source types, in any order.
The batches then hold just those columns and the decoder builds nothing else.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
)
from pyspark.sql.types import StructType

from odradek.spark.offset_reader import OffsetReader
from odradek.spark.options import SourceOptions, parse_sink_options, parse_source_options
from odradek.spark.range_read import read_range
from odradek.spark.ranges import OffsetRange, plan_ranges
from odradek.spark.schema import projected_columns, source_schema
from odradek.spark.stream import StreamReader

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)


class OdradekDataSource(DataSource):
    """`spark.read.format("odradek")`, `readStream`, `write` and `writeStream`."""

    @classmethod
    def name(cls) -> str:
        return "odradek"

    def schema(self) -> StructType:
        value = self.options.get("includeheaders", "false").strip().lower()
        return source_schema(value == "true")

    def reader(self, schema: StructType) -> DataSourceReader:
        return BatchReader(_with_columns(parse_source_options(self.options, streaming=False), schema))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return StreamReader(_with_columns(parse_source_options(self.options, streaming=True), schema))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from odradek.spark.sink import BatchWriter, check_write_schema

        if overwrite:
            raise ValueError(
                "Save mode Overwrite not allowed for Kafka. Allowed save modes are Append and ErrorIfExists."
            )
        options = parse_sink_options(self.options)
        return BatchWriter(options, check_write_schema(schema, options.topic))

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from odradek.spark.sink import StreamWriter, check_write_schema

        options = parse_sink_options(self.options)
        return StreamWriter(options, check_write_schema(schema, options.topic))


class BatchReader(DataSourceReader):
    """Resolves start and end offsets once, on the driver; each range is one Spark task."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def partitions(self) -> list[InputPartition]:
        offset_reader = OffsetReader(self.options)
        try:
            topic_partitions = offset_reader.topic_partitions()
            starts = offset_reader.resolve(self.options.starting, topic_partitions, is_start=True)
            ends = offset_reader.resolve(self.options.ending, topic_partitions, is_start=False)
            earliest = offset_reader.earliest(topic_partitions)
        finally:
            offset_reader.close()
        for tp, start in list(starts.items()):
            if start < earliest[tp]:
                _data_loss(
                    self.options,
                    f"Starting offset {start} of {tp[0]}-{tp[1]} is below the earliest {earliest[tp]}",
                )
                starts[tp] = earliest[tp]
            if ends[tp] < starts[tp]:
                raise ValueError(
                    f"The specified starting offset ({starts[tp]}) is greater than the ending offset "
                    f"({ends[tp]}) for topic partition {tp[0]}-{tp[1]}"
                )
        ranges = plan_ranges(
            starts,
            ends,
            min_partitions=self.options.min_partitions,
            max_records_per_partition=self.options.max_records_per_partition,
        )
        return list(ranges)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if isinstance(partition, OffsetRange):
            yield from read_range(partition, self.options)


def _with_columns(options: SourceOptions, schema: StructType) -> SourceOptions:
    """`schema` is ours (from `schema()`) unless the query gave one with `.schema(...)`; then Spark passes
    the user's instead, and it is read as a projection: batches carry only its columns, in its order."""
    return replace(options, columns=projected_columns(schema, options.include_headers))


def _data_loss(options: SourceOptions, detail: str) -> None:
    from odradek.spark.consumer_read import DataLossError, data_loss_message

    if options.fail_on_data_loss:
        raise DataLossError(data_loss_message(detail))
    log.warning("%s; starting from the earliest offset (failOnDataLoss=false)", detail)


def register(spark: SparkSession) -> None:
    """Make `format("odradek")` available in this session."""
    spark.dataSource.register(OdradekDataSource)
