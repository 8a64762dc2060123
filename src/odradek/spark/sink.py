"""Writing to Kafka topics: batch (`df.write`) and streaming (`writeStream`), with Spark's row shape.

Rows carry `value` (required, string or binary) and optionally `key`, `topic`, `partition` and
`headers`; the `topic` option, when given, overrides the column. Each task produces its rows with one
confluent-kafka producer and flushes before `write()` returns: every message is acknowledged by the
broker (per the producer's `acks`), or the task fails with the broker's error and Spark aborts the job
or micro-batch. Guarantee: at least once (a retried task or a replayed micro-batch writes again).

With `exactlyOnce=true` (and `transactionalIdPrefix`) each task writes in a two-phase-commit
transaction that the driver's commit step commits: exactly once (odradek/spark/exactly_once.py).

A delegation token's login (`tokenauth="true"`), which librdkafka cannot make, writes through odradek's
own producer (client/producer.py) instead, with the same guarantee: every row acknowledged (acks=all)
before `write()` returns.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import ArrayType, BinaryType, IntegerType, StringType, StructType

from odradek.client.cluster import RequestError
from odradek.client.producer import Producer
from odradek.spark import exactly_once
from odradek.spark.kafka_options import token_security
from odradek.spark.options import SinkOptions
from odradek.spark.schema import HEADER_TYPE
from odradek.spark.security import check_connection, is_secured

_COLUMNS = ("key", "value", "topic", "partition", "headers")


@dataclass
class ProducedMessages(WriterCommitMessage):
    """What one task wrote: how many messages the broker acknowledged."""

    count: int


@dataclass(frozen=True)
class WriteColumns:
    """Which of Spark's sink columns the written DataFrame has (others are ignored)."""

    names: tuple[str, ...]


def check_write_schema(schema: StructType, topic_option: str | None) -> WriteColumns:
    """Spark's KafkaWriter.validateQuery, with its messages."""
    fields = {field.name.lower(): field for field in schema.fields}
    if topic_option is None and "topic" not in fields:
        raise ValueError(
            "topic option required when no 'topic' attribute is present. "
            "Use the topic option for setting a topic."
        )
    if "topic" in fields and not isinstance(fields["topic"].dataType, StringType):
        raise ValueError("Topic type must be a StringType")
    if "value" not in fields:
        raise ValueError("Required attribute 'value' not found")
    for name in ("key", "value"):
        if name in fields and not isinstance(fields[name].dataType, StringType | BinaryType):
            raise ValueError(f"{name} attribute type must be a StringType or BinaryType")
    if "partition" in fields and not isinstance(fields["partition"].dataType, IntegerType):
        raise ValueError("partition attribute type must be an IntegerType")
    if "headers" in fields:
        data_type = fields["headers"].dataType
        element = data_type.elementType if isinstance(data_type, ArrayType) else None
        if not isinstance(element, StructType) or [(f.name, type(f.dataType)) for f in element.fields] != [
            (f.name, type(f.dataType)) for f in HEADER_TYPE.fields
        ]:
            raise ValueError(f"headers attribute type must be an {ArrayType(HEADER_TYPE).simpleString()}")
    return WriteColumns(tuple(fields[name].name for name in _COLUMNS if name in fields))


class BatchWriter(DataSourceArrowWriter):
    def __init__(self, options: SinkOptions, columns: WriteColumns) -> None:
        self.options = options
        self.columns = columns

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        if self.options.exactly_once:
            rows = _all_rows(iterator, self.options.topic, self.columns)
            return exactly_once.write_partition(rows, self.options, self.options.batch_id)
        return ProducedMessages(produce_batches(iterator, self.options, self.columns))

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        if self.options.exactly_once:
            exactly_once.commit_all(self.options, messages)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        if self.options.exactly_once:
            exactly_once.abort_all(self.options, messages)


class StreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, options: SinkOptions, columns: WriteColumns) -> None:
        self.options = options
        self.columns = columns

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        if self.options.exactly_once:
            rows = _all_rows(iterator, self.options.topic, self.columns)
            return exactly_once.write_partition(rows, self.options, None)  # Spark names the batch
        return ProducedMessages(produce_batches(iterator, self.options, self.columns))

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """At least once: every message was acknowledged before its task's write() returned, nothing is
        left to do. Exactly once: the tasks' prepared transactions are committed."""
        if self.options.exactly_once:
            exactly_once.commit_all(self.options, messages)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """At least once: messages already acknowledged stay in their topics. Exactly once: the tasks'
        prepared transactions are aborted."""
        if self.options.exactly_once:
            exactly_once.abort_all(self.options, messages)


