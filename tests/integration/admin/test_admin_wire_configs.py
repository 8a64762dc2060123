"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs at every version, over raw frames: sources,
synonyms (Kafka's layer-by-layer order), sensitive values, flags, types, and every resource error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kafka.protocol.admin import (
    AlterConfigsRequest,
    CreateTopicsRequest,
    DescribeConfigsRequest,
    IncrementalAlterConfigsRequest,
)

from tests.integration.admin.conftest import STATIC_RETENTION_HOURS
from tests.integration.admin.wire import Wire
from tests.support.broker_process import BrokerProcess

pytestmark = pytest.mark.timeout(60)

NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_TOPIC_EXCEPTION = 17
INVALID_CONFIG = 40
INVALID_REQUEST = 42

TOPIC = 2
BROKER = 4
BROKER_LOGGER = 8

DYNAMIC_TOPIC_CONFIG = 1
DYNAMIC_BROKER_CONFIG = 2
DYNAMIC_DEFAULT_BROKER_CONFIG = 3
STATIC_BROKER_CONFIG = 4
DEFAULT_CONFIG = 5

LONG = 5
LIST = 7
PASSWORD = 9

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
HOUR_MS = 3_600_000


def make_topic(wire: Wire, name: str, configs: dict[str, str] | None = None) -> None:
    topic = CreateTopicsRequest.CreatableTopic
    request = CreateTopicsRequest(
        topics=[
            topic(
                name=name,
                num_partitions=1,
                replication_factor=1,
                assignments=[],
                configs=[topic.CreatableTopicConfig(name=k, value=v) for k, v in (configs or {}).items()],
            )
        ],
        timeout_ms=10_000,
        validate_only=False,
    )
    assert wire.send(request, 5).topics[0].error_code == NONE


def describe(
    wire: Wire,
    version: int,
    resource_type: int,
    name: str,
    keys: list[str] | None = None,
    synonyms: bool = True,
    documentation: bool = True,
) -> Any:
    resource = DescribeConfigsRequest.DescribeConfigsResource
    request = DescribeConfigsRequest(
        resources=[resource(resource_type=resource_type, resource_name=name, configuration_keys=keys)],
        include_synonyms=synonyms,
        include_documentation=documentation,
    )
    return wire.send(request, version).results[0]


def configs_of(wire: Wire, resource_type: int, name: str, keys: list[str] | None = None) -> dict[str, Any]:
    result = describe(wire, 4, resource_type, name, keys)
    assert result.error_code == NONE, result
    return {c.name: c for c in result.configs}


def synonyms_of(entry: Any) -> list[tuple[str, str | None, int]]:
    return [(s.name, s.value, s.source) for s in entry.synonyms]


def alter(
    wire: Wire,
    version: int,
    resources: list[tuple[int, str, dict[str, str | None]]],
    validate_only: bool = False,
) -> list[tuple[int, str | None]]:
    resource = AlterConfigsRequest.AlterConfigsResource
    request = AlterConfigsRequest(
        resources=[
            resource(
                resource_type=kind,
                resource_name=name,
                configs=[resource.AlterableConfig(name=k, value=v) for k, v in configs.items()],
            )
            for kind, name, configs in resources
        ],
        validate_only=validate_only,
    )
    return [(r.error_code, r.error_message) for r in wire.send(request, version).responses]


def alter_incrementally(
    wire: Wire,
    version: int,
    resources: list[tuple[int, str, list[tuple[str, int, str | None]]]],
    validate_only: bool = False,
) -> list[tuple[int, str | None]]:
    resource = IncrementalAlterConfigsRequest.AlterConfigsResource
    request = IncrementalAlterConfigsRequest(
        resources=[
            resource(
                resource_type=kind,
                resource_name=name,
                configs=[resource.AlterableConfig(name=k, config_operation=op, value=v) for k, op, v in ops],
            )
            for kind, name, ops in resources
        ],
        validate_only=validate_only,
    )
    return [(r.error_code, r.error_message) for r in wire.send(request, version).responses]


# ----- DescribeConfigs -------------------------------------------------------------------------------


