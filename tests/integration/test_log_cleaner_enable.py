"""log.cleaner.enable: with false no cleaner runs, so a compacted topic keeps every record (as in Kafka);
with true (the default) the same topic is compacted."""

from __future__ import annotations

import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.broker_process import BrokerProcess

TOPIC = "compacted"
# Segments roll on the next append after 100 ms; the cleaner looks every 50 ms and cleans any dirt.
TOPIC_CONFIGS = {"cleanup.policy": "compact", "segment.ms": "100", "min.cleanable.dirty.ratio": "0.01"}
CLEANER_BACKOFF = {"log.cleaner.backoff.ms": "50"}


def _produce_one_key_into_several_segments(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 1, config=TOPIC_CONFIGS)])[TOPIC].result(10)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for number in range(5):
        producer.produce(TOPIC, key=b"key", value=f"value-{number}".encode())
        assert producer.flush(10) == 0
        time.sleep(0.2)


def _offsets_from_the_start(bootstrap: str) -> list[int]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "cleaner-test", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(TOPIC, 0, 0)])
    offsets: list[int] = []
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and (not offsets or offsets[-1] < 4):
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            offsets.append(message.offset())
    consumer.close()
    return offsets


def test_log_cleaner_enable_false_leaves_compacted_topics_uncleaned(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "data", {"log.cleaner.enable": "false", **CLEANER_BACKOFF}).start()
    try:
        _produce_one_key_into_several_segments(broker.bootstrap)
        time.sleep(1.5)  # thirty cleaner back-offs: it would have cleaned by now
        assert _offsets_from_the_start(broker.bootstrap) == [0, 1, 2, 3, 4]
    finally:
        broker.stop()


def test_log_cleaner_compacts_the_same_topic_when_enabled(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "data", CLEANER_BACKOFF).start()
    try:
        _produce_one_key_into_several_segments(broker.bootstrap)
        deadline = time.monotonic() + 10
        while (offsets := _offsets_from_the_start(broker.bootstrap))[0] == 0 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert offsets[0] > 0 and offsets[-1] == 4
    finally:
        broker.stop()
