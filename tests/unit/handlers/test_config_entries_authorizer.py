"""The authorizer's configs are described as Kafka 3.9 describes them: names its KafkaConfig does not
define, listed only when set, hidden, sensitive and of unknown type (odradek showed the super users)."""

from __future__ import annotations

from odradek.config import BrokerConfig, ConfigSource
from odradek.handlers._common.config_entries import broker_entries


def test_super_users_set_are_described_hidden_as_a_custom_config() -> None:
    config = BrokerConfig(
        {"super.users": "User:admin", "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"}
    )
    (entry,) = broker_entries(config, None, ["super.users"])
    assert (entry.value, entry.sensitive, entry.config_type, entry.read_only) == (None, True, 0, True)
    assert entry.source is ConfigSource.STATIC_BROKER_CONFIG
    assert [(s.name, s.value, s.source) for s in entry.synonyms] == [
        ("super.users", None, ConfigSource.STATIC_BROKER_CONFIG)
    ]


def test_authorizer_configs_not_set_are_not_described() -> None:
    names = {entry.name for entry in broker_entries(BrokerConfig({}), None, None)}
    assert not names & {"super.users", "allow.everyone.if.no.acl.found"}
