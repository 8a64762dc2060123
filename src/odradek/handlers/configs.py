"""DescribeConfigs (key 32), AlterConfigs (key 33), IncrementalAlterConfigs (key 44): topic and broker
configs (KIP-133, KIP-226, KIP-339).

Version notes:
- DescribeConfigs v0 reports `is_default`; v1 adds each config's source and, with `include_synonyms`,
  its synonyms; v2 is v1 (throttling); v3 adds the config type and, with `include_documentation`, its
  documentation; v4 is flexible. Kafka 3.x answers v0 with is_default always false; odradek sets it
  as Kafka 1.0 did (source is the default), which is what v0 clients expect.
- AlterConfigs v0-1 replace a resource's whole set of dynamic configs; v2 is flexible.
  IncrementalAlterConfigs v0 SETs, DELETEs, APPENDs to and SUBTRACTs from list configs; v1 is flexible.
- Resources: TOPIC (2) by name; BROKER (4) by this broker's id, or the empty name for the cluster-wide
  default. Broker changes are validated as Kafka's broker validates them (refusals are INVALID_REQUEST,
  KAFKA-13609), persisted in the log dir and applied at once (topic defaults reach every log); in a
  ZooKeeper cluster written to /config/brokers/<id|<default>> with a /config/changes notification
  instead, which every broker (this one too) applies when it reads it, as Kafka's.
  CLIENT_METRICS (16): a client telemetry subscription by name (KIP-714; Kafka 3.9 has them in KRaft
  mode only): its configs validated as Kafka's ClientMetricsConfigs (telemetry/subscriptions.py),
  stored in the log dir or in ZooKeeper (/config/client-metrics/<name>, every broker notified),
  described with their defaults; cluster permissions, as BROKER's.
  GROUP (32): a group's configs (Kafka 4.4's GroupConfig; odradek serves the share-group ones,
  config/group_catalog.py), validated against the broker's group.share.* bounds, stored in the log dir
  or in ZooKeeper (/config/groups/<group>, every broker notified), described with the broker's values
  where unset; DESCRIBE_CONFIGS/ALTER_CONFIGS on the group (else
  GROUP_AUTHORIZATION_FAILED).
  BROKER_LOGGER resources are not supported: INVALID_REQUEST.
- Setting or deleting a config no catalog knows is INVALID_CONFIG (Kafka keeps unknown broker names as
  custom configs for plugins; odradek loads none), and so is a config odradek cannot honour yet set to
  anything but its default (docs/operations.md lists them).
- The response lists resources in request order; a resource named twice in one alter request fails
  both times ("Each resource must appear at most once.").
- With an authorizer (as Kafka): describing needs DESCRIBE_CONFIGS, altering ALTER_CONFIGS, on the
  topic (else TOPIC_AUTHORIZATION_FAILED) or, for BROKER resources, on the cluster (else
  CLUSTER_AUTHORIZATION_FAILED); checked before anything else about the resource.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import IntEnum
from functools import partial

from odradek.cluster.topic_checks import validate_topic_name
from odradek.config.catalog import BROKER_CONFIGS, LISTENER_PREFIX, listener_base
from odradek.config.group_catalog import GROUP_CONFIGS
from odradek.config.topic_catalog import TOPIC_CONFIGS
from odradek.config.types import ConfigKey, ConfigType
from odradek.handlers._common import config_entries
from odradek.handlers._common.authorization import authorize, authorize_cluster
from odradek.handlers._common.config_alteration import alter_resource
from odradek.handlers._common.config_resources import (
    ResourceType,
    check_group_name,
    named_resource,
    parse_broker_id,
    type_name,
)
from odradek.handlers._common.context import RequestContext
from odradek.handlers._common.registry import handles
from odradek.partition.errors import resource_failure
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.protocol.messages import alter_configs as legacy
from odradek.protocol.messages import incremental_alter_configs as incremental
from odradek.protocol.messages.describe_configs import (
    DescribeConfigsRequest,
    DescribeConfigsResource,
    DescribeConfigsResourceResult,
    DescribeConfigsResponse,
    DescribeConfigsResult,
)
from odradek.security.acl import AclOperation
from odradek.security.acl import ResourceType as AclResourceType
from odradek.telemetry.subscriptions import CLIENT_METRICS_CONFIGS

_CATALOGS: dict[int, Mapping[str, ConfigKey]] = {
    ResourceType.TOPIC: TOPIC_CONFIGS,
    ResourceType.CLIENT_METRICS: CLIENT_METRICS_CONFIGS,
    ResourceType.GROUP: GROUP_CONFIGS,
}


class OpType(IntEnum):
    """Kafka's AlterConfigOp.OpType ids."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


_OPERATIONS = frozenset(op.value for op in OpType)
_DESCRIBE_CONFIGS, _ALTER_CONFIGS = AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS
#: Resources whose configs need the cluster's permission, as Kafka's.
_CLUSTER_RESOURCES = (ResourceType.BROKER, ResourceType.CLIENT_METRICS)


