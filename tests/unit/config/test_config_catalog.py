"""The catalog itself: defaults are Kafka's, every default is valid, synonyms and typed attributes line up."""

from __future__ import annotations

import typing

import pytest

from odradek.config.broker import BrokerConfig
from odradek.config.catalog import (
    BROKER_CONFIGS,
    BROKER_SYNONYMS,
    TOPIC_CONFIGS,
    TOPIC_SYNONYMS,
    pythonic_name,
)
from odradek.config.settings import Setting
from odradek.config.topic import TopicConfig
from odradek.config.types import ConfigKey, ConfigType, DynamicUpdateMode, Password

PYTHON_TYPES: dict[ConfigType, object] = {
    ConfigType.BOOLEAN: bool,
    ConfigType.STRING: str,
    ConfigType.CLASS: str,
    ConfigType.INT: int,
    ConfigType.SHORT: int,
    ConfigType.LONG: int,
    ConfigType.DOUBLE: float,
    ConfigType.LIST: list[str],
    ConfigType.PASSWORD: Password,
}

# Defaults as Apache Kafka documents them (4.x unless the config only exists in 3.x).
KAFKA_TOPIC_DEFAULTS = {
    "cleanup.policy": ["delete"],
    "compression.type": "producer",
    "delete.retention.ms": 86400000,
    "file.delete.delay.ms": 60000,
    "flush.messages": 9223372036854775807,
    "flush.ms": 9223372036854775807,
    "index.interval.bytes": 4096,
    "max.compaction.lag.ms": 9223372036854775807,
    "max.message.bytes": 1048588,
    "message.timestamp.after.max.ms": 3600000,
    "message.timestamp.before.max.ms": 9223372036854775807,
    "message.timestamp.type": "CreateTime",
    "min.cleanable.dirty.ratio": 0.5,
    "min.compaction.lag.ms": 0,
    "min.insync.replicas": 1,
    "preallocate": False,
    "retention.bytes": -1,
    "retention.ms": 604800000,
    "segment.bytes": 1073741824,
    "segment.index.bytes": 10485760,
    "segment.jitter.ms": 0,
    "segment.ms": 604800000,
    "unclean.leader.election.enable": False,
    "local.retention.ms": -2,
    "compression.zstd.level": 3,
}
KAFKA_BROKER_DEFAULTS = {
    "num.partitions": 1,
    "default.replication.factor": 1,
    "auto.create.topics.enable": True,
    "delete.topic.enable": True,
    "log.retention.hours": 168,
    "log.retention.bytes": -1,
    "log.retention.check.interval.ms": 300000,
    "log.roll.hours": 168,
    "log.segment.bytes": 1073741824,
    "log.index.size.max.bytes": 10485760,
    "message.max.bytes": 1048588,
    "socket.request.max.bytes": 104857600,
    "socket.send.buffer.bytes": 102400,
    "socket.receive.buffer.bytes": 102400,
    "socket.connection.setup.timeout.ms": 10000,
    "socket.connection.setup.timeout.max.ms": 30000,
    "connections.max.idle.ms": 600000,
    "num.network.threads": 3,
    "num.io.threads": 8,
    "offsets.topic.num.partitions": 50,
    "offsets.topic.replication.factor": 3,
    "offsets.topic.segment.bytes": 104857600,
    "offsets.retention.minutes": 10080,
    "offsets.commit.timeout.ms": 5000,
    "offsets.load.buffer.size": 5242880,
    "group.min.session.timeout.ms": 6000,
    "group.max.session.timeout.ms": 1800000,
    "group.initial.rebalance.delay.ms": 3000,
    "group.consumer.session.timeout.ms": 45000,
    "group.consumer.heartbeat.interval.ms": 5000,
    "transaction.max.timeout.ms": 900000,
    "transactional.id.expiration.ms": 604800000,
    "transaction.state.log.min.isr": 2,
    "producer.id.expiration.ms": 86400000,
    "zookeeper.session.timeout.ms": 18000,
    "replica.lag.time.max.ms": 30000,
    "replica.fetch.max.bytes": 1048576,
    "controlled.shutdown.max.retries": 3,
    "log.cleaner.dedupe.buffer.size": 134217728,
    "log.cleaner.backoff.ms": 15000,
    "listeners": "PLAINTEXT://:9092",
    "sasl.enabled.mechanisms": ["GSSAPI"],
    "ssl.client.auth": "none",
    "num.recovery.threads.per.data.dir": 2,
}


@pytest.mark.parametrize(("name", "default"), sorted(KAFKA_TOPIC_DEFAULTS.items()))
def test_topic_defaults_are_kafkas(name: str, default: object) -> None:
    assert TOPIC_CONFIGS[name].default == default


@pytest.mark.parametrize(("name", "default"), sorted(KAFKA_BROKER_DEFAULTS.items()))
def test_broker_defaults_are_kafkas(name: str, default: object) -> None:
    assert BROKER_CONFIGS[name].default == default


def _all_keys() -> list[ConfigKey]:
    return [*BROKER_CONFIGS.values(), *TOPIC_CONFIGS.values()]


@pytest.mark.parametrize("key", _all_keys(), ids=lambda key: key.name)
def test_every_default_has_the_right_type_and_is_valid(key: ConfigKey) -> None:
    if key.default is None:
        return
    expected = PYTHON_TYPES[key.type]
    if expected == list[str]:
        assert isinstance(key.default, list)
        assert all(isinstance(item, str) for item in key.default)
    else:
        assert type(key.default) is expected
    key.validate(key.default)
    # The string form of every default parses back to the same value.
    text = key.to_string(key.default)
    assert text is not None
    assert key.parse(text) == key.default


