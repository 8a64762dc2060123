"""`odradek configs` against a real broker: topic, per-broker and cluster-default configs, and mistakes."""

from __future__ import annotations

from odradek.protocol.api_keys import ApiKey
from tests.compat.cli.cli_support import odradek, requires_api, table_rows
from tests.support.broker_process import BrokerProcess

CONFIG_APIS = (ApiKey.DESCRIBE_CONFIGS, ApiKey.INCREMENTAL_ALTER_CONFIGS)


def test_topic_configs_are_described_and_altered_incrementally(cli_broker: BrokerProcess) -> None:
    bootstrap, topic = cli_broker.bootstrap, "cli-configs"
    requires_api(bootstrap, ApiKey.CREATE_TOPICS, *CONFIG_APIS)
    assert odradek("topics", "create", "--topic", topic, bootstrap=bootstrap).code == 0
    entity = ("--entity-type", "topics", "--entity-name", topic)

    empty = odradek("configs", "describe", *entity, bootstrap=bootstrap)
    assert empty.stdout == f"Dynamic configs for topic '{topic}':\n  (none)\n"
    altered = odradek(
        "configs", "alter", *entity, "--add-config", "retention.ms=60000,cleanup.policy=[compact,delete]",
        bootstrap=bootstrap,
    )  # fmt: skip
    assert (altered.code, altered.stdout) == (0, f"Completed updating config for topic '{topic}'.\n")
    described = odradek("configs", "describe", *entity, bootstrap=bootstrap)
    assert described.lines()[0] == f"Dynamic configs for topic '{topic}':"
    assert table_rows(described.stdout, "NAME") == [
        {"NAME": "cleanup.policy", "VALUE": "compact,delete", "SOURCE": "DYNAMIC_TOPIC_CONFIG"},
        {"NAME": "retention.ms", "VALUE": "60000", "SOURCE": "DYNAMIC_TOPIC_CONFIG"},
    ]

    assert (
        odradek("configs", "alter", *entity, "--delete-config", "retention.ms", bootstrap=bootstrap).code == 0
    )
    rows = table_rows(odradek("configs", "describe", *entity, bootstrap=bootstrap).stdout, "NAME")
    assert [row["NAME"] for row in rows] == ["cleanup.policy"]
    everything = odradek("configs", "describe", *entity, "--all", bootstrap=bootstrap)
    assert everything.lines()[0] == f"All configs for topic '{topic}':"
    by_name = {row["NAME"]: row for row in table_rows(everything.stdout, "NAME")}
    assert by_name["cleanup.policy"]["SOURCE"] == "DYNAMIC_TOPIC_CONFIG"
    assert by_name["retention.ms"]["SOURCE"] != "DYNAMIC_TOPIC_CONFIG"
    assert "segment.bytes" in by_name and "max.message.bytes" in by_name


def test_broker_configs_per_broker_and_for_the_cluster_default(cli_broker: BrokerProcess) -> None:
    bootstrap = cli_broker.bootstrap
    requires_api(bootstrap, *CONFIG_APIS)
    broker = ("--entity-type", "brokers", "--entity-name", "1")
    default = ("--entity-type", "brokers", "--entity-default")
    try:
        one = odradek(
            "configs", "alter", *broker, "--add-config", "log.retention.ms=86400000", bootstrap=bootstrap
        )
        assert (one.code, one.stdout) == (0, "Completed updating config for broker 1.\n"), one.stderr
        every = odradek(
            "configs", "alter", *default, "--add-config", "log.retention.ms=172800000", bootstrap=bootstrap
        )
        assert (every.code, every.stdout) == (
            0,
            "Completed updating config for the default of all brokers.\n",
        )

        described = odradek("configs", "describe", *broker, bootstrap=bootstrap)
        assert described.lines()[0] == "Dynamic configs for broker 1:"
        assert {
            "NAME": "log.retention.ms",
            "VALUE": "86400000",
            "SOURCE": "DYNAMIC_BROKER_CONFIG",
        } in table_rows(described.stdout, "NAME")
        defaults = odradek("configs", "describe", *default, bootstrap=bootstrap)
        assert defaults.lines()[0] == "Dynamic configs for the default of all brokers:"
        assert table_rows(defaults.stdout, "NAME") == [
            {"NAME": "log.retention.ms", "VALUE": "172800000", "SOURCE": "DYNAMIC_DEFAULT_BROKER_CONFIG"}
        ]
        listed = odradek("configs", "describe", "--entity-type", "brokers", bootstrap=bootstrap)
        assert listed.lines()[0] == "Dynamic configs for broker 1:"
    finally:
        odradek("configs", "alter", *broker, "--delete-config", "log.retention.ms", bootstrap=bootstrap)
        odradek("configs", "alter", *default, "--delete-config", "log.retention.ms", bootstrap=bootstrap)
    cleared = odradek("configs", "describe", *default, bootstrap=bootstrap)
    assert cleared.stdout == "Dynamic configs for the default of all brokers:\n  (none)\n"