@pytest.mark.parametrize("version", range(5))
def test_describe_topic_configs_at_every_version(wire: Wire, version: int) -> None:
    name = f"describe-v{version}"
    make_topic(wire, name, {"retention.ms": "3600000"})
    result = describe(wire, version, TOPIC, name)
    assert (result.error_code, result.resource_type, result.resource_name) == (NONE, TOPIC, name)
    if version >= 1:
        assert result.error_message is None
    configs = {c.name: c for c in result.configs}
    assert {"cleanup.policy", "retention.ms", "segment.bytes", "max.message.bytes"} <= set(configs)
    retention, cleanup = configs["retention.ms"], configs["cleanup.policy"]
    assert (retention.value, retention.read_only, retention.is_sensitive) == ("3600000", False, False)
    if version == 0:
        assert (retention.is_default, cleanup.is_default) == (False, True)
        return
    assert (retention.config_source, cleanup.config_source) == (DYNAMIC_TOPIC_CONFIG, DEFAULT_CONFIG)
    assert synonyms_of(retention) == [("retention.ms", "3600000", DYNAMIC_TOPIC_CONFIG)]
    assert synonyms_of(configs["max.message.bytes"]) == [("message.max.bytes", "1048588", DEFAULT_CONFIG)]
    if version >= 3:
        assert (retention.config_type, cleanup.config_type) == (LONG, LIST)
        assert retention.documentation
    without = describe(wire, version, TOPIC, name, ["retention.ms"], synonyms=False, documentation=False)
    assert [(c.name, c.synonyms) for c in without.configs] == [("retention.ms", [])]
    if version >= 3:
        assert without.configs[0].documentation is None


def test_topic_synonyms_follow_kafkas_layer_order(wire: Wire) -> None:
    make_topic(wire, "describe-synonyms")
    configs = configs_of(wire, TOPIC, "describe-synonyms", ["retention.ms", "segment.ms", "cleanup.policy"])
    # log.retention.ms is set nowhere, so Kafka drops the hours synonyms and reports the default source,
    # though the value comes from the static log.retention.hours.
    assert configs["retention.ms"].value == str(STATIC_RETENTION_HOURS * HOUR_MS)
    assert (configs["retention.ms"].config_source, synonyms_of(configs["retention.ms"])) == (
        DEFAULT_CONFIG,
        [],
    )
    assert synonyms_of(configs["cleanup.policy"]) == [("log.cleanup.policy", "delete", DEFAULT_CONFIG)]
    assert set(configs) == {"retention.ms", "segment.ms", "cleanup.policy"}


def test_describe_broker_configs(wire: Wire) -> None:
    keys = ["log.retention.hours", "log.retention.ms", "ssl.key.password", "log.dirs", "no.such.config"]
    configs = configs_of(wire, BROKER, "1", keys)
    assert set(configs) == set(keys) - {"no.such.config"}
    hours = configs["log.retention.hours"]
    assert (hours.value, hours.config_source, hours.read_only) == (
        str(STATIC_RETENTION_HOURS),
        STATIC_BROKER_CONFIG,
        True,
    )
    assert synonyms_of(hours) == [
        ("log.retention.hours", str(STATIC_RETENTION_HOURS), STATIC_BROKER_CONFIG),
        ("log.retention.hours", "168", DEFAULT_CONFIG),
    ]
    millis = configs["log.retention.ms"]
    assert (millis.value, millis.config_source, millis.read_only, millis.synonyms) == (
        None,
        DEFAULT_CONFIG,
        False,
        [],
    )
    password = configs["ssl.key.password"]
    # TLS is not built, so no password can be set; an unset one is still described as sensitive.
    assert (password.value, password.is_sensitive, password.config_source, password.config_type) == (
        None,
        True,
        DEFAULT_CONFIG,
        PASSWORD,
    )
    assert synonyms_of(password) == []
    everything = configs_of(wire, BROKER, "1")
    assert len(everything) > 100 and all(c.value is None for c in everything.values() if c.is_sensitive)


def test_describe_configs_errors(wire: Wire) -> None:
    cases = {
        (TOPIC, "no-such-topic"): (UNKNOWN_TOPIC_OR_PARTITION, ""),  # Kafka's unset message
        (TOPIC, "bad name"): (
            INVALID_TOPIC_EXCEPTION,
            "Topic name is invalid: 'bad name' contains one or more characters other than ASCII "
            "alphanumerics, '.', '_' and '-'",
        ),
        (BROKER, "2"): (INVALID_REQUEST, "Unexpected broker id, expected 1 or empty string, but received 2"),
        (BROKER, "one"): (INVALID_REQUEST, "Broker id must be an integer, but it is: one"),
        (BROKER_LOGGER, "1"): (INVALID_REQUEST, "Unsupported resource type: BROKER_LOGGER"),
        (99, "x"): (INVALID_REQUEST, "Unsupported resource type: UNKNOWN"),
    }
    for version in (1, 4):
        for (kind, name), expected in cases.items():
            result = describe(wire, version, kind, name)
            assert (result.error_code, result.error_message, result.configs) == (*expected, []), (kind, name)
    assert describe(wire, 0, TOPIC, "no-such-topic").error_code == UNKNOWN_TOPIC_OR_PARTITION


