"""BrokerConfig: the broker's configuration, parsed, validated and resolved as Kafka resolves it.

Values come in layers, highest priority first: dynamic per-broker configs, dynamic cluster-wide
defaults (both set with AlterConfigs), static configs (``server.properties`` plus ``--override``),
and the catalog's defaults. ``config["log.retention.ms"]`` and ``config.log_retention_ms`` give the
*effective* value, folding in Kafka's fallbacks (``log.retention.ms`` before ``.minutes`` before
``.hours``, ``log.roll.ms`` before ``.hours``, ``log.dirs`` before ``log.dir``, ...);
``value_and_source`` gives a single config's own value and where it came from, for DescribeConfigs.

Unknown names are kept and logged (Kafka: "isn't a known config"); a bad value of a known config raises
ConfigError naming it, and so does a value odradek cannot honour yet: a refused config (``ConfigKey.refused``,
e.g. ``authorizer.class.name``) set to anything but its default. Listeners' TLS and SASL settings are
checked when the broker builds them (odradek.security.listener_security).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TypeAlias

from odradek.config.broker_checks import check_listener_scoped
from odradek.config.broker_settings import BrokerSettings
from odradek.config.catalog import BROKER_CONFIGS, BROKER_SYNONYMS, LISTENER_PREFIX
from odradek.config.hosts import is_loopback
from odradek.config.listeners import Endpoint, parse_endpoints, parse_protocol_map
from odradek.config.properties import load_with_overrides
from odradek.config.types import (
    ConfigEntry,
    ConfigError,
    ConfigSource,
    ConfigSynonym,
    ConfigValue,
    Password,
)

logger = logging.getLogger(__name__)

HOUR_MS = 3_600_000
MINUTE_MS = 60_000

# Layers in priority order; the catalog default comes last.
_LAYERS = (
    ConfigSource.DYNAMIC_BROKER_CONFIG,
    ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
    ConfigSource.STATIC_BROKER_CONFIG,
)


class BrokerConfig(BrokerSettings):
    """A broker's configuration. Build it with ``load`` (file + overrides) or from a mapping."""

    def __init__(
        self,
        static: Mapping[str, str],
        *,
        dynamic_default: Mapping[str, str] | None = None,
        dynamic_broker: Mapping[str, str] | None = None,
        warn_unknown: bool = True,
    ) -> None:
        self.originals: dict[str, str] = dict(static)
        self.unknown: dict[str, str] = {}
        self._layers: dict[ConfigSource, dict[str, ConfigValue]] = {
            ConfigSource.STATIC_BROKER_CONFIG: self._parse_layer(static, warn=warn_unknown),
            ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG: self._parse_layer(dynamic_default or {}),
            ConfigSource.DYNAMIC_BROKER_CONFIG: self._parse_layer(dynamic_broker or {}),
        }
        # listener.name.<listener>.<config> settings, lowest priority first (the dynamic ones are TLS
        # key and trust stores changed with AlterConfigs)
        self._listener_overrides: dict[str, str] = {
            name: value
            for layer in (static, dynamic_default or {}, dynamic_broker or {})
            for name, value in layer.items()
            if name.startswith(LISTENER_PREFIX)
        }
        _check_relations(self)

    @classmethod
    def load(cls, path: str | Path | None, overrides: Sequence[str] = ()) -> BrokerConfig:
        """The broker's static configuration: ``path`` (a server.properties, if any), then overrides."""
        return cls(load_with_overrides(path, overrides))

    def with_dynamic(
        self, dynamic_default: Mapping[str, str], dynamic_broker: Mapping[str, str]
    ) -> BrokerConfig:
        """A copy with these dynamic layers (replacing any this one has)."""
        return BrokerConfig(
            self.originals, dynamic_default=dynamic_default, dynamic_broker=dynamic_broker, warn_unknown=False
        )

    # -- reading values ---------------------------------------------------------------------------

    def __getitem__(self, name: str) -> ConfigValue:
        """The effective value of a broker config (KeyError for a name not in the catalog)."""
        if name not in BROKER_CONFIGS:
            raise KeyError(name)
        resolve = _DERIVED.get(name)
        return resolve(self) if resolve is not None else self.value_and_source(name)[0]

    def __contains__(self, name: object) -> bool:
        return name in BROKER_CONFIGS

    def value_and_source(self, name: str) -> tuple[ConfigValue, ConfigSource]:
        """This config's own value (no fallbacks) and the layer it came from."""
        for source in _LAYERS:
            layer = self._layers[source]
            if name in layer:
                return layer[name], source
        return BROKER_CONFIGS[name].default, ConfigSource.DEFAULT_CONFIG

    def layered_values(self, name: str) -> list[tuple[ConfigValue, ConfigSource]]:
        """Every value this config has, highest priority first (the default only if it is not null)."""
        found = [(self._layers[source][name], source) for source in _LAYERS if name in self._layers[source]]
        key = BROKER_CONFIGS[name]
        default = key.default
        if default is not None and not key.dynamic_only and not key.authorizer_config:
            found.append((default, ConfigSource.DEFAULT_CONFIG))
        return found

    def is_set(self, name: str) -> bool:
        """Whether any layer gives this config a value (as opposed to falling back to its default)."""
        return any(name in self._layers[source] for source in _LAYERS)

    def listener_overrides(self) -> dict[str, str]:
        """``listener.name.<listener>.<config>`` settings, as given (a dynamic one over a static one)."""
        return dict(self._listener_overrides)

    # -- DescribeConfigs --------------------------------------------------------------------------

    def synonyms(self, name: str) -> tuple[ConfigSynonym, ...]:
        found: list[ConfigSynonym] = []
        for synonym in BROKER_SYNONYMS.get(name, (name,)):
            key = BROKER_CONFIGS[synonym]
            found.extend(
                ConfigSynonym(synonym, value, source, key) for value, source in self.layered_values(synonym)
            )
        return tuple(found)

    def entry(self, name: str) -> ConfigEntry:
        key = BROKER_CONFIGS[name]
        value, source = self.value_and_source(name)
        return ConfigEntry(name, value, source, key, key.read_only, self.synonyms(name))

    def entries(self) -> list[ConfigEntry]:
        """Every broker config, in name order."""
        return [self.entry(name) for name in sorted(BROKER_CONFIGS)]

    # -- listeners ----------------------------------------------------------------------------------

    @property
    def protocol_map(self) -> dict[str, str]:
        return parse_protocol_map(self.listener_security_protocol_map)

    def listener_endpoints(self) -> list[Endpoint]:
        return parse_endpoints(self.listeners, self.protocol_map)

    def advertised_endpoints(self) -> list[Endpoint]:
        """What clients are told; an advertised empty host means this machine's name, chosen by the server."""
        return parse_endpoints(self.advertised_listeners, self.protocol_map)

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={self._shown(name)}" for name in sorted(self.originals))
        return f"BrokerConfig({shown})"

    def _shown(self, name: str) -> object:
        """A catalog config's value (a Password shows as [hidden]); any other name's value may be a
        secret (a listener-scoped JAAS line, a misspelt password config), so it is hidden."""
        if name in BROKER_CONFIGS:
            return self.value_and_source(name)[0]
        return Password.HIDDEN

    # -- helpers ------------------------------------------------------------------------------------

    def _parse_layer(self, settings: Mapping[str, str], warn: bool = False) -> dict[str, ConfigValue]:
        parsed: dict[str, ConfigValue] = {}
        for name, raw in settings.items():
            key = BROKER_CONFIGS.get(name)
            if key is not None:
                parsed[name] = key.parse(raw)
                key.check_supported(parsed[name])
            elif name.startswith(LISTENER_PREFIX):
                check_listener_scoped(name, raw)
            else:
                self.unknown[name] = raw
                if warn:
                    logger.warning("The configuration '%s' was supplied but isn't a known config.", name)
        return parsed


