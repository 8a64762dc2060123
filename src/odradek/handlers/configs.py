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

import re
from collections.abc import Callable, Mapping, Sequence
from enum import IntEnum
from functools import partial
from typing import Protocol

from odradek.cluster.dynamic_configs import apply_log_defaults
from odradek.cluster.topic_checks import validate_topic_name
from odradek.config.broker import BrokerConfig
from odradek.config.catalog import BROKER_CONFIGS, LISTENER_PREFIX, listener_base
from odradek.config.group_catalog import GROUP_CONFIGS, validate_group_configs
from odradek.config.topic import InvalidConfigValue
from odradek.config.topic_catalog import TOPIC_CONFIGS
from odradek.config.types import ConfigError, ConfigKey, ConfigType
from odradek.handlers._common import config_entries
from odradek.handlers._common.authorization import authorize, authorize_cluster
from odradek.handlers._common.context import RequestContext
from odradek.handlers._common.registry import handles
from odradek.handlers._common.services import Services
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
from odradek.telemetry.subscriptions import CLIENT_METRICS_CONFIGS, subscription


class ResourceType(IntEnum):
    """Kafka's ConfigResource.Type ids."""

    UNKNOWN = 0
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16
    GROUP = 32


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
_BROKER_ID = re.compile(r"[+-]?[0-9]+")
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
                error, context, _named(resource.resource_type, resource.resource_name)
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
            await _alter(
                resource.resource_type, resource.resource_name, partial(_replaced, wanted), request, context
            )
            code, message = ErrorCode.NONE, None
        except Exception as error:
            code, message = resource_failure(
                error, context, _named(resource.resource_type, resource.resource_name)
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
            await _alter(
                kind,
                resource.resource_name,
                partial(_apply, ops, catalog, kind),
                request,
                context,
            )
            code, message = ErrorCode.NONE, None
        except Exception as error:
            code, message = resource_failure(
                error, context, _named(resource.resource_type, resource.resource_name)
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


def _named(resource_type: int, resource_name: str) -> str:
    """A resource as the log names it, e.g. TOPIC 'orders'."""
    try:
        kind = ResourceType(resource_type).name
    except ValueError:
        kind = f"resource type {resource_type}"
    return f"{kind} {resource_name!r}"


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
        elif _broker_id(name, "Broker id must be an integer, but it is: ") == services.node_id:
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
        _check_group_name(name)
        store = services.group_configs
        stored = store.configs(name) if store is not None else {}
        entries = config_entries.group_entries(stored, services.config, keys)
    else:
        raise KafkaError(
            ErrorCode.INVALID_REQUEST, f"Unsupported resource type: {_type_name(resource.resource_type)}"
        )
    include_synonyms = version >= 1 and request.include_synonyms
    include_documentation = version >= 3 and request.include_documentation
    return [entry.to_result(version, include_synonyms, include_documentation) for entry in entries]


# ----- alter -------------------------------------------------------------------------------------


class _AlterRequest(Protocol):
    validate_only: bool


async def _alter(
    resource_type: int,
    name: str,
    change: Callable[[dict[str, str]], dict[str, str]],
    request: _AlterRequest,
    context: RequestContext,
) -> None:
    """Replace a resource's dynamic configs with `change(current)`, unless the request only validates."""
    services = context.services
    if resource_type == ResourceType.TOPIC:
        state = services.cluster.topic(name)
        change(dict(state.configs) if state is not None else {})  # its errors come first, as in Kafka
        if not name:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "Default topic resources are not allowed.")
        validate_topic_name(name)
        # Applied again to the configs as they are when the change's turn comes (see TopicAdmin).
        try:
            await services.topics.alter_configs(name, change, validate_only=request.validate_only)
        except InvalidConfigValue as error:  # ZkAdminManager's words for a ConfigException
            resource = f"ConfigResource(type=TOPIC, name='{name}')"
            message = f"Invalid config value for resource {resource}: {error.error_message}"
            raise KafkaError(ErrorCode.INVALID_CONFIG, message) from None
    elif resource_type == ResourceType.BROKER:
        if name:
            broker_id = _broker_id(name, "Node id must be an integer, but it is: ")
            if broker_id != services.node_id:
                raise KafkaError(
                    ErrorCode.INVALID_REQUEST,
                    f"Unexpected broker id, expected {services.node_id}, but received {name}",
                )
        dynamic = services.dynamic_configs
        if dynamic is None:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "This broker does not keep dynamic configs.")
        cluster_default = not name
        in_zookeeper = services.zk_broker_configs

        def checked(current: dict[str, str]) -> dict[str, str]:
            wanted = change(current)
            candidate = dynamic.validate(wanted, cluster_default=cluster_default)
            if in_zookeeper is not None:
                in_zookeeper.check_storable(wanted)
            if services.tls is not None:
                services.tls.check(candidate)  # a key store that cannot be loaded is refused, nothing written
            return wanted

        if in_zookeeper is not None:
            # read, changed and written in this broker's turn (another change may be under way)
            validate_only = request.validate_only
            await in_zookeeper.alter(checked, cluster_default=cluster_default, validate_only=validate_only)
            return
        checked(dynamic.layer(cluster_default=cluster_default))
        if not request.validate_only:
            # applied again to the layer as it is when the write's turn comes (another may be under way)
            tls = services.tls
            altered = await dynamic.alter(
                change, cluster_default=cluster_default, check=None if tls is None else tls.check
            )
            reconfigure(services, altered)
    elif resource_type == ResourceType.CLIENT_METRICS:
        store = services.client_metrics_configs
        if store is None:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "This broker does not keep client metrics configs.")
        await store.alter(
            name, partial(_valid_subscription, name, change), validate_only=request.validate_only
        )
    elif resource_type == ResourceType.GROUP:
        _check_group_name(name)
        group_store = services.group_configs
        if group_store is None:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "This broker does not keep group configs.")
        await group_store.alter(
            name, partial(_valid_group_configs, change, services.config), validate_only=request.validate_only
        )
    else:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unknown resource type {resource_type}")


