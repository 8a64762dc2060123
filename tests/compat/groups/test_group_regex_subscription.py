"""A KIP-848 regex subscription from a real client (confluent-kafka, `group.protocol=consumer`): the
broker resolves the regex in the background (RE2, whole names), the consumer reads the matching topics
only, and a matching topic created later joins the subscription at the next resolution (within about
10 s, Kafka's minimum between two resolutions)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.support.broker_process import BrokerProcess
from tests.support.requirements import require_module

pytestmark = pytest.mark.timeout(120)


def _create(admin: Any, *names: str) -> None:
    from confluent_kafka.admin import NewTopic

    for future in admin.create_topics([NewTopic(name, 1, 1) for name in names]).values():
        future.result()


def _read_until(consumer: Any, wanted: set[str], seconds: float) -> set[str]:
    seen: set[str] = set()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not wanted <= seen:
        message = consumer.poll(0.2)
        if message is not None and message.error() is None:
            seen.add(message.topic())
    return seen


def test_a_regex_subscription_reads_the_matching_topics_and_a_new_one(group_broker: BrokerProcess) -> None:
    require_module("confluent_kafka")
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient

    bootstrap = group_broker.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    _create(admin, "rx-orders-eu", "rx-orders-us", "rx-payments")
    producer = Producer({"bootstrap.servers": bootstrap})
    for topic in ("rx-orders-eu", "rx-orders-us", "rx-payments"):
        producer.produce(topic, value=topic.encode())
    producer.flush(10)
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "rx-regex",
            "group.protocol": "consumer",
            "auto.offset.reset": "earliest",
        }
    )
    try:
        consumer.subscribe(["^rx-orders-.*"])
        assert _read_until(consumer, {"rx-orders-eu", "rx-orders-us"}, 30) == {"rx-orders-eu", "rx-orders-us"}
        _create(admin, "rx-orders-apac")
        producer.produce("rx-orders-apac", value=b"late")
        producer.flush(10)
        assert _read_until(consumer, {"rx-orders-apac"}, 40) == {"rx-orders-apac"}
    finally:
        consumer.close()
