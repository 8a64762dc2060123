"""Reading one offset range on an executor with confluent-kafka: assign, seek, consume in bulk.

Messages come in chunks of up to `CHUNK` and each chunk becomes one Arrow batch, its columns built with
list comprehensions over the chunk (no per-row tuples, no per-row Arrow calls). The range's end bounds
the read: messages at or past it are dropped, and the read stops once the consumer's position reaches
it (offsets may have gaps: compaction, transaction markers).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from odradek.spark.options import SourceOptions
from odradek.spark.ranges import OffsetRange
from odradek.spark.schema import CREATE_TIME, LOG_APPEND_TIME, NO_TIMESTAMP_TYPE, headers_array, record_batch

log = logging.getLogger(__name__)

CHUNK = 20_000
_POLL_S = 0.5
# confluent-kafka's TIMESTAMP_NOT_AVAILABLE, _CREATE_TIME, _LOG_APPEND_TIME -> Kafka's ids
_TIMESTAMP_TYPES = {0: NO_TIMESTAMP_TYPE, 1: CREATE_TIME, 2: LOG_APPEND_TIME}


class DataLossError(RuntimeError):
    """Offsets a query needs are gone from the broker (retention, deleted records or topic)."""


def data_loss_message(detail: str) -> str:
    return (
        f"{detail}\nSome data may have been lost because they are not available in Kafka any more; "
        "either the data was aged out by Kafka or the topic may have been deleted before all the data in "
        "the topic was processed. If you don't want your streaming query to fail on such cases, set the "
        'source option "failOnDataLoss" to "false".'
    )


def read_range_with_consumer(offset_range: OffsetRange, options: SourceOptions) -> Iterator[pa.RecordBatch]:
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    consumer = Consumer(options.consumer_config("executor"))
    try:
        topic, partition, until = offset_range.topic, offset_range.partition, offset_range.until_offset
        position = offset_range.from_offset
        consumer.assign([TopicPartition(topic, partition, position)])
        waited_since = time.monotonic()
        while position < until:
            messages = consumer.consume(num_messages=min(CHUNK, until - position), timeout=_POLL_S)
            good: list[Any] = []
            for message in messages:
                error = message.error()
                if error is None:
                    good.append(message)
                elif error.code() in (KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE):
                    position = _handle_out_of_range(consumer, offset_range, position, options)
                    consumer.assign([TopicPartition(topic, partition, position)])
                    good = []
                    break
                elif not error.retriable():
                    raise RuntimeError(f"reading {topic}-{partition} at offset {position}: {error}")
            if good:
                while good and good[-1].offset() >= until:
                    good.pop()
                if good:
                    yield _batch(good, topic, partition, options.output_columns)
                    position = good[-1].offset() + 1
                    waited_since = time.monotonic()
                    continue
                position = until
                break
            if position >= until:
                break
            # Nothing came: the rest of the range may be a gap (compaction, transaction markers).
            moved = consumer.position([TopicPartition(topic, partition)])[0].offset
            if moved >= 0 and moved > position:
                position = moved
                waited_since = time.monotonic()
            elif (time.monotonic() - waited_since) * 1000 > options.poll_timeout_ms:
                raise TimeoutError(
                    f"Cannot fetch record for offset {position} in {options.poll_timeout_ms} milliseconds"
                )
    finally:
        consumer.close()


def _handle_out_of_range(
    consumer: Any, offset_range: OffsetRange, position: int, options: SourceOptions
) -> int:
    from confluent_kafka import TopicPartition

    low, _high = consumer.get_watermark_offsets(
        TopicPartition(offset_range.topic, offset_range.partition), timeout=30.0
    )
    detail = (
        f"Cannot fetch offset {position} of {offset_range.topic}-{offset_range.partition}: "
        f"the earliest available offset is {low}."
    )
    if options.fail_on_data_loss or low <= position:
        raise DataLossError(data_loss_message(detail))
    log.warning("%s Skipping to %d (failOnDataLoss=false).", detail, min(low, offset_range.until_offset))
    return min(int(low), offset_range.until_offset)


def _batch(messages: list[Any], topic: str, partition: int, columns: tuple[str, ...]) -> pa.RecordBatch:
    """One chunk of messages as a batch of `columns`; the others are not built."""
    wanted = set(columns)
    stamps = [m.timestamp() for m in messages] if {"timestamp", "timestampType"} & wanted else []
    return record_batch(
        columns,
        len(messages),
        topic=topic,
        partition=partition,
        keys=pa.array([m.key() for m in messages], pa.binary()) if "key" in wanted else None,
        values=pa.array([m.value() for m in messages], pa.binary()) if "value" in wanted else None,
        offsets=[m.offset() for m in messages] if "offset" in wanted else None,
        timestamps_ms=[s[1] if s[0] else None for s in stamps] if "timestamp" in wanted else None,
        timestamp_types=(
            [_TIMESTAMP_TYPES.get(s[0], NO_TIMESTAMP_TYPE) for s in stamps]
            if "timestampType" in wanted
            else None
        ),
        headers=headers_array([m.headers() for m in messages]) if "headers" in wanted else None,
    )
