"""Client telemetry (KIP-714) in-process: CLIENT_METRICS config resources through IncrementalAlterConfigs,
DescribeConfigs and ListConfigResources, and the GetTelemetrySubscriptions / PushTelemetry a client
sends for them."""

from __future__ import annotations

import uuid
from pathlib import Path

from opentelemetry.proto.metrics.v1.metrics_pb2 import (
    Gauge,
    Metric,
    MetricsData,
    NumberDataPoint,
    ResourceMetrics,
    ScopeMetrics,
)

from odradek.cluster.metadata.acls import LocalAclStore
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.describe_configs import DescribeConfigsRequest, DescribeConfigsResource
from odradek.protocol.messages.get_telemetry_subscriptions import GetTelemetrySubscriptionsRequest
from odradek.protocol.messages.incremental_alter_configs import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from odradek.protocol.messages.list_config_resources import ListConfigResourcesRequest
from odradek.protocol.messages.push_telemetry import PushTelemetryRequest
from odradek.security.authorizer import authorizer_from_config
from tests.support.handler_services import HandlerBroker

CLIENT_METRICS, TOPIC, BROKER, BROKER_LOGGER, GROUP = 16, 2, 4, 8, 32
SET, DELETE, APPEND = 0, 1, 2
ZERO = uuid.UUID(int=0)


async def _alter(
    broker: HandlerBroker, name: str, *ops: tuple[str, int, str | None], validate_only: bool = False
) -> tuple[int, str | None]:
    request = IncrementalAlterConfigsRequest(
        resources=[
            AlterConfigsResource(
                resource_type=CLIENT_METRICS,
                resource_name=name,
                configs=[AlterableConfig(name=k, config_operation=op, value=v) for k, op, v in ops],
            )
        ],
        validate_only=validate_only,
    )
    [result] = (await broker.call(request, 1)).responses
    return result.error_code, result.error_message


async def _describe(broker: HandlerBroker, name: str) -> tuple[int, dict[str, tuple[str | None, int]]]:
    request = DescribeConfigsRequest(
        resources=[
            DescribeConfigsResource(resource_type=CLIENT_METRICS, resource_name=name, configuration_keys=None)
        ],
        include_synonyms=True,
    )
    [result] = (await broker.call(request, 4)).results
    return result.error_code, {c.name: (c.value, c.config_source) for c in result.configs}


def _otlp(**values: float) -> bytes:
    metrics = [
        Metric(name=name, gauge=Gauge(data_points=[NumberDataPoint(as_double=value)]))
        for name, value in values.items()
    ]
    return MetricsData(
        resource_metrics=[ResourceMetrics(scope_metrics=[ScopeMetrics(metrics=metrics)])]
    ).SerializeToString()


async def test_a_client_is_given_the_subscription_set_with_incremental_alter_configs(
    handler_broker: HandlerBroker,
) -> None:
    assert await _alter(
        handler_broker,
        "producers",
        ("metrics", SET, "org.apache.kafka.producer"),
        ("interval.ms", SET, "1000"),
    ) == (ErrorCode.NONE, None)
    answer = await handler_broker.call(GetTelemetrySubscriptionsRequest(client_instance_id=ZERO), 0)
    assert answer.error_code == ErrorCode.NONE
    assert answer.client_instance_id != ZERO
    assert answer.requested_metrics == ["org.apache.kafka.producer"]
    assert answer.push_interval_ms == 1000
    assert answer.telemetry_max_bytes == 1024 * 1024
    assert answer.delta_temporality is False
    pushed = await handler_broker.call(
        PushTelemetryRequest(
            client_instance_id=answer.client_instance_id,
            subscription_id=answer.subscription_id,
            terminating=False,
            compression_type=0,
            metrics=_otlp(**{"org.apache.kafka.producer.record.send.rate": 4.0}),
        ),
        0,
    )
    assert pushed.error_code == ErrorCode.NONE
    instance = handler_broker.services.client_metrics.instance(answer.client_instance_id)
    assert instance is not None and instance.client.client_id == "handler-tests"
    assert [(p.name, p.value) for p in instance.points] == [
        ("org.apache.kafka.producer.record.send.rate", 4.0)
    ]


async def test_a_push_with_an_outdated_subscription_id_is_answered_unknown_subscription_id(
    handler_broker: HandlerBroker,
) -> None:
    await _alter(handler_broker, "all", ("metrics", SET, "*"))
    answer = await handler_broker.call(GetTelemetrySubscriptionsRequest(client_instance_id=ZERO), 0)
    pushed = await handler_broker.call(
        PushTelemetryRequest(
            client_instance_id=answer.client_instance_id,
            subscription_id=answer.subscription_id + 1,
            terminating=False,
            compression_type=0,
            metrics=b"",
        ),
        0,
    )
    assert pushed.error_code == ErrorCode.UNKNOWN_SUBSCRIPTION_ID