# ----- AlterConfigs ----------------------------------------------------------------------------------


@pytest.mark.parametrize("version", range(3))
def test_alter_configs_replaces_a_topics_whole_set(wire: Wire, version: int) -> None:
    name = f"alter-v{version}"
    make_topic(wire, name, {"retention.ms": "1000", "cleanup.policy": "compact"})
    assert alter(wire, version, [(TOPIC, name, {"retention.ms": "2000"})]) == [(NONE, None)]
    configs = configs_of(wire, TOPIC, name, ["retention.ms", "cleanup.policy"])
    assert (configs["retention.ms"].value, configs["retention.ms"].config_source) == (
        "2000",
        DYNAMIC_TOPIC_CONFIG,
    )
    assert (configs["cleanup.policy"].value, configs["cleanup.policy"].config_source) == (
        "delete",
        DEFAULT_CONFIG,
    )
    assert alter(wire, version, [(TOPIC, name, {"retention.ms": "5"})], validate_only=True) == [(NONE, None)]
    assert configs_of(wire, TOPIC, name, ["retention.ms"])["retention.ms"].value == "2000"


def test_alter_configs_errors(wire: Wire) -> None:
    make_topic(wire, "alter-errors")
    resource = AlterConfigsRequest.AlterConfigsResource
    duplicate_keys = resource(
        resource_type=TOPIC,
        resource_name="alter-errors",
        configs=[resource.AlterableConfig(name="retention.ms", value=v) for v in ("1", "2")],
    )
    request = AlterConfigsRequest(resources=[duplicate_keys], validate_only=False)
    assert [(r.error_code, r.error_message) for r in wire.send(request, 1).responses] == [
        (INVALID_REQUEST, "Error due to duplicate config keys")
    ]
    results = alter(
        wire,
        2,
        [
            (TOPIC, "alter-no-such-topic", {"retention.ms": "1"}),
            (TOPIC, "alter-errors", {"retention.ms": "soon"}),
            (TOPIC, "alter-errors", {"retention.ms": "1"}),
            (TOPIC, "", {"retention.ms": "1"}),
            (TOPIC, "alter-null", {"retention.ms": None}),
            (TOPIC, "alter-unknown-config", {"no.such.config": "1"}),
            (BROKER, "2", {"log.retention.ms": "1"}),
            (BROKER, "x", {"log.retention.ms": "1"}),
            (BROKER, "1", {"log.dirs": "/elsewhere"}),
            (BROKER, "", {"sasl.enabled.mechanisms": "PLAIN"}),
            (BROKER_LOGGER, "1", {"root": "DEBUG"}),
        ],
    )
    assert results[0] == (UNKNOWN_TOPIC_OR_PARTITION, "The topic 'alter-no-such-topic' does not exist.")
    assert results[1] == results[2] == (INVALID_REQUEST, "Each resource must appear at most once.")
    assert results[3] == (INVALID_REQUEST, "Default topic resources are not allowed.")
    assert results[4] == (INVALID_REQUEST, "Null value not supported for : retention.ms")
    assert results[5] == (INVALID_CONFIG, "Unknown topic config name: no.such.config")
    assert results[6] == (INVALID_REQUEST, "Unexpected broker id, expected 1, but received 2")
    assert results[7] == (INVALID_REQUEST, "Node id must be an integer, but it is: x")
    assert results[8][0] == INVALID_REQUEST and "log.dirs" in str(results[8][1])
    assert results[9][0] == INVALID_REQUEST and "sasl.enabled.mechanisms" in str(results[9][1])
    assert results[10] == (INVALID_REQUEST, "Unknown resource type 8")
    bad_value = alter(wire, 2, [(BROKER, "1", {"log.retention.ms": "soon"})])[0]
    assert bad_value[0] == INVALID_REQUEST and "log.retention.ms" in str(bad_value[1])
    assert alter(wire, 0, [(TOPIC, "alter-errors", {"retention.ms": "soon"})])[0][0] == INVALID_CONFIG


# ----- IncrementalAlterConfigs -----------------------------------------------------------------------