def _all_rows(
    batches: Iterator[pa.RecordBatch], topic_option: str | None, columns: WriteColumns
) -> Iterator[tuple[Any, Any, Any, int, Any]]:
    for batch in batches:
        yield from _rows(batch, topic_option, columns)


def produce_batches(batches: Iterator[pa.RecordBatch], options: SinkOptions, columns: WriteColumns) -> int:
    """Produce every row, wait for every acknowledgement, raise the first delivery error."""
    if options.token_login:
        return _produce_with_token(batches, options, columns)
    from confluent_kafka import KafkaException
    from confluent_kafka import Producer as KafkaProducer

    config = options.producer_config()
    producer = KafkaProducer(config)
    if is_secured(config):
        check_connection(producer, 60.0)
    failures: list[str] = []
    count = 0

    def delivered(error: Any, message: Any) -> None:
        if error is not None and len(failures) < 10:
            failures.append(f"{message.topic()}[{message.partition()}]: {error}")

    try:
        for batch in batches:
            rows = _rows(batch, options.topic, columns)
            for topic, key, value, partition, headers in rows:
                if topic is None:
                    raise ValueError(exactly_once.NULL_TOPIC)
                while True:
                    try:
                        producer.produce(topic, value, key, partition, on_delivery=delivered, headers=headers)
                        break
                    except BufferError:
                        producer.poll(0.05)
                count += 1
            producer.poll(0)
            if failures:
                break
        remaining = producer.flush(300.0)
        if remaining:
            failures.append(f"{remaining} messages were not acknowledged within 300 s")
    except KafkaException as error:
        raise RuntimeError(f"Failed to send records to Kafka: {error}") from error
    if failures:
        raise RuntimeError("Failed to send records to Kafka: " + "; ".join(failures))
    return count


def _produce_with_token(
    batches: Iterator[pa.RecordBatch], options: SinkOptions, columns: WriteColumns
) -> int:
    """`produce_batches` through odradek's own producer, for a delegation token's login."""
    bootstrap = options.kafka_params["bootstrap.servers"]
    count = 0
    with Producer(bootstrap, security=token_security(options.kafka_params)) as producer:
        try:
            for batch in batches:
                for topic, key, value, partition, headers in _rows(batch, options.topic, columns):
                    if topic is None:
                        raise ValueError(exactly_once.NULL_TOPIC)
                    producer.send(topic, _bytes(value), _bytes(key), partition, _headers(headers))
                    count += 1
            producer.flush()
        except RequestError as error:
            raise RuntimeError(f"Failed to send records to Kafka: {error}") from error
    return count


def _bytes(value: object) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    return value.encode() if isinstance(value, str) else bytes(value)  # type: ignore[call-overload]


def _headers(headers: list[tuple[str, Any]] | None) -> list[tuple[str, bytes | None]]:
    return [(str(k), _bytes(v)) for k, v in headers or ()]


def _rows(
    batch: pa.RecordBatch, topic_option: str | None, columns: WriteColumns
) -> Iterator[tuple[Any, Any, Any, int, Any]]:
    count = batch.num_rows
    by_name = {name.lower(): batch.column(batch.schema.get_field_index(name)) for name in columns.names}
    values = by_name["value"].to_pylist()
    keys = by_name["key"].to_pylist() if "key" in by_name else [None] * count
    if topic_option is not None:
        topics: list[Any] = [topic_option] * count
    else:
        topics = by_name["topic"].to_pylist()
    partitions = by_name["partition"].to_pylist() if "partition" in by_name else [None] * count
    if "headers" in by_name:
        headers = [
            None if h is None else [(e["key"], e["value"]) for e in h] for h in by_name["headers"].to_pylist()
        ]
    else:
        headers = [None] * count
    for topic, key, value, partition, header in zip(topics, keys, values, partitions, headers, strict=True):
        yield topic, key, value, (-1 if partition is None else partition), header
