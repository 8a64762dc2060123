"""The replication throttles are real now (cluster/replication/replication_quota.py): their rates,
windows and throttled-replica lists are accepted as Kafka accepts them (a static value, or per broker
and cluster-wide at run time), where they were refused ("odradek cannot honour ...") so that
`kafka-reassign-partitions --throttle` failed. The alter-log-dirs rate and windows are real too, since
moves between log directories are throttled (tests/unit/server/test_log_dir_move_throttle.py)."""

from __future__ import annotations

import pytest

from odradek.config.broker import BrokerConfig
from odradek.config.catalog import BROKER_CONFIGS
from odradek.config.topic_catalog import TOPIC_CONFIGS
from odradek.config.types import ConfigError, ConfigSource, DynamicUpdateMode
from odradek.handlers._common.config_entries import Synonym, broker_entries


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("leader.replication.throttled.rate", "1048576"),
        ("follower.replication.throttled.rate", "0"),
        ("replication.quota.window.num", "5"),
        ("replication.quota.window.size.seconds", "2"),
    ],
)
def test_replication_throttle_broker_configs_are_accepted(name: str, value: str) -> None:
    key = BROKER_CONFIGS[name]
    assert not key.refused and "Refused" not in key.documentation
    config = BrokerConfig({name: value})
    assert config[name] == int(value)


def test_the_throttle_rates_change_at_run_time_per_broker_and_cluster_wide() -> None:
    for name in ("leader.replication.throttled.rate", "follower.replication.throttled.rate"):
        assert BROKER_CONFIGS[name].dynamic is DynamicUpdateMode.CLUSTER_WIDE
    config = BrokerConfig({}).with_dynamic(
        {"leader.replication.throttled.rate": "100"}, {"follower.replication.throttled.rate": "200"}
    )
    assert (config.leader_replication_throttled_rate, config.follower_replication_throttled_rate) == (
        100,
        200,
    )


def test_a_negative_rate_is_refused_with_kafkas_message() -> None:
    with pytest.raises(ConfigError) as refused:
        BrokerConfig({"leader.replication.throttled.rate": "-1"})
    assert str(refused.value) == (
        "Invalid value -1 for configuration leader.replication.throttled.rate: Value must be at least 0"
    )


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("replica.alter.log.dirs.io.max.bytes.per.second", "7"),
        ("alter.log.dirs.replication.quota.window.num", "7"),
        ("alter.log.dirs.replication.quota.window.size.seconds", "7"),
    ],
)
def test_alter_log_dirs_throttles_are_accepted_now_that_moves_between_log_dirs_are_throttled(
    name: str, value: str
) -> None:
    key = BROKER_CONFIGS[name]
    assert not key.refused and "Refused" not in key.documentation
    assert BrokerConfig({name: value})[name] == int(value)


@pytest.mark.parametrize(
    "name", ["leader.replication.throttled.replicas", "follower.replication.throttled.replicas"]
)
def test_throttled_replica_lists_are_real_topic_configs(name: str) -> None:
    key = TOPIC_CONFIGS[name]
    assert not key.inert and not key.refused
    assert key.parse("0:1, 1:2") == ["0:1", "1:2"]
    assert key.parse("*") == ["*"]
    assert key.parse("*,") == ["*", ""]  # Kafka joins the entries: still the wildcard
    assert key.parse("") == []


@pytest.mark.parametrize(
    ("value", "shown"), [("0:1,x", "[0:1, x]"), ("0-1", "[0-1]"), ("*,0:1", "[*, 0:1]"), ("0:1:2", "[0:1:2]")]
)
def test_an_invalid_throttled_replica_list_is_refused_with_kafkas_message(value: str, shown: str) -> None:
    name = "leader.replication.throttled.replicas"
    with pytest.raises(ConfigError) as refused:
        TOPIC_CONFIGS[name].parse(value)
    assert str(refused.value) == (
        f"Invalid value {shown} for configuration {name}: {name} must be the literal '*' or a list of "
        "replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."
    )


def test_the_rates_are_described_as_kafka_describes_its_dynamic_only_broker_configs() -> None:
    """Kafka 3.9 knows the throttle rates only as dynamic configs (DynamicConfig.Broker, not KafkaConfig):
    a broker lists one only when it is set, with no DEFAULT_CONFIG synonym (`kafka-configs --describe`
    prints `synonyms={DYNAMIC_BROKER_CONFIG:...}` alone; tests/compat/kafka_tools reassign-throttled)."""
    unset = {entry.name for entry in broker_entries(BrokerConfig({}), None, None)}
    assert "leader.replication.throttled.rate" not in unset
    assert "replication.quota.window.num" in unset  # a KafkaConfig key: always listed
    config = BrokerConfig({}).with_dynamic({}, {"leader.replication.throttled.rate": "100"})
    (entry,) = broker_entries(config, None, ["leader.replication.throttled.rate"])
    assert (entry.value, entry.source) == ("100", ConfigSource.DYNAMIC_BROKER_CONFIG)
    assert entry.synonyms == [
        Synonym("leader.replication.throttled.rate", "100", ConfigSource.DYNAMIC_BROKER_CONFIG)
    ]