@handles(ApiKey.DESCRIBE_CONFIGS, 0, 4)
async def handle_describe_configs(
    request: DescribeConfigsRequest, context: RequestContext
) -> DescribeConfigsResponse:
    results = []
    for resource in request.resources:
        try:
            _authorize(context, resource.resource_type, resource.resource_name, _DESCRIBE_CONFIGS)
            configs = await _describe(resource, request, context)
            result = DescribeConfigsResult(error_code=ErrorCode.NONE, error_message=None, configs=configs)
        except Exception as error:  # one resource's failure is its own answer, as in Kafka
            code, message = resource_failure(
                error, context, named_resource(resource.resource_type, resource.resource_name)
            )
            result = DescribeConfigsResult(error_code=code, error_message=message, configs=[])
        result.resource_type = resource.resource_type
        result.resource_name = resource.resource_name
        results.append(result)
    return DescribeConfigsResponse(results=results)


@handles(ApiKey.ALTER_CONFIGS, 0, 2)
async def handle_alter_configs(
    request: legacy.AlterConfigsRequest, context: RequestContext
) -> legacy.AlterConfigsResponse:
    repeated = _repeated(request.resources)
    responses = []
    for resource in request.resources:
        try:
            _authorize(context, resource.resource_type, resource.resource_name, _ALTER_CONFIGS)
            if (resource.resource_type, resource.resource_name) in repeated:
                raise KafkaError(ErrorCode.INVALID_REQUEST, "Each resource must appear at most once.")
            _check_entries([(c.name, c.value, OpType.SET) for c in resource.configs])
            wanted = {c.name: c.value for c in resource.configs if c.value is not None}
            await alter_resource(
                resource.resource_type, resource.resource_name, partial(_replaced, wanted), request, context
            )
            code, message = ErrorCode.NONE, None
        except Exception as error:
            code, message = resource_failure(
                error, context, named_resource(resource.resource_type, resource.resource_name)
            )
        responses.append(
            legacy.AlterConfigsResourceResponse(
                error_code=code,
                error_message=message,
                resource_type=resource.resource_type,
                resource_name=resource.resource_name,
            )
        )
    return legacy.AlterConfigsResponse(responses=responses)


@handles(ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, 1)
async def handle_incremental_alter_configs(
    request: incremental.IncrementalAlterConfigsRequest, context: RequestContext
) -> incremental.IncrementalAlterConfigsResponse:
    repeated = _repeated(request.resources)
    responses = []
    for resource in request.resources:
        try:
            _authorize(context, resource.resource_type, resource.resource_name, _ALTER_CONFIGS)
            if (resource.resource_type, resource.resource_name) in repeated:
                raise KafkaError(ErrorCode.INVALID_REQUEST, "Each resource must appear at most once.")
            ops = [(c.name, c.value, c.config_operation) for c in resource.configs]
            _check_entries(ops)
            kind = resource.resource_type
            catalog = _CATALOGS.get(kind, BROKER_CONFIGS)
            await alter_resource(
                kind,
                resource.resource_name,
                partial(_apply, ops, catalog, kind),
                request,
                context,
            )
            code, message = ErrorCode.NONE, None
        except Exception as error:
            code, message = resource_failure(
                error, context, named_resource(resource.resource_type, resource.resource_name)
            )
        responses.append(
            incremental.AlterConfigsResourceResponse(
                error_code=code,
                error_message=message,
                resource_type=resource.resource_type,
                resource_name=resource.resource_name,
            )
        )
    return incremental.IncrementalAlterConfigsResponse(responses=responses)


def _authorize(context: RequestContext, resource_type: int, name: str, operation: AclOperation) -> None:
    if resource_type == ResourceType.TOPIC:
        if not authorize(context, operation, AclResourceType.TOPIC, name):
            raise KafkaError(
                ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.TOPIC_AUTHORIZATION_FAILED.message
            )
    elif resource_type == ResourceType.GROUP:
        if not authorize(context, operation, AclResourceType.GROUP, name):
            raise KafkaError(
                ErrorCode.GROUP_AUTHORIZATION_FAILED, ErrorCode.GROUP_AUTHORIZATION_FAILED.message
            )
    elif resource_type in _CLUSTER_RESOURCES and not authorize_cluster(context, operation):
        raise KafkaError(
            ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ErrorCode.CLUSTER_AUTHORIZATION_FAILED.message
        )


# ----- describe ----------------------------------------------------------------------------------


