"""The client settings every command builds (cli/client.py), from a client.properties written for Kafka's
own tools: the one place both librdkafka's clients and odradek's wire client get their settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from odradek.cli.client import client_config
from odradek.cli.errors import CliError
from odradek.cli.main import build_parser


def _config(tmp_path: Path, text: str, *extra: str) -> dict[str, object]:
    path = tmp_path / "client.properties"
    path.write_text(text)
    args = build_parser().parse_args(["topics", "list", "--command-config", str(path), *extra])
    return dict(client_config(args))


def test_a_jaas_login_line_becomes_librdkafkas_username_and_password(tmp_path: Path) -> None:
    config = _config(
        tmp_path,
        "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-256\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
        '  username="carol" password="pass word";\n'
        "ssl.endpoint.identification.algorithm=\n",
    )
    assert "sasl.jaas.config" not in config
    assert (config["sasl.username"], config["sasl.password"]) == ("carol", "pass word")
    assert config["ssl.endpoint.identification.algorithm"] == "none"  # Java's empty: no host name check
    assert config["socket.timeout.ms"] == 30000  # the command's own settings keep their types


def test_librdkafkas_own_names_win_over_the_jaas_line(tmp_path: Path) -> None:
    config = _config(
        tmp_path,
        "sasl.mechanism=PLAIN\nsasl.username=given\n"
        'sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="jaas" '
        'password="secret";\n',
    )
    assert (config["sasl.username"], config["sasl.password"]) == ("given", "secret")


def test_a_login_module_that_cannot_serve_the_mechanism_is_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(CliError, match=r"does not serve sasl\.mechanism SCRAM-SHA-512"):
        _config(
            tmp_path,
            "sasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config=org.apache.kafka.common.security.plain."
            'PlainLoginModule required username="a" password="b";\n',
        )
