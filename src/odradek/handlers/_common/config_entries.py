"""How configs are reported: DescribeConfigs entries (value, source, synonyms, flags, type, documentation)
and the configs CreateTopics v5+ returns for a new topic. Not a handler: configs.py and topics.py use it.

Kafka computes these two differently, and so does this module:
- DescribeConfigs (Kafka's ConfigHelper): the synonyms of a config are every layer's value of every
  broker config standing in for it, layer by layer (dynamic broker, dynamic cluster default, static,
  default) and, within a layer, in synonym order; everything before the first synonym with the config's
  own name (for a topic config: its main broker synonym) is dropped. The source is the first synonym's.
  So `retention.ms` with only `log.retention.hours` set reports DEFAULT_CONFIG and no synonyms, as
  Kafka's does.
- CreateTopics (Kafka's controller, KafkaConfigSchema): the topic's own override, else the first layer
  (dynamic broker, dynamic default, static) in which any synonym is set, its value converted to the
  topic's unit, else the topic config's default.
Sensitive configs (passwords, and configs of unknown type) are reported with a null value.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from odradek.cluster.dynamic_configs import DynamicBrokerConfigs
from odradek.config.broker import BrokerConfig
from odradek.config.catalog import BROKER_CONFIGS, BROKER_SYNONYMS, LISTENER_PREFIX, listener_base
from odradek.config.group_catalog import GROUP_CONFIGS, broker_group_defaults
from odradek.config.topic import TopicConfig
from odradek.config.topic_catalog import TOPIC_CONFIGS, TOPIC_SYNONYMS
from odradek.config.types import ConfigKey, ConfigSource, ConfigValue
from odradek.protocol.messages.create_topics import CreatableTopicConfigs
from odradek.protocol.messages.describe_configs import DescribeConfigsResourceResult, DescribeConfigsSynonym
from odradek.telemetry.subscriptions import CLIENT_METRICS_CONFIGS, CONFIG_DEFAULTS

_LAYERS = (
    ConfigSource.DYNAMIC_BROKER_CONFIG,
    ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
    ConfigSource.STATIC_BROKER_CONFIG,
    ConfigSource.DEFAULT_CONFIG,
)
_UNKNOWN_TYPE = 0


@dataclass(frozen=True, slots=True)
class Synonym:
    name: str
    value: str | None
    source: ConfigSource


@dataclass(slots=True)
class Described:
    """One config as DescribeConfigs reports it, before it is put in a response struct."""

    name: str
    value: str | None
    source: ConfigSource
    read_only: bool
    sensitive: bool
    config_type: int
    documentation: str | None
    synonyms: list[Synonym] = field(default_factory=list)

    def to_result(
        self, api_version: int, include_synonyms: bool, include_documentation: bool
    ) -> DescribeConfigsResourceResult:
        return DescribeConfigsResourceResult(
            name=self.name,
            value=self.value,
            read_only=self.read_only,
            # v0 has no source: Kafka 1.0 reported whether the value is the default.
            is_default=self.source is ConfigSource.DEFAULT_CONFIG,
            config_source=int(self.source),
            is_sensitive=self.sensitive,
            synonyms=[
                DescribeConfigsSynonym(name=s.name, value=s.value, source=int(s.source))
                for s in self.synonyms
            ]
            if include_synonyms and api_version >= 1
            else [],
            config_type=self.config_type,
            documentation=self.documentation if include_documentation else None,
        )


# ----- DescribeConfigs: broker, cluster default, topic -----------------------------------------------


def broker_entries(
    config: BrokerConfig, dynamic: DynamicBrokerConfigs | None, keys: Collection[str] | None
) -> list[Described]:
    """Every config of this broker (BROKER resource named by its id): the catalog, the listener-scoped
    settings and any custom (unknown) names it was given, as Kafka lists a broker's originals."""
    listed = {
        name
        for name, key in BROKER_CONFIGS.items()
        if not (key.dynamic_only or key.authorizer_config) or config.is_set(name)
    }
    names = listed | set(config.listener_overrides()) | set(config.unknown)
    if dynamic is not None:
        names |= set(dynamic.per_broker) | set(dynamic.cluster_default)
    return [_broker_entry(config, dynamic, name) for name in sorted(_wanted(names, keys))]


