"""Topic configs: validating overrides (CreateTopics, AlterConfigs) and resolving a topic's full config.

A topic's value for a config is its own override if it has one (DYNAMIC_TOPIC_CONFIG); otherwise the
first broker synonym that has a value, in the synonym's layer (dynamic broker, dynamic default, static,
or the broker default), converted to the topic's unit; otherwise the topic config's own default.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from odradek.config.broker import BrokerConfig
from odradek.config.catalog import BROKER_CONFIGS
from odradek.config.settings import Setting
from odradek.config.topic_catalog import TOPIC_CONFIGS, TOPIC_SYNONYMS, BrokerSynonym
from odradek.config.types import (
    ConfigEntry,
    ConfigError,
    ConfigSource,
    ConfigSynonym,
    ConfigValue,
    parse_value,
)
from odradek.protocol.error_codes import ErrorCode, KafkaError


def validate_topic_configs(configs: Mapping[str, str | None], broker: BrokerConfig | None = None) -> None:
    """Raise KafkaError(INVALID_CONFIG) with Kafka's message if any override is unknown or invalid."""
    parse_topic_configs(configs, broker)


class InvalidConfigValue(KafkaError):
    """A topic config value that does not parse or is out of range (Kafka's ConfigException, which its
    alters, unlike CreateTopics, answer naming the resource)."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.INVALID_CONFIG, message)


def parse_topic_configs(
    configs: Mapping[str, str | None], broker: BrokerConfig | None = None
) -> dict[str, ConfigValue]:
    """The typed values of a topic's overrides, validated as CreateTopics/AlterConfigs validate them.

    With ``broker``, rules between configs are checked against the values the topic would really
    have (e.g. min.compaction.lag.ms against the broker's default max.compaction.lag.ms). A refused
    config (``ConfigKey.refused``) set to anything but its default is INVALID_CONFIG naming it.
    """
    missing = [name for name, raw in configs.items() if raw is None]
    if missing:
        raise KafkaError(
            ErrorCode.INVALID_CONFIG, f"Null value not supported for topic configs: {','.join(missing)}"
        )
    parsed: dict[str, ConfigValue] = {}
    for name, raw in configs.items():
        key = TOPIC_CONFIGS.get(name)
        if key is None:
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {name}")
        assert raw is not None
        try:
            parsed[name] = key.parse(raw)
        except ConfigError as error:
            raise InvalidConfigValue(str(error)) from None
    effective = _effective(parsed, broker)
    _check_relations(effective)
    for name, value in parsed.items():
        try:
            TOPIC_CONFIGS[name].check_supported(value)
        except ConfigError as error:
            raise KafkaError(ErrorCode.INVALID_CONFIG, str(error)) from None
    return parsed


def resolve_topic_config(overrides: Mapping[str, str], broker: BrokerConfig) -> TopicConfig:
    """Every topic config's value for a topic with these overrides on this broker."""
    parsed = parse_topic_configs(overrides, broker)
    return TopicConfig({name: _entry(name, parsed, broker) for name in sorted(TOPIC_CONFIGS)})


def resolve_stored_topic_config(overrides: Mapping[str, str], broker: BrokerConfig) -> TopicConfig:
    """Every config of a topic whose overrides another broker of the cluster stored (DescribeConfigs
    in ZooKeeper mode): a Kafka 3.9 broker stores what its own limits allow, which odradek's (Kafka 4's)
    may not. So a value is taken by its type only (a segment.bytes below 1 MiB, say: the logs use it
    too), and a name this broker does not define is left out (3.x's message.timestamp.difference.max.ms),
    as Kafka's describe leaves out names its LogConfig lacks; a value of the wrong type is still
    INVALID_CONFIG, as in Kafka."""
    parsed: dict[str, ConfigValue] = {}
    for name, raw in overrides.items():
        key = TOPIC_CONFIGS.get(name)
        if key is None:
            continue
        try:
            parsed[name] = parse_value(name, key.type, raw)
        except ConfigError as error:
            raise InvalidConfigValue(str(error)) from None
    return TopicConfig({name: _entry(name, parsed, broker) for name in sorted(TOPIC_CONFIGS)})


class TopicConfig(Mapping[str, ConfigValue]):
    """A topic's resolved configs: ``config["retention.ms"]``, ``config.retention_ms``, and
    ``config.entry(name)`` with source and synonyms for DescribeConfigs."""

    def __init__(self, entries: Mapping[str, ConfigEntry]) -> None:
        self._entries = dict(entries)

    def __getitem__(self, name: str) -> ConfigValue:
        return self._entries[name].value

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def entry(self, name: str) -> ConfigEntry:
        return self._entries[name]

    def entries(self) -> list[ConfigEntry]:
        return list(self._entries.values())

    @property
    def overrides(self) -> dict[str, ConfigValue]:
        """The topic's own settings (what is stored for the topic)."""
        return {
            name: entry.value
            for name, entry in self._entries.items()
            if entry.source is ConfigSource.DYNAMIC_TOPIC_CONFIG
        }

    @property
    def compact(self) -> bool:
        return "compact" in [policy.lower() for policy in self.cleanup_policy]

    @property
    def delete(self) -> bool:
        return "delete" in [policy.lower() for policy in self.cleanup_policy]

    @property
    def local_retention_ms_effective(self) -> int:
        """local.retention.ms with -2 ("same as retention.ms") resolved."""
        return self.retention_ms if self.local_retention_ms == -2 else self.local_retention_ms

    @property
    def local_retention_bytes_effective(self) -> int:
        """local.retention.bytes with -2 ("same as retention.bytes") resolved."""
        return self.retention_bytes if self.local_retention_bytes == -2 else self.local_retention_bytes

    cleanup_policy = Setting[list[str]]("cleanup.policy")
    compression_gzip_level = Setting[int]("compression.gzip.level")
    compression_lz4_level = Setting[int]("compression.lz4.level")
    compression_type = Setting[str]("compression.type")
    compression_zstd_level = Setting[int]("compression.zstd.level")
    delete_retention_ms = Setting[int]("delete.retention.ms")
    file_delete_delay_ms = Setting[int]("file.delete.delay.ms")
    flush_messages = Setting[int]("flush.messages")
    flush_ms = Setting[int]("flush.ms")
    follower_replication_throttled_replicas = Setting[list[str]]("follower.replication.throttled.replicas")
    index_interval_bytes = Setting[int]("index.interval.bytes")
    leader_replication_throttled_replicas = Setting[list[str]]("leader.replication.throttled.replicas")
    local_retention_bytes = Setting[int]("local.retention.bytes")
    local_retention_ms = Setting[int]("local.retention.ms")
    max_compaction_lag_ms = Setting[int]("max.compaction.lag.ms")
    max_message_bytes = Setting[int]("max.message.bytes")
    message_downconversion_enable = Setting[bool]("message.downconversion.enable")
    message_format_version = Setting[str]("message.format.version")
    message_timestamp_after_max_ms = Setting[int]("message.timestamp.after.max.ms")
    message_timestamp_before_max_ms = Setting[int]("message.timestamp.before.max.ms")
    message_timestamp_type = Setting[str]("message.timestamp.type")
    min_cleanable_dirty_ratio = Setting[float]("min.cleanable.dirty.ratio")
    min_compaction_lag_ms = Setting[int]("min.compaction.lag.ms")
    min_insync_replicas = Setting[int]("min.insync.replicas")
    preallocate = Setting[bool]("preallocate")
    remote_log_copy_disable = Setting[bool]("remote.log.copy.disable")
    remote_log_delete_on_disable = Setting[bool]("remote.log.delete.on.disable")
    remote_storage_enable = Setting[bool]("remote.storage.enable")
    retention_bytes = Setting[int]("retention.bytes")
    retention_ms = Setting[int]("retention.ms")
    segment_bytes = Setting[int]("segment.bytes")
    segment_index_bytes = Setting[int]("segment.index.bytes")
    segment_jitter_ms = Setting[int]("segment.jitter.ms")
    segment_ms = Setting[int]("segment.ms")
    unclean_leader_election_enable = Setting[bool]("unclean.leader.election.enable")


def _entry(name: str, overrides: Mapping[str, ConfigValue], broker: BrokerConfig) -> ConfigEntry:
    key = TOPIC_CONFIGS[name]
    synonyms: list[ConfigSynonym] = []
    if name in overrides:
        synonyms.append(ConfigSynonym(name, overrides[name], ConfigSource.DYNAMIC_TOPIC_CONFIG, key))
    for synonym in TOPIC_SYNONYMS.get(name, ()):
        broker_key = BROKER_CONFIGS[synonym.name]
        for value, source in broker.layered_values(synonym.name):
            synonyms.append(ConfigSynonym(synonym.name, value, source, broker_key))
    if synonyms:
        first = synonyms[0]
        scale = _scale(name, first.name)
        value, source = _scaled(first.value, scale), first.source
    else:
        value, source = key.default, ConfigSource.DEFAULT_CONFIG
    # Topic configs are always alterable, so DescribeConfigs never reports them read-only.
    return ConfigEntry(name, value, source, key, read_only=False, synonyms=tuple(synonyms))


def _effective(parsed: Mapping[str, ConfigValue], broker: BrokerConfig | None) -> dict[str, ConfigValue]:
    if broker is None:
        return {name: parsed.get(name, key.default) for name, key in TOPIC_CONFIGS.items()}
    return {name: _entry(name, parsed, broker).value for name in TOPIC_CONFIGS}


def _check_relations(config: Mapping[str, ConfigValue]) -> None:
    min_lag, max_lag = config["min.compaction.lag.ms"], config["max.compaction.lag.ms"]
    assert isinstance(min_lag, int) and isinstance(max_lag, int)
    if min_lag > max_lag:
        raise KafkaError(
            ErrorCode.INVALID_CONFIG,
            f"conflict topic config setting min.compaction.lag.ms ({min_lag}) > "
            f"max.compaction.lag.ms ({max_lag})",
        )
    if config["remote.storage.enable"] is True:
        # odradek has no tiered storage, so it answers like a Kafka broker with the feature turned off.
        raise KafkaError(
            ErrorCode.INVALID_CONFIG,
            "Tiered Storage functionality is disabled in the broker. "
            "Topic cannot be configured with remote log storage.",
        )


def _scale(topic_name: str, synonym_name: str) -> int:
    for synonym in TOPIC_SYNONYMS.get(topic_name, ()):
        if synonym.name == synonym_name:
            return synonym.scale
    return BrokerSynonym(synonym_name).scale


def _scaled(value: ConfigValue, scale: int) -> ConfigValue:
    if scale == 1 or not isinstance(value, int) or isinstance(value, bool):
        return value
    # A negative hours/minutes retention means "forever", which topic configs spell -1.
    return -1 if value < 0 else value * scale