def test_config_mistakes_are_named(cli_broker: BrokerProcess) -> None:
    bootstrap = cli_broker.bootstrap
    requires_api(bootstrap, *CONFIG_APIS)
    topic = ("--entity-type", "topics", "--entity-name", "cli-configs-missing")

    missing = odradek("configs", "describe", *topic, bootstrap=bootstrap)
    assert (missing.code, missing.stderr) == (
        1,
        "odradek configs describe: topic 'cli-configs-missing' does not exist\n",
    )
    no_broker = odradek(
        "configs", "describe", "--entity-type", "brokers", "--entity-name", "7", bootstrap=bootstrap
    )
    assert (no_broker.code, no_broker.stderr) == (
        1,
        "odradek configs describe: broker 7 does not exist (the cluster has 1)\n",
    )
    assert odradek("topics", "create", "--topic", "cli-configs-bad", bootstrap=bootstrap).code in (0, 1)
    bad_value = odradek(
        "configs", "alter", "--entity-type", "topics", "--entity-name", "cli-configs-bad",
        "--add-config", "retention.ms=soon", bootstrap=bootstrap,
    )  # fmt: skip
    assert bad_value.code == 1
    assert bad_value.stderr.startswith("odradek configs alter: ") and "retention.ms" in bad_value.stderr

    usage = [
        ("alter", *topic),
        ("alter", *topic, "--add-config", "a=1", "--delete-config", "a"),
        ("describe", "--entity-type", "topics", "--entity-default"),
        ("describe", "--entity-type", "brokers", "--entity-name", "one"),
        ("alter", *topic, "--add-config", "novalue"),
    ]
    for arguments in usage:
        run = odradek("configs", *arguments, bootstrap=bootstrap)
        assert run.code == 2, (arguments, run)
        assert run.stderr.startswith("odradek configs") or "usage:" in run.stderr


def test_delete_config_of_an_unknown_name_is_an_error_not_success(cli_broker: BrokerProcess) -> None:
    bootstrap = cli_broker.bootstrap
    requires_api(bootstrap, ApiKey.CREATE_TOPICS, *CONFIG_APIS)
    assert odradek("topics", "create", "--topic", "cli-configs-typo", bootstrap=bootstrap).code in (0, 1)
    topic = ("--entity-type", "topics", "--entity-name", "cli-configs-typo")
    broker = ("--entity-type", "brokers", "--entity-name", "1")
    for arguments, complaint in (
        ((*topic, "--delete-config", "retention.msec"), "unknown topic config name: retention.msec"),
        ((*broker, "--delete-config", "log.retention.msec"), "unknown broker config: log.retention.msec"),
        ((*broker, "--add-config", "no.such.config=1"), "unknown broker config: no.such.config"),
    ):
        run = odradek("configs", "alter", *arguments, bootstrap=bootstrap)
        assert (run.code, run.stdout, run.stderr) == (1, "", f"odradek configs alter: {complaint}\n")
