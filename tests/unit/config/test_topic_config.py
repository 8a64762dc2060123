"""Topic configs: validation with Kafka's INVALID_CONFIG messages, resolution with sources and synonyms."""

from __future__ import annotations

import pytest

from odradek.config import (
    BrokerConfig,
    ConfigSource,
    parse_topic_configs,
    resolve_topic_config,
    validate_topic_configs,
)
from odradek.config.topic import resolve_stored_topic_config
from odradek.protocol.error_codes import ErrorCode, KafkaError


def _invalid(configs: dict[str, str | None], broker: BrokerConfig | None = None) -> str:
    with pytest.raises(KafkaError) as caught:
        validate_topic_configs(configs, broker)
    assert caught.value.error_code is ErrorCode.INVALID_CONFIG
    assert caught.value.error_message is not None
    return caught.value.error_message


def test_valid_overrides_parse_to_typed_values() -> None:
    parsed = parse_topic_configs(
        {"retention.ms": "-1", "cleanup.policy": "compact,delete", "min.cleanable.dirty.ratio": "0.1"}
    )
    assert parsed == {
        "retention.ms": -1,
        "cleanup.policy": ["compact", "delete"],
        "min.cleanable.dirty.ratio": 0.1,
    }
    validate_topic_configs({})


@pytest.mark.parametrize(
    ("configs", "message"),
    [
        ({"retention.msec": "1"}, "Unknown topic config name: retention.msec"),
        ({"log.retention.ms": "1"}, "Unknown topic config name: log.retention.ms"),
        (
            {"retention.ms": None, "segment.ms": None},
            "Null value not supported for topic configs: retention.ms,segment.ms",
        ),
        (
            {"retention.ms": "-2"},
            "Invalid value -2 for configuration retention.ms: Value must be at least -1",
        ),
        (
            {"retention.ms": "soon"},
            "Invalid value soon for configuration retention.ms: Not a number of type LONG",
        ),
        (
            {"cleanup.policy": "shred"},
            "Invalid value shred for configuration cleanup.policy: String must be one of: compact, delete",
        ),
        (
            {"min.cleanable.dirty.ratio": "1.5"},
            "Invalid value 1.5 for configuration min.cleanable.dirty.ratio: Value must be no more than 1",
        ),
        (
            {"compression.type": "brotli"},
            "Invalid value brotli for configuration compression.type: String must be one of: "
            "uncompressed, zstd, lz4, snappy, gzip, producer",
        ),
        (
            {"segment.bytes": "1000"},
            "Invalid value 1000 for configuration segment.bytes: Value must be at least 1048576",
        ),
        (
            {"unclean.leader.election.enable": "yes"},
            "Invalid value yes for configuration unclean.leader.election.enable: "
            "Expected value to be either true or false",
        ),
        (
            {"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"},
            "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)",
        ),
        (
            {"remote.storage.enable": "true"},
            "Tiered Storage functionality is disabled in the broker. "
            "Topic cannot be configured with remote log storage.",
        ),
    ],
)
def test_invalid_overrides(configs: dict[str, str | None], message: str) -> None:
    assert _invalid(configs) == message


def test_relations_use_the_brokers_defaults() -> None:
    broker = BrokerConfig({"log.cleaner.max.compaction.lag.ms": "1000"})
    validate_topic_configs({"min.compaction.lag.ms": "5000"})
    assert "max.compaction.lag.ms (1000)" in _invalid({"min.compaction.lag.ms": "5000"}, broker)


def test_defaults_without_broker_settings() -> None:
    config = resolve_topic_config({}, BrokerConfig({}))
    assert config.retention_ms == 604800000
    assert config.segment_bytes == 1073741824
    assert config.cleanup_policy == ["delete"]
    assert config.delete and not config.compact
    assert config.local_retention_ms_effective == 604800000
    assert config.local_retention_bytes_effective == -1
    assert config.overrides == {}
    assert len(config) == len(list(config)) == 35  # with message.format.version (Kafka 3.x)
    segment = config.entry("segment.bytes")
    assert (segment.source, segment.value_string, segment.read_only) == (
        ConfigSource.DEFAULT_CONFIG,
        "1073741824",
        False,
    )
    assert [(s.name, s.source) for s in segment.synonyms] == [
        ("log.segment.bytes", ConfigSource.DEFAULT_CONFIG)
    ]
    throttled = config.entry("leader.replication.throttled.replicas")
    assert (throttled.value, throttled.source, throttled.synonyms) == ([], ConfigSource.DEFAULT_CONFIG, ())


