"""confluent-kafka and kafka-python consumers over their consumer_byte_rate, watched on the wire (KIP-219).

Kafka answers a Fetch that takes the consumer over its quota at once with throttle_time_ms and no
records (they would push it further over), and reads nothing more from the connection for that long.
The broker is reached through a frame proxy (tests/support/frame_proxy.py) that decodes every Fetch
answer with odradek's codec: the throttled answers carry no records, and the bytes the consumer gets
come at about the quota.

The broker measures over 2 windows of 1 s (quota.window.num, quota.window.size.seconds), and the
consumer asks for at most 16 KiB at a time, so that a few hundred kilobytes show the rate.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from odradek.cli.main import main as odradek
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.frames import decode_response
from odradek.protocol.messages.fetch import FetchResponse
from tests.support.broker_process import BrokerProcess
from tests.support.frame_proxy import Exchange, FrameProxy
from tests.support.ports import free_port
from tests.support.requirements import require_module

pytestmark = pytest.mark.timeout(180)

RATE = 100 * 1024  # bytes per second
VALUE = b"v" * 1000
MESSAGES = 500  # about 500 KB: five seconds at the rate
DEADLINE = 120


@dataclass(frozen=True)
class FetchAnswer:
    at: float  # time.monotonic() when the proxy saw it
    throttle_time_ms: int
    record_bytes: int


class FetchWatcher:
    """The Fetch answers the proxy sees, decoded."""

    def __init__(self) -> None:
        self.answers: list[FetchAnswer] = []
        self.errors: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, exchange: Exchange) -> None:
        if exchange.direction != "response" or exchange.api_key != ApiKey.FETCH:
            return
        try:
            _, response = decode_response(exchange.frame, exchange.api_key, exchange.api_version)
        except Exception as error:  # the proxy thread must go on; the test reports it
            self.errors.append(f"undecodable Fetch v{exchange.api_version} answer: {error}")
            return
        assert isinstance(response, FetchResponse)
        size = sum(len(p.records or b"") for t in response.responses for p in t.partitions)
        with self._lock:
            self.answers.append(FetchAnswer(time.monotonic(), response.throttle_time_ms, size))

    def snapshot(self) -> list[FetchAnswer]:
        with self._lock:
            return list(self.answers)


@pytest.fixture
def proxied(tmp_path: Path) -> Iterator[tuple[BrokerProcess, FrameProxy, FetchWatcher]]:
    require_module("confluent_kafka")
    proxy_port = free_port()
    settings = {
        "quota.window.num": "2",
        "quota.window.size.seconds": "1",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy_port}",
    }
    broker = BrokerProcess(tmp_path / "data", settings).start()
    watcher = FetchWatcher()
    try:
        with FrameProxy(broker.port, watcher, port=proxy_port) as proxy:
            yield broker, proxy, watcher
    finally:
        broker.stop()


def _load(bootstrap: str, topic: str) -> None:
    from confluent_kafka import Producer

    # Batches of 16 KiB: a batch is fetched whole, and one larger than a quota window allows
    # (RATE * (2 - 1) windows * 1 s) would be throttled every time, as in Kafka.
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 16 * 1024})
    for _ in range(MESSAGES):
        while True:
            try:
                producer.produce(topic, VALUE)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    assert producer.flush(60) == 0


def _consume_with_kafka_python(bootstrap: str, topic: str, client_id: str) -> None:
    """Read the topic to its end with kafka-python (fetch sessions, KIP-219 aware)."""
    require_module("kafka")
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        client_id=client_id,
        group_id=f"g-{uuid.uuid4().hex[:6]}",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        max_partition_fetch_bytes=16 * 1024,
        consumer_timeout_ms=DEADLINE * 1000,
    )
    try:
        received = 0
        for _ in consumer:
            received += 1
            if received == MESSAGES:
                break
        assert received == MESSAGES
    finally:
        consumer.close()


def _consume(bootstrap: str, topic: str, client_id: str) -> list[float]:
    """Read the topic to its end; the throttle times librdkafka reported."""
    from confluent_kafka import Consumer

    throttles: list[float] = []
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": client_id,
            "group.id": f"g-{uuid.uuid4().hex[:6]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "max.partition.fetch.bytes": 16 * 1024,
            "throttle_cb": lambda event: throttles.append(event.throttle_time),
        }
    )
    try:
        consumer.subscribe([topic])
        received = 0
        deadline = time.monotonic() + DEADLINE
        while received < MESSAGES and time.monotonic() < deadline:
            message: Any = consumer.poll(0.5)
            if message is not None and not message.error():
                received += 1
        assert received == MESSAGES
        return throttles
    finally:
        consumer.close()


@pytest.mark.parametrize("client", ["confluent-kafka", "kafka-python"])
def test_a_consumer_over_its_byte_rate_gets_throttled_answers_without_records_and_the_quota_rate(
    proxied: tuple[BrokerProcess, FrameProxy, FetchWatcher], client: str
) -> None:
    broker, proxy, watcher = proxied
    bootstrap = f"127.0.0.1:{proxy.port}"
    topic = f"throttled-{uuid.uuid4().hex[:6]}"
    _load(bootstrap, topic)
    command = ["quotas", "alter", "--client", "slow-consumer", "--add-config", f"consumer_byte_rate={RATE}"]
    assert odradek([*command, "--bootstrap-server", broker.bootstrap]) == 0
    watcher.answers.clear()  # the producer's fetches: none; only the consumer's count

    if client == "confluent-kafka":
        throttles = _consume(bootstrap, topic, "slow-consumer")
        assert throttles and max(throttles) > 0, "librdkafka was told of no throttle"
    else:
        _consume_with_kafka_python(bootstrap, topic, "slow-consumer")

    assert not proxy.errors and not watcher.errors, proxy.errors + watcher.errors
    answers = watcher.snapshot()
    throttled = [a for a in answers if a.throttle_time_ms > 0]
    with_records = [a for a in answers if a.record_bytes > 0]
    assert throttled, "the broker never throttled the consumer"
    # KIP-219: an answer that throttles carries nothing (Kafka's getThrottledResponse).
    assert [a for a in throttled if a.record_bytes] == []
    # The records came at about the quota: from the first answer with records to the last.
    assert with_records[-1].at > with_records[0].at
    delivered = sum(a.record_bytes for a in with_records[1:])
    rate = delivered / (with_records[-1].at - with_records[0].at)
    assert 0.4 * RATE < rate < 1.5 * RATE, f"{rate:.0f} B/s against a quota of {RATE} B/s"