def cluster_default_entries(
    config: BrokerConfig, dynamic: DynamicBrokerConfigs | None, keys: Collection[str] | None
) -> list[Described]:
    """The cluster-wide dynamic defaults that are set (BROKER resource with an empty name)."""
    layer = dynamic.layer(cluster_default=True) if dynamic is not None else {}
    entries = []
    for name in sorted(_wanted(layer, keys)):
        key = BROKER_CONFIGS.get(name)
        sensitive = key is None or key.sensitive
        synonyms = [
            s
            for s in _broker_synonyms(config, dynamic, name, sensitive)
            if s.source is ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
        ]
        entries.append(
            Described(
                name=name,
                value=None if sensitive else layer[name],
                source=synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG,
                read_only=key is None or key.read_only,
                sensitive=sensitive,
                config_type=int(key.type) if key is not None else _UNKNOWN_TYPE,
                documentation=key.documentation if key is not None else None,
                synonyms=synonyms,
            )
        )
    return entries


def topic_entries(
    topic_config: TopicConfig,
    overrides: Mapping[str, str],
    config: BrokerConfig,
    dynamic: DynamicBrokerConfigs | None,
    keys: Collection[str] | None,
) -> list[Described]:
    """Every config of a topic with these overrides."""
    entries = []
    for name in sorted(_wanted(TOPIC_CONFIGS, keys)):
        key = TOPIC_CONFIGS[name]
        value = None if key.sensitive else key.to_string(topic_config[name])
        synonyms: list[Synonym] = []
        if name in overrides:
            synonyms.append(Synonym(name, value, ConfigSource.DYNAMIC_TOPIC_CONFIG))
        chain = TOPIC_SYNONYMS.get(name)
        if chain:
            synonyms.extend(_broker_synonyms(config, dynamic, chain[0].name, key.sensitive))
        entries.append(
            Described(
                name=name,
                value=value,
                source=synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG,
                read_only=False,
                sensitive=key.sensitive,
                config_type=int(key.type),
                documentation=key.documentation,
                synonyms=synonyms,
            )
        )
    return entries


# ----- CreateTopics v5+ ------------------------------------------------------------------------------


def created_topic_configs(overrides: Mapping[str, str], config: BrokerConfig) -> list[CreatableTopicConfigs]:
    """The configs a new topic with these overrides has, as Kafka's controller reports them."""
    results = []
    for name in sorted(TOPIC_CONFIGS):
        key = TOPIC_CONFIGS[name]
        value, source = _effective_topic_value(key, overrides, config)
        results.append(
            CreatableTopicConfigs(
                name=name,
                value=None if key.sensitive else value,
                read_only=False,
                config_source=int(source),
                is_sensitive=key.sensitive,
            )
        )
    return results


def _effective_topic_value(
    key: ConfigKey, overrides: Mapping[str, str], config: BrokerConfig
) -> tuple[str | None, ConfigSource]:
    if key.name in overrides:
        return key.to_string(key.parse(overrides[key.name])), ConfigSource.DYNAMIC_TOPIC_CONFIG
    chain = TOPIC_SYNONYMS.get(key.name, ())
    for layer in _LAYERS[:-1]:
        for synonym in chain:
            for value, source in config.layered_values(synonym.name):
                if source is layer and value is not None:
                    return key.to_string(_scaled(value, synonym.scale)), layer
    return key.to_string(key.default), ConfigSource.DEFAULT_CONFIG


# ----- helpers ---------------------------------------------------------------------------------------


def _broker_entry(config: BrokerConfig, dynamic: DynamicBrokerConfigs | None, name: str) -> Described:
    key = _broker_key(name)
    custom = key is None or key.authorizer_config  # described as Kafka describes names it does not define
    sensitive = key is None or key.sensitive
    if name in BROKER_CONFIGS:
        raw: str | None = BROKER_CONFIGS[name].to_string(config.value_and_source(name)[0])
    else:
        layers = _custom_layers(config, dynamic, name)
        raw = layers[0][1] if layers else None
    synonyms = _broker_synonyms(config, dynamic, name, sensitive)
    return Described(
        name=name,
        value=None if sensitive else raw,
        source=synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG,
        read_only=name not in BROKER_CONFIGS or BROKER_CONFIGS[name].read_only,
        sensitive=sensitive,
        config_type=_UNKNOWN_TYPE if key is None or custom else int(key.type),
        documentation=None if key is None or custom else key.documentation,
        synonyms=synonyms,
    )


