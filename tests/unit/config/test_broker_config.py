"""BrokerConfig: loading, validation, Kafka's fallbacks and precedence, dynamic layers, describe data."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from odradek.config import (
    BrokerConfig,
    ConfigError,
    ConfigSource,
    Endpoint,
    generate_cluster_id,
    is_cluster_id,
    validate_dynamic_broker_configs,
)
from odradek.config.catalog import is_sensitive
from odradek.protocol.error_codes import ErrorCode, KafkaError

REPO = Path(__file__).resolve().parents[3]


def test_defaults_without_any_file() -> None:
    config = BrokerConfig.load(None)
    assert config.log_retention_ms == 7 * 24 * 3_600_000
    assert config["log.retention.ms"] == 604800000
    assert config.log_roll_ms == 604800000
    assert config.log_roll_jitter_ms == 0
    assert config.log_dirs == ["/tmp/kafka-logs"]
    assert config.log_flush_interval_ms == 2**63 - 1
    assert config.node_id == -1
    assert config.zookeeper_connect is None
    assert config.zookeeper_connection_timeout_ms == 18000
    assert config.metrics_port is None
    assert config.listener_endpoints() == [Endpoint("PLAINTEXT", "", 9092, "PLAINTEXT")]
    assert config.advertised_endpoints() == config.listener_endpoints()


def test_the_shipped_server_properties_loads() -> None:
    config = BrokerConfig.load(REPO / "config" / "server.properties", ["log.dirs=./data"])
    assert config.node_id == 1
    assert config.log_dirs == ["./data"]
    assert config.unknown == {}


def test_file_and_overrides(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text("broker.id=3\nlog.dir=/kafka\nnum.partitions = 4\nlisteners=PLAINTEXT://localhost:9092\n")
    config = BrokerConfig.load(path, ["num.partitions=6", "auto.create.topics.enable=false"])
    assert config.broker_id == 3
    assert config.node_id == 3
    assert config.log_dirs == ["/kafka"]
    assert config.num_partitions == 6
    assert config.auto_create_topics_enable is False
    assert config.value_and_source("num.partitions") == (6, ConfigSource.STATIC_BROKER_CONFIG)
    assert config.value_and_source("default.replication.factor") == (1, ConfigSource.DEFAULT_CONFIG)


@pytest.mark.parametrize(
    ("settings", "retention_ms"),
    [
        ({}, 168 * 3_600_000),
        ({"log.retention.hours": "1"}, 3_600_000),
        ({"log.retention.hours": "1", "log.retention.minutes": "5"}, 5 * 60_000),
        ({"log.retention.hours": "1", "log.retention.minutes": "5", "log.retention.ms": "1234"}, 1234),
        ({"log.retention.ms": "-1"}, -1),
        ({"log.retention.hours": "-1"}, -1),
        ({"log.retention.minutes": "-5"}, -1),
    ],
)
def test_retention_hours_minutes_ms_precedence(settings: dict[str, str], retention_ms: int) -> None:
    assert BrokerConfig(settings).log_retention_ms == retention_ms


def test_roll_and_flush_fallbacks() -> None:
    config = BrokerConfig(
        {"log.roll.hours": "2", "log.roll.jitter.hours": "1", "log.flush.scheduler.interval.ms": "500"}
    )
    assert config.log_roll_ms == 2 * 3_600_000
    assert config.log_roll_jitter_ms == 3_600_000
    assert config.log_flush_interval_ms == 500
    config = BrokerConfig({"log.roll.hours": "2", "log.roll.ms": "100", "log.flush.interval.ms": "7"})
    assert config.log_roll_ms == 100
    assert config.log_flush_interval_ms == 7
    # The config's own value stays unset; only the effective one falls back.
    assert BrokerConfig({}).value_and_source("log.roll.ms") == (None, ConfigSource.DEFAULT_CONFIG)


def test_metrics_host_is_loopback_by_default_and_refuses_what_is_not_a_host() -> None:
    assert BrokerConfig({}).metrics_host == "127.0.0.1"
    for host in ("0.0.0.0", "::", "::1", "10.1.2.3", "metrics.example.com", "broker-1"):
        assert BrokerConfig({"metrics.host": host}).metrics_host == host
    for nonsense in ("", " ", "127.0.0.1:9100", "http://0.0.0.0", "[::1]", "a b", "-bad-", "host/path"):
        with pytest.raises(ConfigError, match=r"metrics\.host.*Must be an IP address or a host name"):
            BrokerConfig({"metrics.host": nonsense})


def test_the_brokers_console_beyond_loopback_without_basic_auth_refuses_to_start() -> None:
    assert BrokerConfig({"console.port": "8080"}).console_host == "127.0.0.1"
    assert BrokerConfig({"console.port": "8080", "console.host": "127.0.0.2"}).console_host == "127.0.0.2"
    for host in ("0.0.0.0", "::", "10.0.0.5", "console.example"):
        with pytest.raises(ConfigError) as caught:
            BrokerConfig({"console.port": "8080", "console.host": host})
        assert caught.value.name == "console.basic.auth.file"
        assert str(caught.value) == (
            f"console.host {host} serves the console beyond this machine: set console.basic.auth.file "
            "(every request then needs a listed user and password), or serve 127.0.0.1"
        )
    exposed = {"console.port": "8080", "console.host": "0.0.0.0", "console.basic.auth.file": "/etc/users"}
    assert BrokerConfig(exposed).console_basic_auth_file == "/etc/users"
    with pytest.raises(ConfigError, match=r"console\.allowed\.hosts"):
        BrokerConfig({"console.allowed.hosts": "ok.example,http://no.example"})
    assert BrokerConfig({"console.allowed.hosts": "a.example, 10.0.0.5"}).console_allowed_hosts == [
        "a.example",
        "10.0.0.5",
    ]


def test_repr_hides_secrets_also_of_listener_scoped_and_unknown_names() -> None:
    """It raised KeyError for a name outside the catalog (a listener-scoped JAAS line, a typo)."""
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_a="s3cret";'
    config = BrokerConfig(
        {
            "sasl.jaas.config": jaas,
            "listener.name.sasl_ssl.plain.sasl.jaas.config": jaas,
            "sasl.jass.config": jaas,  # a typo: unknown, and maybe a secret
            "num.partitions": "3",
        }
    )
    assert repr(config) == (
        "BrokerConfig(listener.name.sasl_ssl.plain.sasl.jaas.config=[hidden], num.partitions=3, "
        "sasl.jaas.config=[hidden], sasl.jass.config=[hidden])"
    )


def test_secret_configs_are_known_also_listener_scoped() -> None:
    assert is_sensitive("sasl.jaas.config")
    assert is_sensitive("listener.name.sasl_ssl.plain.sasl.jaas.config")
    assert is_sensitive("listener.name.external.ssl.keystore.password")
    assert not is_sensitive("listener.name.external.ssl.keystore.location")
    assert not is_sensitive("log.dirs")


def test_node_id_and_broker_id() -> None:
    assert BrokerConfig({"node.id": "5"}).broker_id == 5
    assert BrokerConfig({"broker.id": "5", "node.id": "5"}).node_id == 5
    with pytest.raises(ConfigError, match=re.escape("broker.id")) as caught:
        BrokerConfig({"broker.id": "1", "node.id": "2"})
    assert caught.value.name == "node.id"


def test_bad_values_name_the_config() -> None:
    with pytest.raises(ConfigError) as caught:
        BrokerConfig({"num.partitions": "zero"})
    assert caught.value.name == "num.partitions"
    assert (
        str(caught.value) == "Invalid value zero for configuration num.partitions: Not a number of type INT"
    )
    with pytest.raises(ConfigError, match="Value must be at least 1"):
        BrokerConfig({"num.partitions": "0"})
    with pytest.raises(ConfigError, match=re.escape("log.segment.bytes")):
        BrokerConfig({"log.segment.bytes": "1024"})  # Kafka 4.x: at least 1 MiB
    with pytest.raises(ConfigError, match=re.escape("auto.create.topics.enable")):
        BrokerConfig({"auto.create.topics.enable": "maybe"})


def test_unknown_configs_are_kept_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="odradek.config.broker"):
        config = BrokerConfig({"no.such.config": "1", "listener.name.plaintext.foo": "x"})
    assert config.unknown == {"no.such.config": "1"}
    assert "The configuration 'no.such.config' was supplied but isn't a known config." in caplog.text
    assert "listener.name" not in caplog.text
    assert config.listener_overrides() == {"listener.name.plaintext.foo": "x"}
    assert "no.such.config" not in config
    with pytest.raises(KeyError):
        config["no.such.config"]


def test_listener_rules() -> None:
    config = BrokerConfig(
        {
            "listeners": "INTERNAL://0.0.0.0:9093,EXTERNAL://[::1]:9092",
            "advertised.listeners": "INTERNAL://broker-1:9093,EXTERNAL://localhost:9092",
            "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT,SECURE:SASL_SSL",
            "inter.broker.listener.name": "INTERNAL",
        }
    )
    assert config.listener_endpoints() == [
        Endpoint("INTERNAL", "0.0.0.0", 9093, "PLAINTEXT"),
        Endpoint("EXTERNAL", "::1", 9092, "PLAINTEXT"),
    ]
    assert str(config.listener_endpoints()[1]) == "EXTERNAL://[::1]:9092"
    with pytest.raises(ConfigError, match=re.escape("listener.security.protocol.map")) as caught:
        BrokerConfig({"listeners": "INTERNAL://:9093"})
    assert caught.value.name == "listeners"
    with pytest.raises(ConfigError, match=re.escape("0.0.0.0")):
        BrokerConfig({"listeners": "PLAINTEXT://0.0.0.0:9092"})  # advertised falls back to listeners
    with pytest.raises(ConfigError, match="Only one of"):
        BrokerConfig(
            {"inter.broker.listener.name": "PLAINTEXT", "security.inter.broker.protocol": "PLAINTEXT"}
        )
    with pytest.raises(ConfigError, match="listeners"):
        BrokerConfig({"listeners": "localhost:9092"})


def test_early_start_listeners_must_name_listeners() -> None:
    listeners = {
        "listeners": "INTERNAL://:9093,EXTERNAL://:9092",
        "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
        "inter.broker.listener.name": "INTERNAL",
    }
    config = BrokerConfig({**listeners, "early.start.listeners": "INTERNAL, external"})
    assert config.early_start_listeners == "INTERNAL, external"
    assert "early.start.listeners" not in config.unknown
    with pytest.raises(
        ConfigError, match=re.escape("early.start.listeners contains listener OTHER")
    ) as caught:
        BrokerConfig({**listeners, "early.start.listeners": "INTERNAL,OTHER"})
    assert caught.value.name == "early.start.listeners"


def test_relations_between_configs() -> None:
    with pytest.raises(ConfigError, match=r"group.consumer.heartbeat.interval.ms \(5000\) must be less than"):
        BrokerConfig(
            {"group.consumer.session.timeout.ms": "5000", "group.consumer.min.session.timeout.ms": "5000"}
        )
    with pytest.raises(ConfigError, match=re.escape("replica.fetch.wait.max.ms")):
        BrokerConfig({"replica.fetch.wait.max.ms": "40000"})
    with pytest.raises(ConfigError, match="dedupe"):
        BrokerConfig({"log.cleaner.threads": "200"})  # the default 128 MiB is under 1 MiB each
    with pytest.raises(ConfigError, match="log directory"):
        BrokerConfig({"log.dirs": " "})


def test_dynamic_layers_take_precedence() -> None:
    static = BrokerConfig({"log.retention.hours": "10", "message.max.bytes": "1000"})
    config = static.with_dynamic({"log.retention.ms": "5000"}, {"message.max.bytes": "2000"})
    assert config.log_retention_ms == 5000
    assert config.message_max_bytes == 2000
    assert config.value_and_source("message.max.bytes") == (2000, ConfigSource.DYNAMIC_BROKER_CONFIG)
    assert config.value_and_source("log.retention.ms") == (5000, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
    assert [(s.name, s.value, s.source) for s in config.synonyms("log.retention.ms")] == [
        ("log.retention.ms", 5000, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        ("log.retention.hours", 10, ConfigSource.STATIC_BROKER_CONFIG),
        ("log.retention.hours", 168, ConfigSource.DEFAULT_CONFIG),
    ]


def test_entries_for_describe_configs() -> None:
    config = BrokerConfig({"log.retention.hours": "24"})
    entry = config.entry("ssl.keystore.password")
    assert entry.is_sensitive
    assert entry.value_string is None
    hours = config.entry("log.retention.hours")
    assert (hours.value_string, hours.source, hours.read_only) == (
        "24",
        ConfigSource.STATIC_BROKER_CONFIG,
        True,
    )
    assert not config.entry("log.retention.ms").read_only
    assert config.entry("num.partitions").is_default
    names = [entry.name for entry in config.entries()]
    assert names == sorted(names)
    assert "log.retention.ms" in names


def test_dynamic_changes_are_checked_like_kafka() -> None:
    parsed = validate_dynamic_broker_configs(
        {"log.retention.ms": "1000", "log.cleaner.threads": None}, cluster_default=True
    )
    assert parsed == {"log.retention.ms": 1000, "log.cleaner.threads": None}
    cases = [
        ({"broker.id": "2"}, False, "Cannot update these configs dynamically: Set(broker.id)"),
        ({"log.retention.hours": "2"}, False, "dynamically: Set(log.retention.hours)"),
        ({"listeners": "PLAINTEXT://:9093"}, False, "dynamically: Set(listeners)"),
        (
            {"sasl.enabled.mechanisms": "PLAIN"},
            False,
            "Cannot update these configs dynamically: Set(sasl.enabled",
        ),
        ({"ssl.cipher.suites": "X"}, True, "broker id must be specified: Set(ssl.cipher.suites)"),
        ({"no.such.config": "1"}, False, "Unknown broker configs: no.such.config"),
        ({"message.max.bytes": "-1"}, True, "Invalid value -1 for configuration message.max.bytes"),
    ]
    for configs, cluster_default, message in cases:
        with pytest.raises(KafkaError) as caught:
            validate_dynamic_broker_configs(configs, cluster_default=cluster_default)
        assert caught.value.error_code is ErrorCode.INVALID_CONFIG
        assert message in str(caught.value.error_message)


def test_with_dynamic_does_not_warn_again(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="odradek.config.broker"):
        config = BrokerConfig({"no.such.config": "1"})
        assert "no.such.config" in caplog.text
        caplog.clear()
        config.with_dynamic({}, {})
    assert caplog.text == ""


def test_cluster_id() -> None:
    generated = {generate_cluster_id() for _ in range(50)}
    assert len(generated) == 50
    assert all(is_cluster_id(cluster_id) and not cluster_id.startswith("-") for cluster_id in generated)
    assert BrokerConfig({"cluster.id": "MkU3OEVBNTcwNTJENDM2Qg"}).cluster_id == "MkU3OEVBNTcwNTJENDM2Qg"
    with pytest.raises(ConfigError, match=re.escape("cluster.id")):
        BrokerConfig({"cluster.id": "not-a-cluster-id"})


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        # a heartbeat interval longer than the session: every member timed out between heartbeats
        (
            {
                "group.share.heartbeat.interval.ms": "6000",
                "group.share.min.heartbeat.interval.ms": "1000",
                "group.share.session.timeout.ms": "5000",
                "group.share.min.session.timeout.ms": "1000",
            },
            "group.share.heartbeat.interval.ms (6000) must be less than group.share.session.timeout.ms",
        ),
        ({"group.share.session.timeout.ms": "30000"}, "group.share.min.session.timeout.ms (45000)"),
        ({"group.share.session.timeout.ms": "70000"}, "group.share.session.timeout.ms (70000)"),
        ({"group.share.heartbeat.interval.ms": "20000"}, "group.share.heartbeat.interval.ms (20000)"),
        ({"group.share.heartbeat.interval.ms": "2000"}, "group.share.min.heartbeat.interval.ms (5000)"),
        ({"group.share.record.lock.duration.ms": "10000"}, "group.share.min.record.lock.duration.ms"),
        ({"group.share.record.lock.duration.ms": "90000"}, "group.share.record.lock.duration.ms (90000)"),
    ],
)
def test_share_group_timeouts_out_of_their_bounds_stop_the_start_as_kafkas_require(
    settings: dict[str, str], named: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(named)):
        BrokerConfig(settings)