def test_sources_and_synonyms() -> None:
    broker = BrokerConfig(
        {"log.retention.hours": "24", "log.roll.ms": "60000", "message.max.bytes": "2000000"}
    )
    config = resolve_topic_config({"max.message.bytes": "5000", "cleanup.policy": "compact"}, broker)

    retention = config.entry("retention.ms")
    assert (retention.value, retention.source) == (24 * 3_600_000, ConfigSource.STATIC_BROKER_CONFIG)
    assert [(s.name, s.value, s.source) for s in retention.synonyms] == [
        ("log.retention.hours", 24, ConfigSource.STATIC_BROKER_CONFIG),
        ("log.retention.hours", 168, ConfigSource.DEFAULT_CONFIG),
    ]

    max_bytes = config.entry("max.message.bytes")
    assert (max_bytes.value, max_bytes.source) == (5000, ConfigSource.DYNAMIC_TOPIC_CONFIG)
    assert [(s.name, s.value, s.source) for s in max_bytes.synonyms] == [
        ("max.message.bytes", 5000, ConfigSource.DYNAMIC_TOPIC_CONFIG),
        ("message.max.bytes", 2000000, ConfigSource.STATIC_BROKER_CONFIG),
        ("message.max.bytes", 1048588, ConfigSource.DEFAULT_CONFIG),
    ]

    assert config.segment_ms == 60000
    assert config.entry("segment.ms").source is ConfigSource.STATIC_BROKER_CONFIG
    assert config["max.message.bytes"] == config.max_message_bytes == 5000
    assert config.compact and not config.delete
    assert config.overrides == {"max.message.bytes": 5000, "cleanup.policy": ["compact"]}


def test_dynamic_broker_defaults_reach_topics() -> None:
    broker = BrokerConfig({"log.retention.hours": "24"}).with_dynamic({"log.retention.ms": "1000"}, {})
    retention = resolve_topic_config({}, broker).entry("retention.ms")
    assert (retention.value, retention.source) == (1000, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)


def test_unlimited_retention_from_hours() -> None:
    assert resolve_topic_config({}, BrokerConfig({"log.retention.hours": "-1"})).retention_ms == -1


def test_resolve_rejects_invalid_overrides() -> None:
    with pytest.raises(KafkaError):
        resolve_topic_config({"retention.ms": "-7"}, BrokerConfig({}))


def test_stored_overrides_a_kafka_39_broker_accepts_are_described_not_refused() -> None:
    """In a mixed cluster a Kafka 3.9 broker stores values odradek (Kafka 4's limits) would refuse, and
    names 4.0 removed: DescribeConfigs on an odradek broker failed the whole topic with INVALID_CONFIG."""
    stored = {
        "segment.bytes": "524288",
        "message.timestamp.difference.max.ms": "86400000",
        "max.message.bytes": "2048",
    }
    described = resolve_stored_topic_config(stored, BrokerConfig({}))
    assert described["segment.bytes"] == 524288
    assert described.entry("segment.bytes").source is ConfigSource.DYNAMIC_TOPIC_CONFIG
    assert described["max.message.bytes"] == 2048
    assert "message.timestamp.difference.max.ms" not in described


def test_a_stored_override_of_the_wrong_type_is_still_an_invalid_config() -> None:
    with pytest.raises(KafkaError) as caught:
        resolve_stored_topic_config({"segment.bytes": "big"}, BrokerConfig({}))
    assert caught.value.error_code is ErrorCode.INVALID_CONFIG