def _hours_minutes_ms(ms: str, minutes: str | None, hours: str) -> _Resolver:
    def resolve(config: BrokerConfig) -> int:
        if config.is_set(ms):
            value = _int(config.value_and_source(ms)[0])
        elif minutes is not None and config.is_set(minutes):
            value = _int(config.value_and_source(minutes)[0]) * MINUTE_MS
        else:
            value = _int(config.value_and_source(hours)[0]) * HOUR_MS
        # Kafka treats any negative retention as "keep forever" and reports it as -1.
        return -1 if value < 0 and ms == "log.retention.ms" else value

    return resolve


def _first_set(name: str, fallback: str) -> _Resolver:
    def resolve(config: BrokerConfig) -> ConfigValue:
        value = config.value_and_source(name)[0]
        return value if value is not None else config[fallback]

    return resolve


def _node_id(config: BrokerConfig) -> ConfigValue:
    return _ids(config)[0]


def _alter_log_dirs_threads(config: BrokerConfig) -> ConfigValue:
    threads = config.value_and_source("num.replica.alter.log.dirs.threads")[0]
    return threads if threads is not None else len(config.log_dirs)


def _ids(config: BrokerConfig) -> tuple[int, int]:
    """(effective id, other) from broker.id and node.id: one set gives both, both set must agree."""
    broker_id = _int(config.value_and_source("broker.id")[0])
    node_id = _int(config.value_and_source("node.id")[0])
    if broker_id >= 0 and node_id >= 0 and broker_id != node_id:
        raise ConfigError(
            f"The values for broker.id ({broker_id}) and node.id ({node_id}) must be the same if both "
            "are set",
            "node.id",
        )
    effective = node_id if node_id >= 0 else broker_id
    return effective, effective


