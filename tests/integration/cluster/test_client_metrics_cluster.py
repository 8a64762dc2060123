"""Client telemetry in a ZooKeeper cluster of odradek brokers: a client-metrics subscription set through
one broker is what every broker gives its clients (GetTelemetrySubscriptions) and lists, and a broker
started afterwards reads it from ZooKeeper before it serves."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.get_telemetry_subscriptions import GetTelemetrySubscriptionsRequest
from odradek.protocol.messages.incremental_alter_configs import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from odradek.protocol.messages.list_config_resources import ListConfigResourcesRequest
from tests.support.broker_process import BrokerProcess
from tests.support.interop import wait_until
from tests.support.raw_client import RawClient
from tests.support.zookeeper import ZooKeeperServer

pytestmark = pytest.mark.timeout(180)

CLIENT_METRICS = 16
ZERO = uuid.UUID(int=0)


def _broker(base: Path, connect: str, node: int) -> BrokerProcess:
    settings = {
        "node.id": str(node),
        "zookeeper.connect": connect,
        "zookeeper.session.timeout.ms": "3000",
        "offsets.topic.replication.factor": "1",
    }
    return BrokerProcess(base / f"broker-{node}", settings, host=f"127.0.0.{node + 1}")


@pytest.fixture
def connect(zookeeper_server: ZooKeeperServer) -> str:
    return f"{zookeeper_server.connect_string}/odradek-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def brokers(connect: str, tmp_path: Path) -> Iterator[dict[int, BrokerProcess]]:
    started = {node: _broker(tmp_path, connect, node).start() for node in (1, 2)}
    try:
        yield started
    finally:
        for broker in started.values():
            broker.stop()


def _requested(broker: BrokerProcess) -> list[str]:
    with RawClient(broker.port, host=broker.host) as client:
        answer = client.request(GetTelemetrySubscriptionsRequest(client_instance_id=ZERO), 0)
    assert answer.error_code == ErrorCode.NONE
    return list(answer.requested_metrics)


def _listed(broker: BrokerProcess) -> list[str]:
    with RawClient(broker.port, host=broker.host) as client:
        answer = client.request(ListConfigResourcesRequest(resource_types=[CLIENT_METRICS]), 1)
    return [resource.resource_name for resource in answer.config_resources]


def test_a_subscription_set_through_one_broker_is_served_by_every_broker(
    brokers: dict[int, BrokerProcess], connect: str, tmp_path: Path
) -> None:
    configs = [AlterableConfig(name="metrics", config_operation=0, value="org.apache.kafka.producer.")]
    request = IncrementalAlterConfigsRequest(
        resources=[
            AlterConfigsResource(resource_type=CLIENT_METRICS, resource_name="producers", configs=configs)
        ],
        validate_only=False,
    )
    with RawClient(brokers[1].port, host=brokers[1].host) as client:
        [result] = client.request(request, 1).responses
    assert result.error_code == ErrorCode.NONE, result.error_message
    assert _requested(brokers[1]) == ["org.apache.kafka.producer."]  # at once where it was set
    wait_until(lambda: _requested(brokers[2]) == ["org.apache.kafka.producer."], 30, "broker 2 applies it")
    assert _listed(brokers[2]) == ["producers"]
    brokers[2].stop()
    brokers[2] = _broker(tmp_path, connect, 2).start()  # reads /config/client-metrics before serving
    assert _requested(brokers[2]) == ["org.apache.kafka.producer."]
