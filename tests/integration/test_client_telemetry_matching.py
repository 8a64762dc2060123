"""A client telemetry subscription matching on client_software_name/version matches the connections
whose ApiVersions (v3+) named that software, as Kafka's ClientInformation; a connection that named
none is not matched. Also over the wire: GetTelemetrySubscriptions and ListConfigResources are served."""

from __future__ import annotations

import uuid

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.api_versions import ApiVersionsRequest
from odradek.protocol.messages.get_telemetry_subscriptions import GetTelemetrySubscriptionsRequest
from odradek.protocol.messages.incremental_alter_configs import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from odradek.protocol.messages.list_config_resources import ListConfigResourcesRequest
from tests.support.broker_process import BrokerProcess
from tests.support.raw_client import RawClient

CLIENT_METRICS = 16
ZERO = uuid.UUID(int=0)


def _subscribe(client: RawClient, name: str, match: str) -> None:
    configs = [
        AlterableConfig(name="metrics", config_operation=0, value="org.apache.kafka.producer"),
        AlterableConfig(name="match", config_operation=0, value=match),
    ]
    request = IncrementalAlterConfigsRequest(
        resources=[AlterConfigsResource(resource_type=CLIENT_METRICS, resource_name=name, configs=configs)],
        validate_only=False,
    )
    [result] = client.request(request, 1).responses
    assert result.error_code == ErrorCode.NONE, result.error_message


def test_a_subscription_matches_the_software_a_connection_named_in_api_versions(
    broker: BrokerProcess,
) -> None:
    with RawClient(broker.port) as admin:
        _subscribe(admin, "raw-clients", "client_software_name=odradek-raw, client_software_version=1\\..*")
        listed = admin.request(ListConfigResourcesRequest(resource_types=[CLIENT_METRICS]), 1)
        assert [r.resource_name for r in listed.config_resources] == ["raw-clients"]
    with RawClient(broker.port) as named:
        answer = named.request(
            ApiVersionsRequest(client_software_name="odradek-raw", client_software_version="1.2"), 3
        )
        assert answer.error_code == ErrorCode.NONE
        subscription = named.request(GetTelemetrySubscriptionsRequest(client_instance_id=ZERO), 0)
        assert subscription.error_code == ErrorCode.NONE
        assert subscription.requested_metrics == ["org.apache.kafka.producer"]
    with RawClient(broker.port) as unnamed:
        subscription = unnamed.request(GetTelemetrySubscriptionsRequest(client_instance_id=ZERO), 0)
        assert subscription.error_code == ErrorCode.NONE
        assert subscription.requested_metrics == []