@pytest.mark.parametrize("version", range(2))
def test_incremental_alter_configs_on_a_topic(wire: Wire, version: int) -> None:
    name = f"incremental-v{version}"
    make_topic(wire, name, {"retention.ms": "1000"})

    def current() -> dict[str, tuple[str | None, int]]:
        configs = configs_of(wire, TOPIC, name, ["retention.ms", "cleanup.policy", "segment.ms"])
        return {k: (c.value, c.config_source) for k, c in configs.items()}

    ops = [
        ("cleanup.policy", APPEND, "compact"),
        ("segment.ms", SET, "60000"),
        ("retention.ms", DELETE, None),
    ]
    assert alter_incrementally(wire, version, [(TOPIC, name, ops)]) == [(NONE, None)]
    assert current() == {
        "cleanup.policy": ("delete,compact", DYNAMIC_TOPIC_CONFIG),
        "segment.ms": ("60000", DYNAMIC_TOPIC_CONFIG),
        "retention.ms": (str(STATIC_RETENTION_HOURS * HOUR_MS), DEFAULT_CONFIG),
    }
    assert alter_incrementally(wire, version, [(TOPIC, name, [("cleanup.policy", SUBTRACT, "delete")])]) == [
        (NONE, None)
    ]
    assert current()["cleanup.policy"] == ("compact", DYNAMIC_TOPIC_CONFIG)
    validated = alter_incrementally(
        wire, version, [(TOPIC, name, [("segment.ms", DELETE, None)])], validate_only=True
    )
    assert validated == [(NONE, None)] and current()["segment.ms"] == ("60000", DYNAMIC_TOPIC_CONFIG)


def test_incremental_alter_configs_errors(wire: Wire) -> None:
    make_topic(wire, "incremental-errors")
    results = alter_incrementally(
        wire,
        1,
        [
            (TOPIC, "incremental-errors", [("retention.ms", APPEND, "5")]),
            (TOPIC, "incremental-no-such-topic", [("retention.ms", SET, "5")]),
            (TOPIC, "incremental-null", [("retention.ms", SET, None)]),
            (TOPIC, "incremental-op", [("retention.ms", 7, "1")]),
            (TOPIC, "incremental-dup", [("retention.ms", SET, "1"), ("retention.ms", DELETE, None)]),
            (BROKER, "1", [("log.retention.ms", APPEND, "5")]),
            (BROKER, "", [("log.retention.ms", SET, "never")]),
        ],
    )
    assert results == [
        (INVALID_CONFIG, "Can't APPEND to key retention.ms because its type is not LIST."),
        (UNKNOWN_TOPIC_OR_PARTITION, "The topic 'incremental-no-such-topic' does not exist."),
        (INVALID_REQUEST, "Null value not supported for : retention.ms"),
        (INVALID_REQUEST, "Unknown operations type 7"),
        (INVALID_REQUEST, "Error due to duplicate config keys"),
        (INVALID_CONFIG, "Config value append is not allowed for config key: log.retention.ms"),
        results[6],
    ]
    assert results[6][0] == INVALID_REQUEST


def test_described_documentation_says_what_odradek_does_not_do(wire: Wire) -> None:
    make_topic(wire, "documented", {"message.format.version": "0.10.0"})
    broker = configs_of(wire, BROKER, "1", ["principal.builder.class", "num.io.threads", "listeners"])
    assert broker["principal.builder.class"].documentation.endswith(
        "Refused unless left at its default: odradek builds principals itself (User:<SASL name> or the "
        "mapped certificate name)."
    )
    assert "Accepted without effect: " in broker["num.io.threads"].documentation
    assert broker["listeners"].read_only
    topic = configs_of(wire, TOPIC, "documented", ["message.format.version", "remote.storage.enable"])
    version = topic["message.format.version"]
    assert (version.value, version.config_source) == ("0.10.0", DYNAMIC_TOPIC_CONFIG)
    assert "ignored from 3.0 on" in version.documentation
    assert "odradek has no tiered storage" in topic["remote.storage.enable"].documentation


def test_deleting_an_unknown_config_is_an_error_not_success(wire: Wire) -> None:
    make_topic(wire, "delete-unknown")
    results = alter_incrementally(
        wire,
        1,
        [
            (TOPIC, "delete-unknown", [("retention.msec", DELETE, None)]),
            (BROKER, "1", [("log.retention.msec", DELETE, None)]),
        ],
    )
    assert results == [
        (INVALID_CONFIG, "Unknown topic config name: retention.msec"),
        (INVALID_CONFIG, "Unknown broker config: log.retention.msec"),
    ]


