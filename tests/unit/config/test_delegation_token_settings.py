"""The `delegation.token.*` settings are real: read as Kafka's KafkaConfig reads them, and a period
that is not positive stops the start naming the setting (Kafka's atLeast(1))."""

from __future__ import annotations

import pytest

from odradek.config.broker import BrokerConfig
from odradek.config.types import ConfigError
from odradek.security.delegation_tokens import token_settings


@pytest.mark.parametrize(
    "name",
    [
        "delegation.token.max.lifetime.ms",
        "delegation.token.expiry.time.ms",
        "delegation.token.expiry.check.interval.ms",
    ],
)
@pytest.mark.parametrize("value", ["0", "-1"])
def test_a_token_period_that_is_not_positive_refuses_to_start_naming_it(name: str, value: str) -> None:
    with pytest.raises(ConfigError) as caught:
        BrokerConfig({name: value})
    assert caught.value.name == name


def test_the_secret_key_signs_tokens_and_the_deprecated_master_key_stands_in_for_it() -> None:
    assert not token_settings(BrokerConfig({})).enabled
    assert not token_settings(BrokerConfig({"delegation.token.secret.key": ""})).enabled
    assert token_settings(BrokerConfig({"delegation.token.master.key": "old"})).secret_key == "old"
    both = BrokerConfig({"delegation.token.master.key": "old", "delegation.token.secret.key": "new"})
    assert token_settings(both).secret_key == "new"
    settings = token_settings(
        BrokerConfig(
            {
                "delegation.token.secret.key": "k",
                "delegation.token.max.lifetime.ms": "5000",
                "delegation.token.expiry.time.ms": "1000",
            }
        )
    )
    assert (settings.enabled, settings.max_lifetime_ms, settings.expiry_time_ms) == (True, 5000, 1000)