async def _describe(
    resource: DescribeConfigsResource, request: DescribeConfigsRequest, context: RequestContext
) -> list[DescribeConfigsResourceResult]:
    services = context.services
    version = context.api_version
    keys = resource.configuration_keys
    name = resource.resource_name
    if resource.resource_type == ResourceType.TOPIC:
        validate_topic_name(name)
        state = services.cluster.topic(name)
        if state is None:
            # Kafka sets no message here, which its message class sends as "" (the client prints it so)
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "")
        topic_config, overrides = await services.topics.described_configs(name)
        entries = config_entries.topic_entries(
            topic_config, overrides, services.config, services.dynamic_configs, keys
        )
    elif resource.resource_type == ResourceType.BROKER:
        if not name:
            entries = config_entries.cluster_default_entries(services.config, services.dynamic_configs, keys)
        elif parse_broker_id(name, "Broker id must be an integer, but it is: ") == services.node_id:
            entries = config_entries.broker_entries(services.config, services.dynamic_configs, keys)
        else:
            raise KafkaError(
                ErrorCode.INVALID_REQUEST,
                f"Unexpected broker id, expected {services.node_id} or empty string, but received {name}",
            )
    elif resource.resource_type == ResourceType.CLIENT_METRICS:
        if not name:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "Client metrics subscription name must not be empty")
        configs = services.client_metrics.subscription_configs(name)
        entries = config_entries.client_metrics_entries(configs, keys)
    elif resource.resource_type == ResourceType.GROUP:
        check_group_name(name)
        store = services.group_configs
        stored = store.configs(name) if store is not None else {}
        entries = config_entries.group_entries(stored, services.config, keys)
    else:
        raise KafkaError(
            ErrorCode.INVALID_REQUEST, f"Unsupported resource type: {type_name(resource.resource_type)}"
        )
    include_synonyms = version >= 1 and request.include_synonyms
    include_documentation = version >= 3 and request.include_documentation
    return [entry.to_result(version, include_synonyms, include_documentation) for entry in entries]


def _replaced(wanted: dict[str, str], current: dict[str, str]) -> dict[str, str]:
    """AlterConfigs: the request's configs are the resource's whole new set."""
    return dict(wanted)


def _apply(
    ops: Sequence[tuple[str, str | None, int]],
    catalog: Mapping[str, ConfigKey],
    kind: int,
    current: dict[str, str],
) -> dict[str, str]:
    """IncrementalAlterConfigs' operations on a resource's current dynamic configs. A list config with
    no value of its own starts from its default, as in Kafka."""
    configs = dict(current)
    for name, value, op in ops:
        if op == OpType.SET:
            assert value is not None
            configs[name] = value
        elif op == OpType.DELETE:
            _check_known(name, catalog, kind)
            configs.pop(name, None)
        else:
            key = catalog.get(name)
            if key is None or key.type is not ConfigType.LIST:
                verb = "append" if op == OpType.APPEND else "subtract"
                if kind == ResourceType.TOPIC:
                    raise KafkaError(
                        ErrorCode.INVALID_CONFIG,
                        f"Can't {OpType(op).name} to key {name} because its type is not LIST.",
                    )
                raise KafkaError(
                    ErrorCode.INVALID_CONFIG, f"Config value {verb} is not allowed for config key: {name}"
                )
            assert value is not None
            old = configs[name] if name in configs else key.to_string(key.default) or ""
            parts = [part for part in old.split(",") if part]
            for item in value.split(","):
                if op == OpType.APPEND and item not in parts:
                    parts.append(item)
                elif op == OpType.SUBTRACT and item in parts:
                    parts.remove(item)
            configs[name] = ",".join(parts)
    return configs


def _check_known(name: str, catalog: Mapping[str, ConfigKey], kind: int) -> None:
    """Deleting a name no catalog knows is an error, not a quiet success (it is surely a typo)."""
    if kind == ResourceType.TOPIC and name not in catalog:
        raise KafkaError(ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {name}")
    if kind == ResourceType.GROUP and name not in catalog:
        raise KafkaError(ErrorCode.INVALID_CONFIG, f"Unknown group config name: {name}")
    if kind == ResourceType.BROKER:
        base = listener_base(name) if name.startswith(LISTENER_PREFIX) else name
        if base not in BROKER_CONFIGS:
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Unknown broker config: {name}")


def _check_entries(entries: Sequence[tuple[str, str | None, int]]) -> None:
    """Kafka's broker-side checks before anything else: no config twice, values only where needed,
    known operations."""
    names = [name for name, _, _ in entries]
    if len(set(names)) != len(names):
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    nulls = [name for name, value, op in entries if value is None and op != OpType.DELETE]
    if nulls:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Null value not supported for : " + ", ".join(nulls))
    for _, _, op in entries:
        if op not in _OPERATIONS:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unknown operations type {op}")


def _repeated(
    resources: Sequence[legacy.AlterConfigsResource] | Sequence[incremental.AlterConfigsResource],
) -> set[tuple[int, str]]:
    seen: set[tuple[int, str]] = set()
    repeated: set[tuple[int, str]] = set()
    for resource in resources:
        key = (resource.resource_type, resource.resource_name)
        (repeated if key in seen else seen).add(key)
    return repeated
