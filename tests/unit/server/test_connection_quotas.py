"""Connection quotas without sockets: the overrides' syntax, per-address counts, the creation rate."""

from __future__ import annotations

import pytest

from odradek.config.broker import BrokerConfig
from odradek.config.types import ConfigError
from odradek.server.connection_quotas import ConnectionQuotas, parse_overrides


def config(**settings: str) -> BrokerConfig:
    base = {"node.id": "1", "listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": "/tmp/unused"}
    return BrokerConfig({**base, **{k.replace("_", "."): v for k, v in settings.items()}}, warn_unknown=False)


def test_overrides_name_hosts_and_addresses_in_any_spelling() -> None:
    assert parse_overrides(" 127.0.0.2:5, localhost:7 ,[::1]:3,0:0:0:0:0:0:0:2:4") == {
        "127.0.0.2": 5,
        "127.0.0.1": 7,
        "::1": 3,
        "::2": 4,
    }


@pytest.mark.parametrize("text", ["127.0.0.1", "127.0.0.1:many", ":5"])
def test_an_unusable_override_names_the_config(text: str) -> None:
    with pytest.raises(ConfigError, match=r"max\.connections\.per\.ip\.overrides"):
        parse_overrides(text)


def test_an_address_is_refused_at_its_limit_and_admitted_again_after_a_close() -> None:
    limited = config(max_connections_per_ip="1", max_connections_per_ip_overrides="127.0.0.2:2")
    quotas = ConnectionQuotas(lambda: limited, ["PLAINTEXT"])
    assert quotas.admit("PLAINTEXT", "127.0.0.1") and not quotas.admit("PLAINTEXT", "127.0.0.1")
    assert quotas.admit("PLAINTEXT", "127.0.0.2") and quotas.admit("PLAINTEXT", "127.0.0.2")
    assert not quotas.admit("PLAINTEXT", "127.0.0.2")
    quotas.release("PLAINTEXT", "127.0.0.1")
    assert quotas.admit("PLAINTEXT", "127.0.0.1") and quotas.total == 3


def test_the_creation_rate_delays_the_connection_after_the_limit_until_the_first_leaves_the_second() -> None:
    quotas = ConnectionQuotas(lambda: config(max_connection_creation_rate="2"), ["PLAINTEXT"])
    assert quotas.creation_delay("PLAINTEXT", 0.0) == 0
    quotas.admit("PLAINTEXT", "127.0.0.1")
    quotas.admit("PLAINTEXT", "127.0.0.1")
    first = quotas._created[0]
    assert quotas.creation_delay("PLAINTEXT", first + 0.25) == pytest.approx(0.75)
    assert quotas.creation_delay("PLAINTEXT", first + 1.0) == 0


def test_the_ip_connection_rate_is_asked_of_the_throttle_given_at_construction() -> None:
    """The client quotas' connection_creation_rate check is a constructor argument (it reads the client
    quotas built after the connection quotas, so the broker passes one that asks them once built)."""
    asked: list[str] = []

    def throttle(address: str, _now_ms: int) -> int:
        asked.append(address)
        return 250

    quotas = ConnectionQuotas(lambda: config(), ["PLAINTEXT"], ip_throttle=throttle)
    assert quotas.ip_throttle_ms("0:0:0:0:0:0:0:1") == 250
    assert asked == ["::1"]
    assert ConnectionQuotas(lambda: config(), ["PLAINTEXT"]).ip_throttle_ms("127.0.0.1") == 0
