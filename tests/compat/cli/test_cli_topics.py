"""`odradek topics` against a real broker: the round trip, its error messages and exit codes, and help."""

from __future__ import annotations

from odradek.protocol.api_keys import ApiKey
from tests.compat.cli.cli_support import odradek, requires_all_topics_listing, requires_api, table_rows
from tests.support.broker_process import BrokerProcess, free_port

TOPIC_ADMIN_APIS = (
    ApiKey.CREATE_TOPICS,
    ApiKey.DELETE_TOPICS,
    ApiKey.CREATE_PARTITIONS,
    ApiKey.DESCRIBE_CONFIGS,
    ApiKey.INCREMENTAL_ALTER_CONFIGS,
)


def test_create_describe_alter_delete_round_trip(cli_broker: BrokerProcess) -> None:
    bootstrap = cli_broker.bootstrap
    requires_api(bootstrap, *TOPIC_ADMIN_APIS)
    topic = "cli-round-trip"

    created = odradek(
        "topics", "create", "--topic", topic, "--partitions", "2", "--config", "retention.ms=3600000",
        bootstrap=bootstrap,
    )  # fmt: skip
    assert (created.code, created.stdout, created.stderr) == (0, f"Created topic {topic}.\n", "")

    again = odradek("topics", "create", "--topic", topic, bootstrap=bootstrap)
    assert again.code == 1
    assert again.stderr == f"odradek topics create: topic '{topic}' already exists\n"
    quiet = odradek("topics", "create", "--topic", topic, "--if-not-exists", bootstrap=bootstrap)
    assert (quiet.code, quiet.stdout, quiet.stderr) == (0, "", "")

    described = odradek("topics", "describe", "--topic", topic, bootstrap=bootstrap)
    assert described.code == 0, described.stderr
    header, configs = described.lines()[:2]
    assert header.startswith(f"Topic: {topic}   TopicId: ")
    assert header.endswith("   PartitionCount: 2   ReplicationFactor: 1")
    assert configs == "Configs: retention.ms=3600000"
    assert table_rows(described.stdout, "PARTITION") == [
        {"PARTITION": "0", "LEADER": "1", "REPLICAS": "1", "ISR": "1"},
        {"PARTITION": "1", "LEADER": "1", "REPLICAS": "1", "ISR": "1"},
    ]

    grown = odradek("topics", "alter", "--topic", topic, "--partitions", "4", bootstrap=bootstrap)
    assert (grown.code, grown.stdout) == (0, f"Topic {topic} now has 4 partitions (was 2).\n")
    shrink = odradek("topics", "alter", "--topic", topic, "--partitions", "3", bootstrap=bootstrap)
    assert shrink.code == 1
    assert "has 4 partitions; partitions can be added, not removed" in shrink.stderr

    reconfigured = odradek(
        "topics", "alter", "--topic", topic,
        "--config", "cleanup.policy=compact", "--delete-config", "retention.ms",
        bootstrap=bootstrap,
    )  # fmt: skip
    assert reconfigured.code == 0, reconfigured.stderr
    assert (
        reconfigured.stdout
        == f"Updated configs of topic {topic}: cleanup.policy=compact, retention.ms removed.\n"
    )
    described = odradek("topics", "describe", "--topic", topic, bootstrap=bootstrap)
    assert "PartitionCount: 4" in described.lines()[0]
    assert described.lines()[1] == "Configs: cleanup.policy=compact"

    deleted = odradek("topics", "delete", "--topic", topic, bootstrap=bootstrap)
    assert (deleted.code, deleted.stdout) == (0, f"Deleted topic {topic}.\n")
    gone = odradek("topics", "delete", "--topic", topic, bootstrap=bootstrap)
    assert (gone.code, gone.stderr) == (1, f"odradek topics delete: topic '{topic}' does not exist\n")
    assert odradek("topics", "delete", "--topic", topic, "--if-exists", bootstrap=bootstrap).code == 0
    missing = odradek("topics", "describe", "--topic", topic, bootstrap=bootstrap)
    assert (missing.code, missing.stderr) == (1, f"odradek topics describe: topic '{topic}' does not exist\n")
    assert odradek("topics", "describe", "--topic", topic, "--if-exists", bootstrap=bootstrap).code == 0
    altered = odradek("topics", "alter", "--topic", topic, "--partitions", "5", bootstrap=bootstrap)
    assert (altered.code, altered.stderr) == (1, f"odradek topics alter: topic '{topic}' does not exist\n")


def test_create_with_a_bad_config_says_what_the_broker_said(cli_broker: BrokerProcess) -> None:
    requires_api(cli_broker.bootstrap, ApiKey.CREATE_TOPICS)
    run = odradek(
        "topics", "create", "--topic", "cli-bad-config", "--config", "retention.ms=soon",
        bootstrap=cli_broker.bootstrap,
    )  # fmt: skip
    assert run.code == 1
    assert run.stderr.startswith("odradek topics create: ") and "retention.ms" in run.stderr


def test_list_with_and_without_a_pattern(cli_broker: BrokerProcess) -> None:
    bootstrap = cli_broker.bootstrap
    requires_api(bootstrap, ApiKey.CREATE_TOPICS)
    requires_all_topics_listing(bootstrap)
    for topic in ("cli-list-a", "cli-list-b", "cli-other"):
        assert odradek("topics", "create", "--topic", topic, bootstrap=bootstrap).code == 0
    listed = odradek("topics", "list", bootstrap=bootstrap)
    assert listed.code == 0
    assert {"cli-list-a", "cli-list-b", "cli-other"} <= set(listed.lines())
    assert listed.lines() == sorted(listed.lines())
    matching = odradek("topics", "list", "--topic", "cli-list-.*", bootstrap=bootstrap)
    assert matching.lines() == ["cli-list-a", "cli-list-b"]
    internal = odradek("topics", "list", "--exclude-internal", bootstrap=bootstrap)
    assert not [name for name in internal.lines() if name.startswith("__")]


def test_an_unreachable_broker_is_named_with_a_failing_exit_code() -> None:
    address = f"127.0.0.1:{free_port()}"
    for command in (("topics", "list"), ("produce", "--topic", "t"), ("groups", "list")):
        run = odradek(*command, bootstrap=address)
        name = " ".join(command[:2] if command[0] in ("topics", "groups") else command[:1])
        assert run.code == 1, run
        assert run.stderr == f"odradek {name}: cannot reach broker at {address} (connection refused)\n"


def test_command_line_mistakes_are_usage_errors() -> None:
    nothing = odradek("topics", "alter", "--topic", "t")
    assert nothing.code == 2
    assert "nothing to alter: give --partitions, --config or --delete-config" in nothing.stderr
    no_topic = odradek("topics", "create")
    assert no_topic.code == 2 and "the following arguments are required: --topic" in no_topic.stderr
    bad_number = odradek("topics", "create", "--topic", "t", "--partitions", "zero")
    assert bad_number.code == 2 and "expected a whole number, got 'zero'" in bad_number.stderr
    bad_regex = odradek("topics", "list", "--topic", "(")
    assert bad_regex.code == 2 and "not a valid regular expression" in bad_regex.stderr


def test_help_names_every_command_and_its_options() -> None:
    top = odradek("--help")
    assert top.code == 0
    for name in ("broker", "topics", "produce", "consume", "configs", "groups"):
        assert f"    {name}" in top.stdout
    create = odradek("topics", "create", "--help")
    assert "--if-not-exists" in create.stdout and "--bootstrap-server HOST:PORT" in create.stdout
    assert "examples:" in odradek("topics", "--help").stdout
