"""ListConfigResources (key 74; ListClientMetricsResources before Kafka 4.1, KIP-1142).

Version notes:
- v0 lists the CLIENT_METRICS resources (the telemetry subscriptions) only. v1 takes the resource types
  to list (none: every type v1 knows): TOPIC (every topic), BROKER and BROKER_LOGGER (every broker on
  the request's listener, by id), CLIENT_METRICS and GROUP (groups with GROUP configs set). A type v1
  does not know is UNSUPPORTED_VERSION with nothing listed, as Kafka 4.4.
- Authorization as Kafka: DESCRIBE_CONFIGS on the cluster, else CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from odradek.handlers._common.authorization import authorize_cluster
from odradek.handlers._common.context import RequestContext
from odradek.handlers._common.registry import handles
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.list_config_resources import (
    ConfigResource,
    ListConfigResourcesRequest,
    ListConfigResourcesResponse,
)
from odradek.security.acl import AclOperation

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
_V0_TYPES = (CLIENT_METRICS,)
_V1_TYPES = (TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP)


@handles(ApiKey.LIST_CONFIG_RESOURCES, 0, 1)
async def handle_list_config_resources(
    request: ListConfigResourcesRequest, context: RequestContext
) -> ListConfigResourcesResponse:
    if not authorize_cluster(context, AclOperation.DESCRIBE_CONFIGS):
        return ListConfigResourcesResponse(
            error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, config_resources=[]
        )
    supported = _V0_TYPES if context.api_version == 0 else _V1_TYPES
    wanted = (
        set(request.resource_types) if context.api_version >= 1 and request.resource_types else set(supported)
    )
    if not wanted <= set(supported):
        return ListConfigResourcesResponse(error_code=ErrorCode.UNSUPPORTED_VERSION, config_resources=[])
    services = context.services
    found: list[ConfigResource] = []
    # in Kafka 4.4's order: groups, client metrics, broker loggers, brokers, topics
    if GROUP in wanted and services.group_configs is not None:
        groups = services.group_configs.group_ids()
        found += [ConfigResource(resource_name=name, resource_type=GROUP) for name in groups]
    if CLIENT_METRICS in wanted:
        names = services.client_metrics.subscription_names()
        found += [ConfigResource(resource_name=name, resource_type=CLIENT_METRICS) for name in names]
    brokers = [str(b.node_id) for b in services.advertised_brokers(context.listener)]
    for kind in (BROKER_LOGGER, BROKER):
        if kind in wanted:
            found += [ConfigResource(resource_name=node, resource_type=kind) for node in brokers]
    if TOPIC in wanted:
        found += [
            ConfigResource(resource_name=name, resource_type=TOPIC)
            for name in sorted(services.cluster.topics)
        ]
    return ListConfigResourcesResponse(error_code=ErrorCode.NONE, config_resources=found)
