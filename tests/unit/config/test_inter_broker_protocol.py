"""inter.broker.protocol.version is real or refused: Kafka's reading of a version string, the versions
odradek's brokers speak (3.0-IV1 to 3.9-IV0) accepted, older and KRaft-only ones refused at start-up in
one line naming the config, and read-only for AlterConfigs as in Kafka."""

from __future__ import annotations

import pytest

from odradek.cluster.inter_broker_versions import InterBrokerVersions
from odradek.config import BROKER_CONFIGS, BrokerConfig, validate_dynamic_broker_configs
from odradek.config.inter_broker_protocol import IBP_VERSIONS, InterBrokerProtocolVersion
from odradek.config.types import ConfigError
from odradek.protocol.error_codes import ErrorCode, KafkaError

NAME = "inter.broker.protocol.version"


def _config(value: str) -> BrokerConfig:
    return BrokerConfig({"log.dirs": "/tmp/unused", NAME: value})


@pytest.mark.parametrize(
    ("text", "version"),
    [
        ("3.9", "3.9-IV0"),
        ("3.0", "3.0-IV1"),  # a release stands for its last internal version
        ("3.0-IV0", "3.0-IV0"),
        ("3.7", "3.7-IV4"),
        ("2.8.1", "2.8-IV1"),  # after the release's two parts, the rest is ignored
        ("3.5-IV2", "3.5-IV2"),
        ("0.10.2.1", "0.10.2-IV0"),
        ("0.8.2", "0.8.2"),
    ],
)
def test_a_version_string_is_read_as_kafka_reads_it(text: str, version: str) -> None:
    assert InterBrokerProtocolVersion.parse(text).version == version


@pytest.mark.parametrize("text", ["3", "3.10", "banana", "4.0", "3.9-IV9", ""])
def test_a_string_naming_no_version_is_an_invalid_value_naming_the_config(text: str) -> None:
    with pytest.raises(ConfigError) as caught:
        _config(text)
    assert caught.value.name == NAME
    assert (
        str(caught.value)
        == f"Invalid value {text} for configuration {NAME}: Version {text} is not a valid version"
    )


@pytest.mark.parametrize("text", ["3.0-IV1", "3.0", "3.3-IV3", "3.4", "3.7-IV2", "3.8", "3.9", "3.9-IV0"])
def test_the_versions_odradek_brokers_speak_are_accepted(text: str) -> None:
    assert _config(text).inter_broker_protocol_version == text
    InterBrokerVersions.at(text)


@pytest.mark.parametrize("text", ["0.10.2", "2.4", "2.7-IV2", "2.8", "3.0-IV0"])
def test_an_older_version_refuses_to_start_in_one_line_naming_the_config_and_why(text: str) -> None:
    with pytest.raises(ConfigError) as caught:
        _config(text)
    message = str(caught.value)
    assert caught.value.name == NAME
    assert message.startswith(f"odradek cannot honour {NAME}={text}: ")
    assert "3.0-IV1" in message and "log.message.format.version" in message and "\n" not in message


def test_a_kraft_only_version_refuses_to_start() -> None:
    with pytest.raises(ConfigError, match=f"cannot honour {NAME}=4.0-IV0: .*KRaft-only"):
        _config("4.0-IV0")


def test_it_is_read_only_for_alter_configs_as_in_kafka() -> None:
    with pytest.raises(KafkaError) as caught:
        validate_dynamic_broker_configs({NAME: "3.8"}, cluster_default=True)
    assert caught.value.error_code is ErrorCode.INVALID_CONFIG
    assert NAME in str(caught.value)


def test_describe_configs_tells_the_range_and_that_a_single_node_does_not_use_it() -> None:
    key = BROKER_CONFIGS[NAME]
    assert key.default == "3.9-IV0" and key.valid_values == "[3.0-IV1, ..., 3.9-IV0]"
    assert "Without zookeeper.connect it has no effect" in key.documentation


def test_the_catalog_knows_every_version_of_kafka_3_9_in_order() -> None:
    assert IBP_VERSIONS[0] == "0.8.0" and IBP_VERSIONS[-1] == "4.0-IV1"
    assert len(IBP_VERSIONS) == len(set(IBP_VERSIONS)) == 57
    older = InterBrokerProtocolVersion("3.4-IV0")
    assert older.is_at_least("3.3-IV3") and not older.is_at_least("3.5-IV0")


@pytest.mark.parametrize(
    ("ibp", "expected"),
    [
        # (LeaderAndIsr, UpdateMetadata, StopReplica, Fetch, ListOffsets, AlterPartition), as Kafka 3.9's
        # MetadataVersion and ControllerChannelManager pick them (AlterPartition: the release's highest)
        ("3.0-IV1", (5, 7, 3, 12, 7, 0)),
        ("3.1-IV0", (5, 7, 3, 13, 7, 0)),
        ("3.2-IV0", (6, 7, 3, 13, 7, 1)),
        ("3.3-IV3", (6, 7, 3, 13, 7, 2)),
        ("3.4-IV0", (7, 8, 4, 13, 7, 2)),
        ("3.5-IV0", (7, 8, 4, 14, 8, 3)),
        ("3.5-IV1", (7, 8, 4, 15, 8, 3)),
        ("3.7-IV3", (7, 8, 4, 15, 8, 3)),
        ("3.7-IV4", (7, 8, 4, 16, 8, 3)),
        ("3.8-IV0", (7, 8, 4, 16, 8, 3)),
        ("3.9-IV0", (7, 8, 4, 17, 9, 3)),
    ],
)
def test_each_version_maps_to_kafka_s_inter_broker_request_versions(
    ibp: str, expected: tuple[int, ...]
) -> None:
    v = InterBrokerVersions.at(ibp)
    assert (
        v.leader_and_isr,
        v.update_metadata,
        v.stop_replica,
        v.fetch,
        v.list_offsets,
        v.alter_partition,
    ) == expected