def test_unknown_or_unbuilt_broker_config_is_refused_not_accepted(wire: Wire) -> None:
    results = alter(
        wire,
        1,
        [
            (BROKER, "1", {"no.such.config": "1"}),
            (BROKER, "", {"log.cleaner.io.max.bytes.per.second": "1e6"}),
        ],
    )
    assert results == [
        (INVALID_CONFIG, "Unknown broker config: no.such.config"),
        (
            INVALID_CONFIG,
            "odradek cannot honour log.cleaner.io.max.bytes.per.second: "
            "odradek's cleaner does not bound its memory or I/O rate yet.",
        ),
    ]
    refused = alter_incrementally(
        wire, 0, [(BROKER, "1", [("listener.name.plaintext.ssl.keystore.location", SET, "/x.jks")])]
    )
    assert refused[0][0] == INVALID_CONFIG
    assert "listener.name.plaintext.ssl.keystore.location" in str(refused[0][1])
    assert configs_of(wire, BROKER, "") == {}


def test_broker_dynamic_configs_layers(wire: Wire) -> None:
    make_topic(wire, "incremental-broker")
    assert alter_incrementally(wire, 0, [(BROKER, "", [("log.retention.ms", SET, "7200000")])]) == [
        (NONE, None)
    ]
    default = configs_of(wire, BROKER, "")
    assert {k: (c.value, c.config_source) for k, c in default.items()} == {
        "log.retention.ms": ("7200000", DYNAMIC_DEFAULT_BROKER_CONFIG)
    }
    assert synonyms_of(default["log.retention.ms"]) == [
        ("log.retention.ms", "7200000", DYNAMIC_DEFAULT_BROKER_CONFIG)
    ]
    topic = configs_of(wire, TOPIC, "incremental-broker", ["retention.ms"])["retention.ms"]
    assert (topic.value, topic.config_source) == ("7200000", DYNAMIC_DEFAULT_BROKER_CONFIG)
    assert synonyms_of(topic) == [
        ("log.retention.ms", "7200000", DYNAMIC_DEFAULT_BROKER_CONFIG),
        ("log.retention.hours", str(STATIC_RETENTION_HOURS), STATIC_BROKER_CONFIG),
        ("log.retention.hours", "168", DEFAULT_CONFIG),
    ]
    assert alter(wire, 1, [(BROKER, "1", {"log.retention.ms": "3600000"})]) == [(NONE, None)]
    broker = configs_of(wire, BROKER, "1", ["log.retention.ms"])["log.retention.ms"]
    assert (broker.value, broker.config_source) == ("3600000", DYNAMIC_BROKER_CONFIG)
    assert [s[2] for s in synonyms_of(broker)][:2] == [DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG]
    topic = configs_of(wire, TOPIC, "incremental-broker", ["retention.ms"])["retention.ms"]
    assert (topic.value, topic.config_source) == ("3600000", DYNAMIC_BROKER_CONFIG)
    # Clean up for the other tests of this module: the legacy API replaces a layer with nothing.
    assert alter(wire, 2, [(BROKER, "1", {}), (BROKER, "", {})]) == [(NONE, None), (NONE, None)]
    assert configs_of(wire, BROKER, "") == {}


def test_stored_dynamic_configs_that_no_longer_validate_are_ignored(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    stored = {
        "version": 1,
        "cluster_default": {
            "log.retention.ms": "7200000",
            "log.dirs": "/elsewhere",
            "message.max.bytes": "x",
            "log.cleaner.io.max.bytes.per.second": "1000",  # refused: the cleaner's I/O is not bounded
            "no.such.config": "1",
        },
        "brokers": {"1": {"log.cleaner.backoff.ms": "12345"}, "2": {"log.cleaner.backoff.ms": "1"}},
    }
    (data / "__odradek_broker_configs.json").write_text(json.dumps(stored))
    broker = BrokerProcess(data).start()
    try:
        with Wire(broker.bootstrap) as wire:
            default = configs_of(wire, BROKER, "")
            assert {k: c.value for k, c in default.items()} == {"log.retention.ms": "7200000"}
            own = configs_of(wire, BROKER, "1", ["log.cleaner.backoff.ms", "log.dirs"])
            assert (own["log.cleaner.backoff.ms"].value, own["log.cleaner.backoff.ms"].config_source) == (
                "12345",
                DYNAMIC_BROKER_CONFIG,
            )
            assert own["log.dirs"].value == str(data)
    finally:
        broker.stop()
    logged = broker.log_path.read_text()
    assert "ignoring stored dynamic broker config log.dirs" in logged
    assert (
        "ignoring stored dynamic broker config log.cleaner.io.max.bytes.per.second: odradek cannot honour"
        in logged
    )
    assert "ignoring stored dynamic broker config no.such.config: Unknown broker config" in logged
