"""The Prometheus endpoint (`metrics.port`): scraped after producing and fetching with a real client."""

from __future__ import annotations

import http.client
import re
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.broker_process import BrokerProcess, free_port
from tests.support.listening import wait_listening
from tests.support.requirements import require_module

confluent_kafka = require_module("confluent_kafka", allow_module_level=True)
require_module("prometheus_client", allow_module_level=True)

pytestmark = pytest.mark.timeout(90)

TOPIC = "metered"
PARTITIONS = 3
MESSAGES = 300
VALUE = b"v" * 100


@pytest.fixture
def metered_broker(tmp_path: Path) -> Iterator[tuple[BrokerProcess, int]]:
    metrics_port = free_port()
    process = BrokerProcess(tmp_path / "data", overrides={"metrics.port": str(metrics_port)}).start()
    try:
        yield process, metrics_port
    finally:
        process.stop()


def test_metrics_after_produce_and_fetch(metered_broker: tuple[BrokerProcess, int]) -> None:
    broker, metrics_port = metered_broker
    _create_topic(broker.bootstrap)
    _produce(broker.bootstrap)
    consumed_bytes = _consume(broker.bootstrap)

    with socket.create_connection(("127.0.0.1", broker.port), timeout=10):  # one client still connected
        time.sleep(0.2)  # let the broker accept it
        text = _scrape(metrics_port)
    samples = _parse(text)

    assert samples[("odradek_topic_messages_in_total", f'topic="{TOPIC}"')] == MESSAGES
    bytes_in = samples[("odradek_topic_bytes_in_total", f'topic="{TOPIC}"')]
    assert bytes_in > MESSAGES * len(VALUE)  # values plus record and batch headers
    bytes_out = samples[("odradek_topic_bytes_out_total", f'topic="{TOPIC}"')]
    assert bytes_out >= consumed_bytes
    log_sizes = [samples[("odradek_log_size_bytes", f'partition="{p}",topic="{TOPIC}"')] for p in range(3)]
    assert sum(log_sizes) == bytes_in  # every appended byte is in the log, nothing else is
    assert samples[("odradek_under_replicated_partitions", "")] == 0
    assert samples[("odradek_active_connections", "")] >= 1
    assert samples[("odradek_requests_total", 'api="produce"')] >= 1
    assert samples[("odradek_requests_total", 'api="fetch"')] >= 1
    assert (
        samples[("odradek_request_latency_seconds_count", 'api="produce"')]
        == samples[("odradek_requests_total", 'api="produce"')]
    )
    inf_bucket = samples[("odradek_request_latency_seconds_bucket", 'api="metadata",le="+Inf"')]
    assert inf_bucket == samples[("odradek_request_latency_seconds_count", 'api="metadata"')] >= 1
    assert "# TYPE odradek_request_latency_seconds histogram" in text
    if ("odradek_groups", "") in samples:  # present whenever the group coordinator runs
        assert samples[("odradek_groups", "")] >= 0


def test_metrics_endpoint_answers_only_get_metrics(metered_broker: tuple[BrokerProcess, int]) -> None:
    _, metrics_port = metered_broker
    connection = http.client.HTTPConnection("127.0.0.1", metrics_port, timeout=10)
    connection.request("GET", "/nothing-here")
    assert connection.getresponse().status == 404
    connection.close()


def test_metrics_endpoint_binds_loopback_not_the_first_listeners_host(tmp_path: Path) -> None:
    """It names every topic, user and client id without authentication: this machine only by default
    (it used to bind to the first listener's host, often 0.0.0.0)."""
    metrics_port = free_port()
    broker = BrokerProcess(tmp_path / "data", {"metrics.port": str(metrics_port)}, host="127.0.0.2").start()
    try:
        assert broker.process is not None
        assert wait_listening(broker.process.pid, metrics_port) == {"127.0.0.1"}
        assert "odradek_active_connections" in _scrape(metrics_port)
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.2", metrics_port), timeout=5).close()
    finally:
        broker.stop()


def test_a_loopback_metrics_endpoint_refuses_a_request_naming_another_host(
    metered_broker: tuple[BrokerProcess, int],
) -> None:
    """A web page whose name is rebound to 127.0.0.1 (DNS rebinding) reads what it fetches from its own
    origin: only the Host header tells its request apart from a local scrape."""
    _, metrics_port = metered_broker
    for host, status in (("evil.example", 421), ("localhost", 200), ("127.0.0.1", 200), ("[::1]", 200)):
        connection = http.client.HTTPConnection("127.0.0.1", metrics_port, timeout=10)
        try:
            connection.request("GET", "/metrics", headers={"Host": f"{host}:{metrics_port}"})
            response = connection.getresponse()
            body = response.read()
        finally:
            connection.close()
        assert response.status == status, host
        assert (b"odradek_active_connections" in body) is (status == 200)


def test_metrics_host_binds_the_endpoint_where_told(tmp_path: Path) -> None:
    metrics_port = free_port()
    overrides = {"metrics.port": str(metrics_port), "metrics.host": "127.0.0.3"}
    broker = BrokerProcess(tmp_path / "data", overrides).start()
    try:
        assert broker.process is not None
        assert wait_listening(broker.process.pid, metrics_port) == {"127.0.0.3"}
        assert "odradek_active_connections" in _scrape(metrics_port, "127.0.0.3")
    finally:
        broker.stop()


def test_no_endpoint_by_default(broker: BrokerProcess) -> None:
    """metrics.port is unset by default: the broker serves Kafka only."""
    assert "metrics endpoint listening" not in broker.log_text()


def _create_topic(bootstrap: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)]).values():
        future.result(20)


def _produce(bootstrap: str) -> None:
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all"})
    failures: list[object] = []

    def delivered(error: object, _message: object) -> None:
        if error is not None:
            failures.append(error)

    for index in range(MESSAGES):
        producer.produce(TOPIC, VALUE, partition=index % PARTITIONS, on_delivery=delivered)
    assert producer.flush(30) == 0
    assert failures == []


def _consume(bootstrap: str) -> int:
    consumer = confluent_kafka.Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "metrics-test", "enable.auto.commit": False}
    )
    consumer.assign([confluent_kafka.TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
    received = 0
    value_bytes = 0
    deadline = time.monotonic() + 30
    try:
        while received < MESSAGES and time.monotonic() < deadline:
            for message in consumer.consume(1000, 0.5):
                if message.error() is None:
                    received += 1
                    value_bytes += len(message.value() or b"")
    finally:
        consumer.close()
    assert received == MESSAGES
    return value_bytes


def _scrape(port: int, host: str = "127.0.0.1") -> str:
    connection = http.client.HTTPConnection(host, port, timeout=10)
    try:
        connection.request("GET", "/metrics")
        response = connection.getresponse()
        assert response.status == 200
        assert response.getheader("Content-Type", "").startswith("text/plain")
        return response.read().decode()
    finally:
        connection.close()


_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$")


def _parse(text: str) -> dict[tuple[str, str], float]:
    """Prometheus text format as {(name, labels as written): value}; prometheus_client sorts labels."""
    samples = {}
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if match:
            samples[(match.group(1), match.group(2) or "")] = float(match.group(3))
    return samples
