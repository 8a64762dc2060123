"""kafka-python speaking Fetch v2 (api_version 0.10.0) with a 100-byte max_partition_fetch_bytes meets a
930-byte message: the broker answers 100 bytes of it, and the client raises RecordTooLargeError, as
against Kafka 0.10.0. Before, the broker sent the whole message, past the limit the client had set."""

from __future__ import annotations

import kafka
import pytest
from kafka.consumer.fetcher import RecordTooLargeError

from tests.support.broker_process import BrokerProcess

pytestmark = pytest.mark.timeout(60)

LIMIT = 100


def test_kafka_python_fetch_v2_reports_a_message_over_its_fetch_size(interop_broker: BrokerProcess) -> None:
    topic = "kafka-python-legacy-fetch-limit"
    producer = kafka.KafkaProducer(bootstrap_servers=interop_broker.bootstrap)
    producer.send(topic, b"x" * 930, key=b"key", partition=0).get(10)
    producer.close(timeout=5)
    consumer = kafka.KafkaConsumer(
        bootstrap_servers=interop_broker.bootstrap,
        api_version=(0, 10, 0),
        max_partition_fetch_bytes=LIMIT,
        auto_offset_reset="earliest",
    )
    try:
        consumer.assign([kafka.TopicPartition(topic, 0)])
        with pytest.raises(RecordTooLargeError):
            for _ in range(10):
                consumer.poll(timeout_ms=1000)
    finally:
        consumer.close()
