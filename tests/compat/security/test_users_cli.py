"""`odradek users add|list|remove`, and client commands over SASL_SSL with --command-config."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.compat.cli.cli_support import odradek, table_rows
from tests.support.security import SecureBroker
from tests.support.security_clients import Access, kcat_round_trip

pytestmark = pytest.mark.timeout(120)


def _client_properties(broker: SecureBroker, path: Path, user: str, password: str, mechanism: str) -> Path:
    path.write_text(
        "security.protocol=SASL_SSL\n"
        f"sasl.mechanism={mechanism}\n"
        f"sasl.username={user}\n"
        f"sasl.password={password}\n"
        f"ssl.ca.location={broker.certificates.ca_file}\n"
    )
    return path


def test_users_added_listed_used_and_removed(secure_broker: SecureBroker, tmp_path: Path) -> None:
    plaintext = secure_broker.bootstrap("PLAINTEXT")
    (tmp_path / "frank.pw").write_text("frank-secret\n")
    added = odradek(
        "users", "add", "--user", "frank", "--password-file", str(tmp_path / "frank.pw"), bootstrap=plaintext
    )
    assert added.code == 0, added.stderr
    assert added.stdout.strip() == "user frank: SCRAM-SHA-256, SCRAM-SHA-512 set (8192 iterations)"
    listed = odradek("users", "list", "--user", "frank", bootstrap=plaintext)
    assert listed.code == 0, listed.stderr
    assert [(r["USER"], r["MECHANISM"], r["ITERATIONS"]) for r in table_rows(listed.stdout, "USER")] == [
        ("frank", "SCRAM-SHA-256", "8192"),
        ("frank", "SCRAM-SHA-512", "8192"),
    ]
    frank = Access("SASL_SSL", "SASL_SSL", "SCRAM-SHA-512", "frank", "frank-secret")
    assert kcat_round_trip(secure_broker, frank, "users-cli-frank", [b"hi"]) == [b"hi"]

    # the same tools over SASL_SSL, authenticated as frank himself
    properties = _client_properties(
        secure_broker, tmp_path / "frank.properties", "frank", "frank-secret", "SCRAM-SHA-256"
    )
    sasl_ssl = secure_broker.bootstrap("SASL_SSL")
    everyone = odradek("users", "list", "--command-config", str(properties), bootstrap=sasl_ssl)
    assert everyone.code == 0, everyone.stderr
    assert {"carol", "frank"} <= {row["USER"] for row in table_rows(everyone.stdout, "USER")}
    topics = odradek("topics", "list", "--command-config", str(properties), bootstrap=sasl_ssl)
    assert topics.code == 0 and "users-cli-frank" in topics.lines()

    removed = odradek("users", "remove", "--user", "frank", bootstrap=plaintext)
    assert removed.code == 0, removed.stderr
    assert removed.stdout.strip() == "user frank: SCRAM-SHA-256, SCRAM-SHA-512 removed"
    gone = odradek("users", "remove", "--user", "frank", bootstrap=plaintext)
    assert gone.code != 0
    assert "user frank has no SCRAM credentials" in gone.stderr


def test_users_add_refusals_are_kafkas(secure_broker: SecureBroker) -> None:
    plaintext = secure_broker.bootstrap("PLAINTEXT")
    few = odradek(
        "users", "add", "--user", "g", "--password", "x", "--iterations", "100", bootstrap=plaintext
    )
    assert few.code != 0
    assert "too few iterations: at least 4096" in few.stderr
    empty = odradek("users", "add", "--user", "g", bootstrap=plaintext, stdin="\n")
    assert empty.code != 0 and "the password must not be empty" in empty.stderr


def test_wrong_password_in_command_config_fails_the_command(
    secure_broker: SecureBroker, tmp_path: Path
) -> None:
    # librdkafka tells the reason (SASL authentication error) only to an error callback; the failed
    # call itself reads as a lost connection, which is what the command can say today
    properties = _client_properties(
        secure_broker, tmp_path / "bad.properties", "carol", "wrong", "SCRAM-SHA-256"
    )
    arguments = ("topics", "list", "--command-config", str(properties), "--request-timeout", "5")
    result = odradek(*arguments, bootstrap=secure_broker.bootstrap("SASL_SSL"))
    assert result.code != 0
    assert "lost the connection to the broker" in result.stderr
