"""librdkafka (confluent-kafka >= 2.5) pushes its metrics with KIP-714 when the broker serves client
telemetry: with a CLIENT_METRICS subscription of every metric, a producer's metrics appear on the
broker's metrics endpoint under its client id and instance id."""

from __future__ import annotations

import http.client
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.incremental_alter_configs import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from tests.support.broker_process import BrokerProcess, free_port
from tests.support.raw_client import RawClient
from tests.support.requirements import require_module

confluent_kafka = require_module("confluent_kafka", allow_module_level=True)
require_module("prometheus_client", allow_module_level=True)

pytestmark = pytest.mark.timeout(90)

CLIENT_METRICS = 16
CLIENT_ID = "telemetry-producer"


@pytest.fixture
def metered_broker(tmp_path: Path) -> Iterator[tuple[BrokerProcess, int]]:
    metrics_port = free_port()
    process = BrokerProcess(tmp_path / "data", overrides={"metrics.port": str(metrics_port)}).start()
    try:
        yield process, metrics_port
    finally:
        process.stop()


def _subscribe_everything(port: int) -> None:
    configs = [
        AlterableConfig(name="metrics", config_operation=0, value="*"),
        AlterableConfig(name="interval.ms", config_operation=0, value="500"),
    ]
    request = IncrementalAlterConfigsRequest(
        resources=[AlterConfigsResource(resource_type=CLIENT_METRICS, resource_name="all", configs=configs)],
        validate_only=False,
    )
    with RawClient(port) as client:
        [result] = client.request(request, 1).responses
    assert result.error_code == ErrorCode.NONE, result.error_message


def _pushed_samples(metrics_port: int) -> list[str]:
    connection = http.client.HTTPConnection("127.0.0.1", metrics_port, timeout=10)
    try:
        connection.request("GET", "/metrics")
        text = connection.getresponse().read().decode()
    finally:
        connection.close()
    return [line for line in text.splitlines() if line.startswith("odradek_client_telemetry_metric{")]


def test_a_librdkafka_producers_pushed_metrics_reach_the_metrics_endpoint(
    metered_broker: tuple[BrokerProcess, int],
) -> None:
    broker, metrics_port = metered_broker
    _subscribe_everything(broker.port)
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": broker.bootstrap, "client.id": CLIENT_ID, "enable.metrics.push": True}
    )
    try:
        deadline = time.monotonic() + 45
        found: list[str] = []
        while not found and time.monotonic() < deadline:
            producer.produce("telemetry-topic", b"value")
            producer.poll(0.2)
            found = [s for s in _pushed_samples(metrics_port) if f'client_id="{CLIENT_ID}"' in s]
        assert found, "no metric pushed by the producer reached the endpoint"
        instance_ids = {re.search(r'client_instance_id="([^"]+)"', s).group(1) for s in found}  # type: ignore[union-attr]
        assert len(instance_ids) == 1
        assert any("org.apache.kafka.producer" in s for s in found), found[:5]
    finally:
        producer.flush(10)