def test_every_topic_synonym_is_a_broker_config_of_a_compatible_type() -> None:
    integers = {ConfigType.INT, ConfigType.SHORT, ConfigType.LONG}
    for topic_name, chain in TOPIC_SYNONYMS.items():
        topic_type = TOPIC_CONFIGS[topic_name].type
        for synonym in chain:
            broker_type = BROKER_CONFIGS[synonym.name].type
            assert broker_type == topic_type or {broker_type, topic_type} <= integers, synonym.name
    assert set(TOPIC_SYNONYMS) <= set(TOPIC_CONFIGS)


def test_topic_configs_without_broker_default() -> None:
    assert set(TOPIC_CONFIGS) - set(TOPIC_SYNONYMS) == {
        "follower.replication.throttled.replicas",
        "leader.replication.throttled.replicas",
        "remote.log.copy.disable",
        "remote.log.delete.on.disable",
        "remote.storage.enable",
    }  # message.format.version has log.message.format.version, as in Kafka 3.x


def test_broker_synonym_chains() -> None:
    assert BROKER_SYNONYMS["log.retention.hours"] == (
        "log.retention.ms",
        "log.retention.minutes",
        "log.retention.hours",
    )
    assert BROKER_SYNONYMS["log.roll.ms"] == ("log.roll.ms", "log.roll.hours")
    assert BROKER_SYNONYMS["log.flush.scheduler.interval.ms"] == ("log.flush.scheduler.interval.ms",)


def test_sensitive_configs_are_passwords() -> None:
    sensitive = {name for name, key in BROKER_CONFIGS.items() if key.sensitive}
    assert {
        "ssl.keystore.password",
        "ssl.truststore.password",
        "ssl.key.password",
        "sasl.jaas.config",
    } <= sensitive
    assert all(
        BROKER_CONFIGS[name].type is ConfigType.PASSWORD or BROKER_CONFIGS[name].authorizer_config
        for name in sensitive
    )
    # Kafka 3.9 hides its authorizer's configs too (names KafkaConfig does not define)
    assert {"super.users", "allow.everyone.if.no.acl.found"} <= sensitive


def test_update_modes() -> None:
    assert BROKER_CONFIGS["log.retention.ms"].dynamic is DynamicUpdateMode.CLUSTER_WIDE
    assert BROKER_CONFIGS["log.retention.hours"].read_only
    assert BROKER_CONFIGS["listeners"].read_only  # odradek cannot re-bind its listeners at run time
    # key and trust stores reload (listener-prefixed AlterConfigs); other TLS and SASL settings do not
    assert BROKER_CONFIGS["ssl.keystore.location"].dynamic is DynamicUpdateMode.PER_BROKER
    assert BROKER_CONFIGS["ssl.client.auth"].read_only
    assert BROKER_CONFIGS["ssl.cipher.suites"].dynamic is DynamicUpdateMode.PER_BROKER
    assert BROKER_CONFIGS["broker.id"].read_only
    assert BROKER_CONFIGS["zookeeper.connect"].read_only
    assert BROKER_CONFIGS["num.io.threads"].dynamic is DynamicUpdateMode.CLUSTER_WIDE


def test_odradek_specific_configs_are_marked() -> None:
    specific = {name for name, key in BROKER_CONFIGS.items() if key.odradek_specific}
    assert specific == {
        "metrics.port",
        "metrics.host",
        "console.port",
        "console.host",
        "console.allowed.hosts",
        "console.basic.auth.file",
        "console.command.config",
        "cluster.id",
    }
    assert BROKER_CONFIGS["metrics.port"].default is None
    assert BROKER_CONFIGS["metrics.host"].default == "127.0.0.1"
    assert BROKER_CONFIGS["console.port"].default is None


def _settings(owner: type) -> dict[str, Setting[object]]:
    return {name: value for name, value in vars(owner).items() if isinstance(value, Setting)} | {
        name: value
        for base in owner.__mro__[1:]
        for name, value in vars(base).items()
        if isinstance(value, Setting)
    }


def _declared(setting: Setting[object]) -> object:
    (declared,) = typing.get_args(setting.__orig_class__)  # type: ignore[attr-defined]
    return declared


@pytest.mark.parametrize(
    ("owner", "catalog", "derived"),
    [
        (
            BrokerConfig,
            BROKER_CONFIGS,
            {
                "log.retention.ms",
                "log.roll.ms",
                "log.roll.jitter.ms",
                "log.flush.interval.ms",
                "log.dirs",
                "advertised.listeners",
                "zookeeper.connection.timeout.ms",
                "num.replica.alter.log.dirs.threads",
            },
        ),
        (TopicConfig, TOPIC_CONFIGS, set()),
    ],
)
def test_typed_attributes_match_the_catalog(
    owner: type, catalog: dict[str, ConfigKey], derived: set[str]
) -> None:
    settings = _settings(owner)
    assert {setting.kafka_name for setting in settings.values()} == set(catalog)
    for attribute, setting in settings.items():
        key = catalog[setting.kafka_name]
        assert attribute == pythonic_name(key.name)
        expected = PYTHON_TYPES[key.type]
        if key.default is None and key.name not in derived:
            expected = expected | None  # type: ignore[operator]
        assert _declared(setting) == expected, key.name
