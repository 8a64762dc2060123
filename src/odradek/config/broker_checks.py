"""Checks of broker config names and values apart from a whole configuration: an AlterConfigs change to
a broker or to the cluster-wide default (as Kafka's DynamicBrokerConfig checks it), and a
listener-scoped setting (``listener.name.<listener>.<config>``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from odradek.config.catalog import BROKER_CONFIGS, LISTENER_PREFIX, listener_base
from odradek.config.catalog_network import BROKER_WIDE_NETWORK_CONFIGS
from odradek.config.types import (
    ConfigError,
    ConfigValue,
    DynamicUpdateMode,
)
from odradek.protocol.error_codes import ErrorCode, KafkaError


def refuse_unsupported_broker_configs(configs: Mapping[str, str]) -> None:
    """Raise KafkaError(INVALID_CONFIG) naming the first config of an AlterConfigs change to a broker
    that odradek cannot take: a name no catalog knows, or a refused config set to anything but its
    default (also when listener-scoped). Bad values of known configs are left to the full validation."""
    for name, raw in sorted(configs.items()):
        base = listener_base(name) if name.startswith(LISTENER_PREFIX) else name
        key = BROKER_CONFIGS.get(base)
        if key is None:
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Unknown broker config: {name}")
        try:
            value = key.parse(raw)
        except ConfigError:
            continue
        try:
            key.check_supported(value)
        except ConfigError as error:
            raise KafkaError(ErrorCode.INVALID_CONFIG, str(error).replace(key.name, name, 1)) from None
        if base != name and key.read_only:
            # listener-scoped settings of read-only configs (TLS, SASL) are read at start-up only
            raise KafkaError(
                ErrorCode.INVALID_CONFIG, f"Cannot update these configs dynamically: {scala_set([name])}"
            )


def scala_set(names: Sequence[str]) -> str:
    """Config names as Kafka's DynamicBrokerConfig lists them in its refusals: a Scala Set's text."""
    return f"Set({', '.join(names)})"


def validate_dynamic_broker_configs(
    configs: Mapping[str, str | None], *, cluster_default: bool
) -> dict[str, ConfigValue]:
    """Check an AlterConfigs change to a broker (or, with ``cluster_default``, to the cluster-wide
    default) as Kafka does; raises KafkaError(INVALID_CONFIG). None values are deletions."""
    unknown = sorted(name for name in configs if name not in BROKER_CONFIGS)
    if unknown:
        raise KafkaError(ErrorCode.INVALID_CONFIG, f"Unknown broker configs: {', '.join(unknown)}")
    fixed = sorted(name for name in configs if BROKER_CONFIGS[name].read_only)
    if fixed:
        raise KafkaError(
            ErrorCode.INVALID_CONFIG, f"Cannot update these configs dynamically: {scala_set(fixed)}"
        )
    if cluster_default:
        per_broker = sorted(
            name for name in configs if BROKER_CONFIGS[name].dynamic is DynamicUpdateMode.PER_BROKER
        )
        if per_broker:
            raise KafkaError(
                ErrorCode.INVALID_CONFIG,
                "Cannot update these configs at default cluster level, broker id must be specified: "
                + scala_set(per_broker),
            )
    parsed: dict[str, ConfigValue] = {}
    for name, raw in configs.items():
        try:
            parsed[name] = None if raw is None else BROKER_CONFIGS[name].parse(raw)
        except ConfigError as error:
            raise KafkaError(ErrorCode.INVALID_CONFIG, str(error)) from None
    return parsed


def check_listener_scoped(name: str, raw: str) -> None:
    """A listener-scoped setting of a refused config (listener.name.ssl.ssl.keystore.location) is
    refused as the config itself is, and so is one of a config Kafka never reads per listener."""
    base = listener_base(name)
    if base in BROKER_WIDE_NETWORK_CONFIGS:
        raise ConfigError(
            f"{name}: {base} is set for the whole broker only (as in Kafka), not per listener", name
        )
    key = BROKER_CONFIGS.get(base)
    if key is not None and key.refused:
        try:
            key.check_supported(key.parse(raw))
        except ConfigError as error:
            raise ConfigError(str(error).replace(key.name, name, 1), name) from None
