"""A `sasl.jaas.config` (in a --command-config file, or a Spark option) that cannot be read is refused
without quoting it: what follows the point of failure is most often the password. Issue #25."""

from __future__ import annotations

import pytest

from odradek.spark.security import SecurityConfigError, parse_jaas_login

MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule required"


@pytest.mark.parametrize(
    "options",
    [
        'username="alice" password="s3cret',  # the closing quote forgotten
        'username="alice" password="s3c"ret";',  # a quote inside, unescaped
        'username="alice" password=s3c ret;',  # a space in a bare value
    ],
    ids=["unterminated", "inner-quote", "space"],
)
def test_an_unreadable_jaas_config_is_refused_without_its_password(options: str) -> None:
    """Before: "Cannot read sasl.jaas.config options at: '...'" quoted the rest of the line, the
    password (or its end) included; the CLI printed it, Spark logged it."""
    with pytest.raises(SecurityConfigError) as refused:
        parse_jaas_login(f"{MODULE} {options}", "PLAIN")
    message = str(refused.value)
    assert "s3c" not in message and "ret" not in message
    assert "sasl.jaas.config" in message


@pytest.mark.parametrize("value", ['"true"', "true", '"TRUE"'])
def test_a_delegation_token_login_is_refused_naming_tokenauth(value: str) -> None:
    """Before: `tokenauth` was read and dropped, so librdkafka (whose SCRAM sends no extensions) logged
    in as a user named after the token id and failed with "Invalid user credentials"."""
    scram = "org.apache.kafka.common.security.scram.ScramLoginModule required"
    with pytest.raises(SecurityConfigError, match="tokenauth") as refused:
        parse_jaas_login(f'{scram} username="tokenid" password="hmac" tokenauth={value};', "SCRAM-SHA-512")
    assert "hmac" not in str(refused.value)
    # tokenauth=false is an ordinary SCRAM login
    assert parse_jaas_login(f'{scram} username="u" password="p" tokenauth="false";', "SCRAM-SHA-512") == (
        "u",
        "p",
    )
