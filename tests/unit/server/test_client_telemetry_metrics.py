"""The metrics clients push (KIP-714) on the metrics endpoint: one sample per data point of each
client instance's latest push, labelled with its instance id, client id, metric name and attributes;
an expired instance's are gone."""

from __future__ import annotations

import contextlib
import uuid
from pathlib import Path

from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.metrics.v1.metrics_pb2 import (
    Gauge,
    Metric,
    MetricsData,
    NumberDataPoint,
    ResourceMetrics,
    ScopeMetrics,
)

from tests.support.requirements import require_module

require_module("prometheus_client", allow_module_level=True)

from odradek.protocol.error_codes import KafkaError  # noqa: E402
from odradek.security.client_quotas import now_ms  # noqa: E402
from odradek.server.broker_metrics import BrokerMetrics  # noqa: E402
from odradek.telemetry.manager import Push  # noqa: E402
from odradek.telemetry.subscriptions import ClientAttributes  # noqa: E402
from tests.support.handler_services import HandlerBroker  # noqa: E402

CLIENT = ClientAttributes(None, "producer-1", None, None, "127.0.0.1", 50000)


def _payload() -> bytes:
    point = NumberDataPoint(
        as_double=12.5, attributes=[KeyValue(key="node.id", value=AnyValue(string_value="1"))]
    )
    metric = Metric(
        name="org.apache.kafka.producer.node.request.latency.avg", gauge=Gauge(data_points=[point])
    )
    return MetricsData(
        resource_metrics=[ResourceMetrics(scope_metrics=[ScopeMetrics(metrics=[metric])])]
    ).SerializeToString()


def _samples(broker: HandlerBroker) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in BrokerMetrics(broker.services, lambda: 0).collect()
        for sample in family.samples
        if sample.name.startswith("odradek_client_telemetry")
    }


def test_each_client_instances_pushed_metrics_are_exported_with_its_ids(tmp_path: Path) -> None:
    broker = HandlerBroker(tmp_path / "data")
    try:
        manager = broker.services.client_metrics
        manager.update_subscription("all", {"metrics": "*"})
        now = now_ms()  # the clock the endpoint expires instances by
        answer = manager.get_subscriptions(uuid.UUID(int=0), CLIENT, now_ms=now)
        push = Push(answer.client_instance_id, answer.subscription_id, False, 0, _payload())
        manager.push(push, CLIENT, now_ms=now)
        samples = _samples(broker)
        labels = (
            ("attributes", "node.id=1"),
            ("client_id", "producer-1"),
            ("client_instance_id", str(answer.client_instance_id)),
            ("metric", "org.apache.kafka.producer.node.request.latency.avg"),
        )
        assert samples[("odradek_client_telemetry_metric", labels)] == 12.5
        assert samples[("odradek_client_telemetry_instances", ())] == 1
        manager.expire(now_ms=now + 900_000)  # three 5-minute intervals
        assert _samples(broker) == {("odradek_client_telemetry_instances", ()): 0}
    finally:
        broker.close()


def test_refused_pushes_are_counted_by_error_as_kafkas_client_metrics_sensors(tmp_path: Path) -> None:
    broker = HandlerBroker(tmp_path / "data")
    try:
        manager = broker.services.client_metrics
        manager.update_subscription("all", {"metrics": "*", "interval.ms": "60000"})
        now = now_ms()
        answer = manager.get_subscriptions(uuid.UUID(int=0), CLIENT, now_ms=now)
        for subscription_id, at in ((answer.subscription_id + 1, now), (answer.subscription_id, now + 1)):
            with contextlib.suppress(KafkaError):  # unknown subscription, then too early
                manager.push(Push(answer.client_instance_id, subscription_id, False, 0, b""), CLIENT, at)
        refused = {
            sample.labels["error"]: sample.value
            for family in BrokerMetrics(broker.services, lambda: 0).collect()
            for sample in family.samples
            if sample.name == "odradek_client_telemetry_refused_total"
        }
        assert refused == {"unknown_subscription_id": 1, "throttling_quota_exceeded": 1}
    finally:
        broker.close()
