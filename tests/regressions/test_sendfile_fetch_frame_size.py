"""A fetch answered by sendfile (data >= the copy threshold) had a size prefix without the file's bytes,
so librdkafka saw a malformed frame and dropped the connection: large fetches never arrived."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, Producer, TopicPartition

from odradek.handlers.fetch import SENDFILE_THRESHOLD
from tests.support.broker_process import BrokerProcess


def test_large_fetch_served_by_sendfile_reaches_the_consumer(broker: BrokerProcess) -> None:
    count = 4 * SENDFILE_THRESHOLD // 1000  # ~4x the threshold in 1 KB messages: several sendfile fetches
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 20, "batch.size": 1_000_000})
    for i in range(count):
        producer.produce("sendfile-frames", value=b"%06d" % i + b"x" * 994)
    assert producer.flush(20) == 0
    consumer = Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": "unused", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition("sendfile-frames", 0, 0)])
    values = []
    deadline = time.monotonic() + 20
    while len(values) < count and time.monotonic() < deadline:
        for message in consumer.consume(1000, 0.5):
            assert message.error() is None, message.error()
            values.append(message.value()[:6])
    consumer.close()
    assert values == [b"%06d" % i for i in range(count)]