async def test_describe_configs_of_a_subscription_reports_what_is_set_and_the_defaults(
    handler_broker: HandlerBroker,
) -> None:
    await _alter(handler_broker, "s", ("metrics", SET, "a,b"))
    assert await _describe(handler_broker, "s") == (
        ErrorCode.NONE,
        {"metrics": ("a,b", 7), "interval.ms": ("300000", 5), "match": ("", 5)},
    )
    await _alter(handler_broker, "s", ("metrics", APPEND, "c"), ("interval.ms", SET, "2000"))
    _, described = await _describe(handler_broker, "s")
    assert described["metrics"] == ("a,b,c", 7)
    assert described["interval.ms"] == ("2000", 7)


async def test_describe_configs_of_the_empty_subscription_name_is_an_invalid_request(
    handler_broker: HandlerBroker,
) -> None:
    code, _ = await _describe(handler_broker, "")
    assert code == ErrorCode.INVALID_REQUEST


async def test_invalid_client_metrics_configs_are_refused_and_nothing_is_stored(
    handler_broker: HandlerBroker,
) -> None:
    assert await _alter(handler_broker, "s", ("metric", SET, "a")) == (
        ErrorCode.INVALID_REQUEST,
        "Unknown client metrics configuration: metric",
    )
    assert await _alter(handler_broker, "s", ("match", SET, "client_id=(?!x)")) == (
        ErrorCode.INVALID_CONFIG,
        "Illegal client matching pattern: client_id=(?!x)",
    )
    code, _ = await _alter(handler_broker, "s", ("interval.ms", SET, "50"))
    assert code == ErrorCode.INVALID_REQUEST
    assert await _alter(handler_broker, "s", ("metrics", SET, "a"), validate_only=True) == (
        ErrorCode.NONE,
        None,
    )
    assert handler_broker.services.client_metrics.subscription_names() == []


async def test_deleting_every_config_of_a_subscription_removes_it(handler_broker: HandlerBroker) -> None:
    await _alter(handler_broker, "s", ("metrics", SET, "a"))
    await _alter(handler_broker, "s", ("metrics", DELETE, None))
    assert handler_broker.services.client_metrics.subscription_names() == []


async def test_client_metrics_subscriptions_survive_a_restart(tmp_path: Path) -> None:
    first = HandlerBroker(tmp_path / "data")
    try:
        await _alter(first, "s", ("metrics", SET, "a"), ("interval.ms", SET, "1000"))
    finally:
        first.close()
    second = HandlerBroker(tmp_path / "data")
    try:
        _, described = await _describe(second, "s")
        assert described["interval.ms"] == ("1000", 7)
    finally:
        second.close()


async def test_list_config_resources_v0_lists_the_client_metrics_subscriptions(
    handler_broker: HandlerBroker,
) -> None:
    await _alter(handler_broker, "b", ("metrics", SET, "a"))
    await _alter(handler_broker, "a", ("metrics", SET, "a"))
    answer = await handler_broker.call_over_wire(ListConfigResourcesRequest(), 0)
    assert answer.error_code == ErrorCode.NONE
    assert sorted(r.resource_name for r in answer.config_resources) == ["a", "b"]


async def test_list_config_resources_v1_lists_the_types_asked_for_and_every_type_when_none(
    handler_broker: HandlerBroker,
) -> None:
    await handler_broker.create_topic("orders")
    await _alter(handler_broker, "s", ("metrics", SET, "a"))
    node = str(handler_broker.services.node_id)

    async def listed(*types: int) -> set[tuple[int, str]]:
        answer = await handler_broker.call(ListConfigResourcesRequest(resource_types=list(types)), 1)
        assert answer.error_code == ErrorCode.NONE
        return {(r.resource_type, r.resource_name) for r in answer.config_resources}

    assert await listed(TOPIC) == {(TOPIC, "orders")}
    assert await listed(BROKER, CLIENT_METRICS) == {(BROKER, node), (CLIENT_METRICS, "s")}
    assert await listed() == {(TOPIC, "orders"), (BROKER, node), (BROKER_LOGGER, node), (CLIENT_METRICS, "s")}


async def test_list_config_resources_of_an_unknown_resource_type_is_unsupported_version(
    handler_broker: HandlerBroker,
) -> None:
    answer = await handler_broker.call(ListConfigResourcesRequest(resource_types=[TOPIC, 99]), 1)
    assert answer.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert answer.config_resources == []


async def test_without_the_cluster_permissions_client_metrics_are_cluster_authorization_failed(
    tmp_path: Path,
) -> None:
    log_dir = tmp_path / "data"
    broker = HandlerBroker(log_dir, **{"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"})
    broker.services.authorizer = authorizer_from_config(broker.config, LocalAclStore(log_dir))
    try:
        code, _ = await _alter(broker, "s", ("metrics", SET, "*"))
        assert code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        code, _ = await _describe(broker, "s")
        assert code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        listed = await broker.call(ListConfigResourcesRequest(resource_types=[]), 1)
        assert listed.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        assert broker.services.client_metrics.subscription_names() == []
        # as Kafka: a client needs no permission to ask for its own subscription
        answer = await broker.call(GetTelemetrySubscriptionsRequest(client_instance_id=ZERO), 0)
        assert answer.error_code == ErrorCode.NONE
    finally:
        broker.close()
