"""A config resource's change, as AlterConfigs and IncrementalAlterConfigs make it: checked as Kafka's
broker checks it, then written to where the resource's configs are kept (the topic admin, the dynamic
broker configs' store, the client-metrics and group config stores). A broker layer's store applies the
configuration it makes through ``reconfigure``, which `server/wiring.py` registers with the layers: a
single node's file at once, ZooKeeper's when its change notification is read."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Protocol

from odradek.cluster.dynamic_configs import apply_log_defaults
from odradek.cluster.topic_checks import validate_topic_name
from odradek.config.broker import BrokerConfig
from odradek.config.group_catalog import validate_group_configs
from odradek.config.topic import InvalidConfigValue
from odradek.config.types import ConfigError
from odradek.handlers._common.config_resources import ResourceType, check_group_name, parse_broker_id
from odradek.handlers._common.context import RequestContext
from odradek.handlers._common.services import Services
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.telemetry.subscriptions import subscription


class _AlterRequest(Protocol):
    """What AlterConfigs and IncrementalAlterConfigs both carry that the change reads."""

    validate_only: bool


async def alter_resource(
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
            broker_id = parse_broker_id(name, "Node id must be an integer, but it is: ")
            if broker_id != services.node_id:
                raise KafkaError(
                    ErrorCode.INVALID_REQUEST,
                    f"Unexpected broker id, expected {services.node_id}, but received {name}",
                )
        dynamic, broker_store = services.dynamic_configs, services.broker_configs
        if dynamic is None or broker_store is None:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "This broker does not keep dynamic configs.")
        cluster_default = not name

        def checked(current: dict[str, str]) -> dict[str, str]:
            wanted = change(current)
            candidate = dynamic.validate(wanted, cluster_default=cluster_default)
            broker_store.check_storable(wanted)
            if services.tls is not None:
                services.tls.check(candidate)  # a key store that cannot be loaded is refused, nothing written
            return wanted

        # read, changed and written in this broker's turn (another change may be under way)
        validate_only = request.validate_only
        await broker_store.alter(checked, cluster_default=cluster_default, validate_only=validate_only)
    elif resource_type == ResourceType.CLIENT_METRICS:
        store = services.client_metrics_configs
        if store is None:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "This broker does not keep client metrics configs.")
        await store.alter(
            name, partial(_valid_subscription, name, change), validate_only=request.validate_only
        )
    elif resource_type == ResourceType.GROUP:
        check_group_name(name)
        group_store = services.group_configs
        if group_store is None:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "This broker does not keep group configs.")
        await group_store.alter(
            name, partial(_valid_group_configs, change, services.config), validate_only=request.validate_only
        )
    else:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unknown resource type {resource_type}")


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
    """Make a new broker configuration the one every service reads (registered with the dynamic layers,
    whose store applies each change)."""
    services.config = config
    services.topics.broker_config = config
    # read by elections, whether this broker is controller now or later
    services.controller.set_unclean_leader_election_enable(config.unclean_leader_election_enable)
    apply_log_defaults(services.logs, config, services.cluster)
    services.logs.set_producer_id_expiration_ms(config.producer_id_expiration_ms)
    if services.transactions is not None:  # transaction.partition.verification.enable, on this broker
        services.transactions.config = config
    if services.tls is not None:
        services.tls.apply(config)
