"""Every command that speaks the protocol with odradek's own client (cli/wire.py: configs --entity-default,
quotas, transactions, and the console's DescribeLogDirs and ListGroups) over SASL_SSL, from a
--command-config written as librdkafka names it and as Kafka's own tools take it (`sasl.jaas.config`,
`ssl.truststore.*`): a Kafka user's client.properties works unchanged with every command."""

from __future__ import annotations

import argparse
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from odradek.cli.client import client_config
from odradek.cli.main import build_parser
from odradek.cli.wire import describe_log_dirs, list_groups
from tests.compat.cli.cli_support import odradek, table_rows
from tests.support.requirements import require_executable
from tests.support.security import SecureBroker

pytestmark = pytest.mark.timeout(180)

STYLES = ("librdkafka", "kafka")


def _properties(broker: SecureBroker, path: Path, style: str) -> Path:
    ca = broker.certificates.ca_file
    if style == "librdkafka":
        text = (
            "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.username=carol\n"
            f"sasl.password=carol-secret\nssl.ca.location={ca}\n"
        )
    else:  # as kafka-topics.sh --command-config takes it
        text = (
            "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
            "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
            '    username="carol" password="carol-secret";\n'
            f"ssl.truststore.type=PEM\nssl.truststore.location={ca}\n"
        )
    path.write_text(text)
    return path


@pytest.fixture(params=STYLES)
def style(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def hanging(secure_broker: SecureBroker, style: str) -> Iterator[tuple[str, str, str]]:
    """A topic with a transaction left open on it, and a second transactional id with one open too."""
    plaintext = secure_broker.bootstrap("PLAINTEXT")
    topic, first, second = f"wire-{style}", f"wire-{style}-1", f"wire-{style}-2"
    admin = AdminClient({"bootstrap.servers": plaintext})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(20)
    producers = []
    for transactional_id in (first, second):
        producer = Producer(
            {
                "bootstrap.servers": plaintext,
                "transactional.id": transactional_id,
                "transaction.timeout.ms": 600000,
            }
        )
        producer.init_transactions(20)
        producer.begin_transaction()
        producer.produce(topic, value=b"open", partition=0)
        producer.flush(20)
        producers.append(producer)
    yield topic, first, second
    del producers


def test_every_wire_command_works_over_sasl_ssl_with_the_command_config(
    secure_broker: SecureBroker, tmp_path: Path, style: str, hanging: tuple[str, str, str]
) -> None:
    topic, first, second = hanging
    properties = str(_properties(secure_broker, tmp_path / "client.properties", style))
    bootstrap = secure_broker.bootstrap("SASL_SSL")

    def run(*arguments: str) -> str:
        result = odradek(*arguments, "--command-config", properties, bootstrap=bootstrap)
        assert result.code == 0, (arguments, result.stderr)
        return result.stdout

    default = ("configs", "alter", "--entity-type", "brokers", "--entity-default")
    run(*default, "--add-config", "log.cleaner.backoff.ms=16000")
    try:
        described = run("configs", "describe", "--entity-type", "brokers", "--entity-default")
        assert {
            "NAME": "log.cleaner.backoff.ms",
            "VALUE": "16000",
            "SOURCE": "DYNAMIC_DEFAULT_BROKER_CONFIG",
        } in (table_rows(described, "NAME"))
    finally:
        run(*default, "--delete-config", "log.cleaner.backoff.ms")

    user = f"wire-{style}"
    run("quotas", "alter", "--user", user, "--add-config", "producer_byte_rate=1048576")
    assert "1048576" in run("quotas", "describe", "--user", user)
    run("quotas", "alter", "--user", user, "--delete-config", "producer_byte_rate")

    listed = table_rows(run("transactions", "list", "--state", "Ongoing"), "TransactionalId")
    assert {first, second} <= {row["TransactionalId"] for row in listed}
    [described_txn] = table_rows(
        run("transactions", "describe", "--transactional-id", first), "TransactionalId"
    )
    assert described_txn["TopicPartitions"] == f"{topic}-0"
    aborted = run("transactions", "abort", "--topic", topic, "--partition", "0", "--start-offset", "0")
    assert aborted.startswith("aborted the transaction of producer")
    terminated = run("transactions", "force-terminate", "--transactional-id", second)
    assert terminated.startswith(f"aborted the open transaction of {second} on {topic}-0")

    # the console's own wire calls, from the same settings
    config = client_config(_arguments(properties, bootstrap))
    [log_dir] = describe_log_dirs(config, bootstrap, 30)
    assert topic in {result.name for result in log_dir.topics}
    assert isinstance(list_groups(config, bootstrap, 30), list)


def test_a_wrong_password_in_a_kafka_style_command_config_is_refused_by_name(
    secure_broker: SecureBroker, tmp_path: Path
) -> None:
    properties = _properties(secure_broker, tmp_path / "wrong.properties", "kafka")
    properties.write_text(properties.read_text().replace("carol-secret", "wrong"))
    result = odradek(
        "transactions",
        "list",
        "--command-config",
        str(properties),
        bootstrap=secure_broker.bootstrap("SASL_SSL"),
    )
    assert result.code != 0
    assert "SASL SCRAM-SHA-512 login as carol refused" in result.stderr


def test_a_ca_directory_is_read_as_librdkafka_reads_it(secure_broker: SecureBroker, tmp_path: Path) -> None:
    """librdkafka's ssl.ca.location may be a directory of hashed CA files; the wire client could only
    open a file ("Is a directory")."""
    require_executable("openssl")
    directory = tmp_path / "cas"
    directory.mkdir()
    shutil.copy(secure_broker.certificates.ca_file, directory / "ca.pem")
    subprocess.run(["openssl", "rehash", str(directory)], check=True, capture_output=True)
    properties = _properties(secure_broker, tmp_path / "client.properties", "librdkafka")
    properties.write_text(
        properties.read_text().replace(str(secure_broker.certificates.ca_file), str(directory))
    )
    for command in (("topics", "list"), ("transactions", "list")):
        result = odradek(
            *command, "--command-config", str(properties), bootstrap=secure_broker.bootstrap("SASL_SSL")
        )
        assert result.code == 0, (command, result.stderr)


def test_a_tls_setting_the_wire_client_cannot_honour_is_refused_not_ignored(
    secure_broker: SecureBroker, tmp_path: Path
) -> None:
    """librdkafka checks revocation with ssl.crl.location; the wire client used to skip it silently."""
    properties = _properties(secure_broker, tmp_path / "client.properties", "librdkafka")
    properties.write_text(properties.read_text() + f"ssl.crl.location={tmp_path / 'revoked.pem'}\n")
    result = odradek(
        "transactions",
        "list",
        "--command-config",
        str(properties),
        bootstrap=secure_broker.bootstrap("SASL_SSL"),
    )
    assert result.code != 0
    assert result.stderr.splitlines() == [
        "odradek transactions list: odradek transactions sends its requests without librdkafka (which has "
        "no transaction admin calls): it does not read ssl.crl.location; remove it to go on without it"
    ]


def _arguments(properties: str, bootstrap: str) -> argparse.Namespace:
    return build_parser().parse_args(
        ["topics", "list", "--command-config", properties, "--bootstrap-server", bootstrap]
    )