def _broker_synonyms(
    config: BrokerConfig, dynamic: DynamicBrokerConfigs | None, name: str, sensitive: bool
) -> list[Synonym]:
    """Kafka's ConfigHelper.configSynonyms: layer by layer, synonym order within a layer, then drop
    everything before the first entry named `name`."""
    if name in BROKER_CONFIGS:
        chain: tuple[str, ...] = BROKER_SYNONYMS.get(name, (name,))
    elif name.startswith(LISTENER_PREFIX):
        base = listener_base(name)
        chain = (name, base) if base in BROKER_CONFIGS else (name,)
    else:
        chain = (name,)
    values: dict[tuple[str, ConfigSource], str | None] = {}
    for synonym in chain:
        if synonym in BROKER_CONFIGS:
            key = BROKER_CONFIGS[synonym]
            for value, source in config.layered_values(synonym):
                values[(synonym, source)] = key.to_string(value)
        else:
            for source, raw in _custom_layers(config, dynamic, synonym):
                values[(synonym, source)] = raw
    found = [
        Synonym(synonym, None if sensitive else values[(synonym, layer)], layer)
        for layer in _LAYERS
        for synonym in chain
        if (synonym, layer) in values
    ]
    while found and found[0].name != name:
        found.pop(0)
    return found


def _custom_layers(
    config: BrokerConfig, dynamic: DynamicBrokerConfigs | None, name: str
) -> list[tuple[ConfigSource, str]]:
    """Where a name outside the catalog (custom, or listener-scoped) is set, highest layer first."""
    found = []
    if dynamic is not None:
        if name in dynamic.per_broker:
            found.append((ConfigSource.DYNAMIC_BROKER_CONFIG, dynamic.per_broker[name]))
        if name in dynamic.cluster_default:
            found.append((ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, dynamic.cluster_default[name]))
    if name in config.originals:
        found.append((ConfigSource.STATIC_BROKER_CONFIG, config.originals[name]))
    return found


def _broker_key(name: str) -> ConfigKey | None:
    """The catalog entry giving a broker config's type (a listener-scoped one: its base config's)."""
    if name in BROKER_CONFIGS:
        return BROKER_CONFIGS[name]
    if name.startswith(LISTENER_PREFIX):
        return BROKER_CONFIGS.get(listener_base(name))
    return None


def _wanted(names: Collection[str], keys: Collection[str] | None) -> list[str]:
    """Kafka: a null or empty key list means every config; otherwise only those named."""
    if not keys:
        return list(names)
    return [name for name in names if name in keys]


def _scaled(value: ConfigValue, scale: int) -> ConfigValue:
    if scale == 1 or isinstance(value, bool) or not isinstance(value, int):
        return value
    return -1 if value < 0 else value * scale


def client_metrics_entries(configs: Mapping[str, str], keys: Collection[str] | None) -> list[Described]:
    """A CLIENT_METRICS resource's configs as Kafka 4.4 describes them: each of the three, set
    (CLIENT_METRICS_CONFIG, with itself as its one synonym) or at its default (DEFAULT_CONFIG)."""
    described = []
    for name, key in CLIENT_METRICS_CONFIGS.items():
        if keys and name not in keys:
            continue
        if name in configs:
            value, source = configs[name], ConfigSource.CLIENT_METRICS_CONFIG
            synonyms = [Synonym(name, value, source)]
        else:
            value, source, synonyms = CONFIG_DEFAULTS[name], ConfigSource.DEFAULT_CONFIG, []
        described.append(
            Described(name, value, source, False, False, int(key.type), key.documentation, synonyms)
        )
    return described


def group_entries(
    configs: Mapping[str, str], broker: BrokerConfig, keys: Collection[str] | None
) -> list[Described]:
    """A GROUP resource's configs as Kafka 4.4 describes them: each set one as GROUP_CONFIG, the others
    at the broker's value for groups (DEFAULT_CONFIG); the synonyms are the group's own value, if set,
    then the broker's, named by its broker config (`group.share.heartbeat.interval.ms`) where there is
    one."""
    defaults = broker_group_defaults(broker)
    described = []
    for name, key in GROUP_CONFIGS.items():
        if keys and name not in keys:
            continue
        broker_name = f"group.{name}" if f"group.{name}" in BROKER_CONFIGS else name
        synonyms = [Synonym(broker_name, defaults[name], ConfigSource.DEFAULT_CONFIG)]
        if name in configs:
            value, source = configs[name], ConfigSource.GROUP_CONFIG
            synonyms.insert(0, Synonym(name, value, source))
        else:
            value, source = defaults[name], ConfigSource.DEFAULT_CONFIG
        described.append(
            Described(name, value, source, False, False, int(key.type), key.documentation, synonyms)
        )
    return described
