"""sasl.jaas.config parsed as Kafka's JaasConfig parses it."""

from __future__ import annotations

import pytest

from odradek.security.jaas import JaasConfigError, parse_jaas_config, plain_users

PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"


def test_plain_login_module_with_users() -> None:
    module = parse_jaas_config(
        f'{PLAIN} required username="admin" password="admin-secret" user_admin="admin-secret" '
        'user_alice="alice;secret=1";'
    )
    assert module.name == PLAIN
    assert module.control_flag == "required"
    assert module.options["username"] == "admin"
    assert plain_users(module) == {"admin": "admin-secret", "alice": "alice;secret=1"}


def test_unquoted_values_comments_escapes_and_newlines() -> None:
    module = parse_jaas_config(
        f"""{PLAIN} REQUIRED // the broker's users
            user_bob=bobpw /* a block
            comment */ user_eve="say \\"hi\\"\\\\"
        ;"""
    )
    assert module.control_flag == "required"
    assert plain_users(module) == {"bob": "bobpw", "eve": 'say "hi"\\'}


def test_no_options_at_all() -> None:
    assert parse_jaas_config(f"{PLAIN} optional;").options == {}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (f'{PLAIN} required user_a="x"', "must end with ';'"),
        (f'{PLAIN} user_a="x";', "expected a control flag"),
        (f'{PLAIN} required user_a "x";', "key=value"),
        (f"{PLAIN} required user_a=;", "key=value"),
        (f"{PLAIN} required; {PLAIN} required;", "contains 2 login modules, should be 1"),
        ("", "contains 0 login modules"),
        ('"quoted" required;', "must start with its class name"),
    ],
)
def test_malformed_config_is_refused_with_a_reason(text: str, message: str) -> None:
    with pytest.raises(JaasConfigError, match=message):
        parse_jaas_config(text)


def test_secrets_stay_out_of_the_repr() -> None:
    module = parse_jaas_config(f'{PLAIN} required user_alice="alice-secret";')
    assert "alice-secret" not in repr(module)