_DERIVED: dict[str, _Resolver] = {
    "log.retention.ms": _hours_minutes_ms("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
    "log.roll.ms": _hours_minutes_ms("log.roll.ms", None, "log.roll.hours"),
    "log.roll.jitter.ms": _hours_minutes_ms("log.roll.jitter.ms", None, "log.roll.jitter.hours"),
    "log.flush.interval.ms": _first_set("log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
    "log.dirs": _first_set("log.dirs", "log.dir"),
    "advertised.listeners": _first_set("advertised.listeners", "listeners"),
    "zookeeper.connection.timeout.ms": _first_set(
        "zookeeper.connection.timeout.ms", "zookeeper.session.timeout.ms"
    ),
    "node.id": _node_id,
    "broker.id": _node_id,
    "num.replica.alter.log.dirs.threads": _alter_log_dirs_threads,
}


def _check_relations(config: BrokerConfig) -> None:
    """Rules between configs that Kafka enforces at start-up; each failure names the config to fix."""
    _ids(config)
    if not config.log_dirs:
        raise ConfigError("At least one log directory must be defined via log.dirs or log.dir", "log.dirs")
    for name, endpoints in (
        ("listeners", config.listener_endpoints),
        ("advertised.listeners", config.advertised_endpoints),
    ):
        try:
            parsed = endpoints()
        except ValueError as error:
            raise ConfigError(f"Invalid value for configuration {name}: {error}", name) from None
        if name == "listeners" and not parsed:
            raise ConfigError("listeners must name at least one listener to serve", name)
        if name == "advertised.listeners" and any(endpoint.host == "0.0.0.0" for endpoint in parsed):
            raise ConfigError(
                "advertised.listeners cannot use the nonroutable meta-address 0.0.0.0; "
                "use a routable address",
                name,
            )
    _check_inter_broker_listener(config)
    _check_early_start_listeners(config)
    _check_reserved_broker_ids(config)
    _check_console_exposure(config)
    _require_order(config, "group.consumer.min.session.timeout.ms", "group.consumer.session.timeout.ms")
    _require_order(config, "group.consumer.session.timeout.ms", "group.consumer.max.session.timeout.ms")
    _require_order(config, "group.consumer.min.heartbeat.interval.ms", "group.consumer.heartbeat.interval.ms")
    _require_order(config, "group.consumer.heartbeat.interval.ms", "group.consumer.max.heartbeat.interval.ms")
    _require_order(
        config, "group.consumer.heartbeat.interval.ms", "group.consumer.session.timeout.ms", strict=True
    )
    # as Kafka's GroupCoordinatorConfig and ShareGroupConfig (a heartbeat past the session times every
    # member out; the bounds bound share groups' GROUP configs)
    for setting in (
        "session.timeout.ms",
        "heartbeat.interval.ms",
        "record.lock.duration.ms",
        "delivery.count.limit",
        "partition.max.record.locks",
    ):
        _require_order(config, f"group.share.min.{setting}", f"group.share.{setting}")
        _require_order(config, f"group.share.{setting}", f"group.share.max.{setting}")
    _require_order(config, "group.share.heartbeat.interval.ms", "group.share.session.timeout.ms", strict=True)
    _require_order(config, "replica.fetch.wait.max.ms", "replica.socket.timeout.ms")
    _require_order(config, "replica.fetch.wait.max.ms", "replica.lag.time.max.ms", strict=True)
    queued = _int(config["queued.max.request.bytes"])
    if 0 < queued < _int(config["socket.request.max.bytes"]):
        raise ConfigError(
            f"queued.max.request.bytes ({queued}) must be larger or equal to socket.request.max.bytes "
            f"({config['socket.request.max.bytes']})",
            "queued.max.request.bytes",
        )
    threads = _int(config["log.cleaner.threads"])
    if threads > 0 and _int(config["log.cleaner.dedupe.buffer.size"]) // threads < 1024 * 1024:
        raise ConfigError(
            "log.cleaner.dedupe.buffer.size must be at least 1MiB per cleaner thread",
            "log.cleaner.dedupe.buffer.size",
        )


def _check_console_exposure(config: BrokerConfig) -> None:
    """The console shows every message and can delete topics: beyond loopback, never without users."""
    host = str(config["console.host"])
    if (
        config["console.port"] is not None
        and not is_loopback(host)
        and config["console.basic.auth.file"] is None
    ):
        raise ConfigError(
            f"console.host {host} serves the console beyond this machine: set console.basic.auth.file "
            "(every request then needs a listed user and password), or serve 127.0.0.1",
            "console.basic.auth.file",
        )


def _check_reserved_broker_ids(config: BrokerConfig) -> None:
    """As a Kafka ZooKeeper-mode broker: with id generation on, configured ids stay at or below
    reserved.broker.max.id (the ids above it are the generated ones)."""
    if not config.zookeeper_connect or not config.broker_id_generation_enable:
        return
    broker_id = _ids(config)[0]
    if broker_id > _int(config["reserved.broker.max.id"]):
        raise ConfigError(
            f"broker.id ({broker_id}) must be greater than or equal to -1 and not greater than "
            f"reserved.broker.max.id ({config['reserved.broker.max.id']})",
            "broker.id",
        )


def _check_inter_broker_listener(config: BrokerConfig) -> None:
    name = config.inter_broker_listener_name
    if name is None:
        return
    if config.is_set("security.inter.broker.protocol"):
        raise ConfigError(
            "Only one of inter.broker.listener.name and security.inter.broker.protocol should be set",
            "inter.broker.listener.name",
        )
    if str(name).upper() not in {endpoint.listener_name for endpoint in config.advertised_endpoints()}:
        raise ConfigError(
            "inter.broker.listener.name must be a listener name defined in advertised.listeners",
            "inter.broker.listener.name",
        )


def _check_early_start_listeners(config: BrokerConfig) -> None:
    """As Kafka's KafkaConfig.earlyStartListeners: every name given is one of the listeners."""
    names = config.early_start_listeners
    if names is None:
        return
    listeners = {endpoint.listener_name for endpoint in config.listener_endpoints()}
    for name in (part.strip() for part in names.split(",")):
        if name and name.upper() not in listeners:
            raise ConfigError(
                f"early.start.listeners contains listener {name}, but this is not contained in listeners",
                "early.start.listeners",
            )


def _require_order(config: BrokerConfig, smaller: str, larger: str, strict: bool = False) -> None:
    low, high = _int(config[smaller]), _int(config[larger])
    if low > high or (strict and low == high):
        relation = "less than" if strict else "less than or equal to"
        raise ConfigError(f"{smaller} ({low}) must be {relation} {larger} ({high})", smaller)


def _int(value: ConfigValue) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"expected an int, got {value!r}")
    return value


_Resolver: TypeAlias = Callable[[BrokerConfig], ConfigValue]