#: The longest group id whose configs are kept: ZooKeeper's znode path (and a whole request to it)
#: must stay far under its packet limit, or the broker's session is lost.
_MAX_GROUP_NAME_BYTES = 32_767


def _check_group_name(name: str) -> None:
    if not name:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Group name must not be empty.")
    if len(name.encode()) > _MAX_GROUP_NAME_BYTES:
        raise KafkaError(
            ErrorCode.INVALID_REQUEST, f"Group name is longer than {_MAX_GROUP_NAME_BYTES} bytes."
        )


def _valid_group_configs(
    change: Callable[[dict[str, str]], dict[str, str]], broker: BrokerConfig, current: dict[str, str]
) -> dict[str, str]:
    """A GROUP change, refused (INVALID_CONFIG) as Kafka's GroupConfig.validate refuses it."""
    wanted = change(current)
    try:
        validate_group_configs(wanted, broker)
    except ConfigError as error:
        raise KafkaError(ErrorCode.INVALID_CONFIG, str(error)) from None
    return wanted


def _valid_subscription(
    name: str, change: Callable[[dict[str, str]], dict[str, str]], current: dict[str, str]
) -> dict[str, str]:
    """A CLIENT_METRICS change, refused (KafkaError) as Kafka's controller refuses it."""
    wanted = change(current)
    subscription(name, wanted)
    return wanted


def reconfigure(services: Services, config: BrokerConfig) -> None:
    """Make a new broker configuration the one every service reads."""
    services.config = config
    services.topics.broker_config = config
    if services.controller is not None:  # read by elections, whether this broker is controller now or later
        services.controller.set_unclean_leader_election_enable(config.unclean_leader_election_enable)
    apply_log_defaults(services.logs, config, services.cluster)
    services.logs.set_producer_id_expiration_ms(config.producer_id_expiration_ms)
    if services.transactions is not None:  # transaction.partition.verification.enable, on this broker
        services.transactions.config = config
    if services.tls is not None:
        services.tls.apply(config)


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


def _broker_id(name: str, complaint: str) -> int:
    """A broker id as Java's Integer.parseInt reads it (leading zeros and all; more than ten digits
    never fit, and Python's int() refuses over 4300 with an exception of its own)."""
    digits = name.lstrip("+-").lstrip("0") or "0"
    if not _BROKER_ID.fullmatch(name) or len(digits) > 10:
        raise KafkaError(ErrorCode.INVALID_REQUEST, complaint + name)
    number = -int(digits) if name.startswith("-") else int(digits)
    if not -(2**31) <= number < 2**31:
        raise KafkaError(ErrorCode.INVALID_REQUEST, complaint + name)
    return number


def _type_name(resource_type: int) -> str:
    try:
        return ResourceType(resource_type).name
    except ValueError:
        return ResourceType.UNKNOWN.name
