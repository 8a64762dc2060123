"""An executor's read of one offset range, shared by the batch reader (source.py) and the stream reader
(stream.py): by the raw Fetch path when it can speak to the brokers (plaintext, or a delegation token's
login), otherwise by confluent-kafka. As Spark's KafkaBatchPartitionReader serves both kinds of query.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from odradek.spark.options import SourceOptions
from odradek.spark.ranges import OffsetRange


def read_range(offset_range: OffsetRange, options: SourceOptions) -> Iterator[pa.RecordBatch]:
    """An executor's read of one range, by the raw Fetch path or by confluent-kafka (option `reader`)."""
    if offset_range.size == 0:
        return
    if _raw_possible(options):
        from odradek.spark.raw_read import read_range_raw

        yield from read_range_raw(offset_range, options)
        return
    from odradek.spark.consumer_read import read_range_with_consumer

    yield from read_range_with_consumer(offset_range, options)


def _raw_possible(options: SourceOptions) -> bool:
    """The raw path speaks plaintext Kafka, and a delegation token's login (which librdkafka cannot make);
    anything else that needs TLS or SASL goes through librdkafka."""
    if options.token_login:
        return True
    if options.reader == "consumer":
        return False
    if options.kafka_params.get("isolation.level", "").strip().lower() == "read_committed":
        return False  # the raw reader fetches read_uncommitted: librdkafka leaves aborted records out
    protocol = options.kafka_params.get("security.protocol", "plaintext").lower()
    return protocol == "plaintext"
