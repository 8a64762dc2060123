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
