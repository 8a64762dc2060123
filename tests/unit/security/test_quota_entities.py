"""Client quota entities: Kafka's precedence of the eight levels, validation, ZooKeeper names."""

from __future__ import annotations

import pytest

from odradek.security.quota_entities import (
    DEFAULT,
    PRODUCER_BYTE_RATE,
    QuotaConfigs,
    QuotaEntity,
    QuotaRequestError,
    checked_value,
    config_string,
    desanitize,
    entity_from_wire,
    entity_from_zk_path,
    sanitize,
    zk_entity_path,
)

LEVELS = [
    (QuotaEntity("alice", "app"), 1.0, ("alice", "app")),
    (QuotaEntity("alice", DEFAULT), 2.0, ("alice", "app")),
    (QuotaEntity("alice"), 3.0, ("alice", "")),
    (QuotaEntity(DEFAULT, "app"), 4.0, ("alice", "app")),
    (QuotaEntity(DEFAULT, DEFAULT), 5.0, ("alice", "app")),
    (QuotaEntity(DEFAULT), 6.0, ("alice", "")),
    (QuotaEntity(client_id="app"), 7.0, ("", "app")),
    (QuotaEntity(client_id=DEFAULT), 8.0, ("", "app")),
]


@pytest.mark.parametrize("level", range(len(LEVELS)))
def test_the_most_specific_level_that_sets_the_key_wins(level: int) -> None:
    # Every level from `level` down is configured; the first of them applies, with Kafka's metric
    # tags (user-level quotas are shared by all the user's client ids, client-level by all users).
    configs = QuotaConfigs()
    for entity, value, _ in LEVELS[level:]:
        configs.set(entity, {PRODUCER_BYTE_RATE: value})
    entity, value, tags = LEVELS[level]
    assert configs.lookup(PRODUCER_BYTE_RATE, "alice", "app") == (tags, value)


def test_users_and_user_client_quotas_rank_above_defaults_as_kafka_orders_them() -> None:
    # (alice) is level 5, above (<default>, app) and (<default>, <default>), below (alice, <default>).
    configs = QuotaConfigs()
    configs.set(QuotaEntity("alice"), {PRODUCER_BYTE_RATE: 3.0})
    configs.set(QuotaEntity(DEFAULT, "app"), {PRODUCER_BYTE_RATE: 4.0})
    assert configs.lookup(PRODUCER_BYTE_RATE, "alice", "app") == (("alice", ""), 3.0)
    assert configs.lookup(PRODUCER_BYTE_RATE, "bob", "app") == (("bob", "app"), 4.0)


def test_a_quota_of_another_key_does_not_take_part_in_the_lookup() -> None:
    configs = QuotaConfigs()
    configs.set(QuotaEntity("alice", "app"), {"consumer_byte_rate": 10.0})
    configs.set(QuotaEntity(client_id=DEFAULT), {PRODUCER_BYTE_RATE: 8.0})
    assert configs.lookup(PRODUCER_BYTE_RATE, "alice", "app") == (("", "app"), 8.0)


def test_no_quota_is_unlimited() -> None:
    assert QuotaConfigs().lookup(PRODUCER_BYTE_RATE, "alice", "app") == (("", "app"), None)


def test_removing_every_key_removes_the_entity() -> None:
    configs = QuotaConfigs()
    configs.set(QuotaEntity("alice"), {PRODUCER_BYTE_RATE: 3.0})
    configs.set(QuotaEntity("alice"), {})
    assert configs.by_entity == {}
    assert not configs.has(PRODUCER_BYTE_RATE)


@pytest.mark.parametrize(
    ("parts", "message"),
    [
        ([], "empty client quota entity"),
        ([("user", "")], "Empty user not supported"),
        ([("group", "g")], "Unhandled client quota entity type: group"),
        ([("ip", "1.2.3.4"), ("user", "a")], "IP entity should not be used"),
        ([("ip", "no-such-host.invalid")], "not a valid IP or resolvable host"),
    ],
)
def test_entities_kafka_refuses(parts: list[tuple[str, str | None]], message: str) -> None:
    with pytest.raises(QuotaRequestError, match=message):
        entity_from_wire(parts)


def test_a_null_name_is_the_default() -> None:
    assert entity_from_wire([("user", None), ("client-id", "app")]) == QuotaEntity(DEFAULT, "app")
    assert entity_from_wire([("ip", None)]) == QuotaEntity(ip=DEFAULT)
    assert entity_from_wire([("ip", "localhost")]) == QuotaEntity(ip="localhost")


def test_an_ip_has_its_own_rate_else_the_default_ips() -> None:
    configs = QuotaConfigs()
    configs.set(QuotaEntity(ip=DEFAULT), {"connection_creation_rate": 10.0})
    configs.set(QuotaEntity(ip="localhost"), {"connection_creation_rate": 2.0})  # resolved: 127.0.0.1
    assert configs.ip_rate("127.0.0.1") == 2.0
    assert configs.ip_rate("10.0.0.1") == 10.0
    configs.set(QuotaEntity(ip=DEFAULT), {})
    assert configs.ip_rate("10.0.0.1") is None


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("producer_byte_rate", -1.0, "must be a positive value"),
        ("consumer_byte_rate", 0.0, "must be a positive value"),
        ("producer_byte_rate", 10.5, "must be a LONG value"),
        ("bogus", 1.0, "Invalid configuration key bogus"),
        ("controller_mutation_rate", 1.0, "not built"),
        ("connection_creation_rate", 1.0, "Invalid configuration key connection_creation_rate"),
    ],
)
def test_values_kafka_refuses(key: str, value: float, message: str) -> None:
    with pytest.raises(QuotaRequestError, match=message):
        checked_value(QuotaEntity("alice"), key, value)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("connection_creation_rate", -1.0, "must be a non-negative value"),
        ("connection_creation_rate", 1.5, "must be a LONG value"),
        ("producer_byte_rate", 1.0, "Invalid configuration key producer_byte_rate"),
    ],
)
def test_ip_values_kafka_refuses(key: str, value: float, message: str) -> None:
    with pytest.raises(QuotaRequestError, match=message):
        checked_value(QuotaEntity(ip=DEFAULT), key, value)


def test_values_are_written_as_kafka_writes_them() -> None:
    alice = QuotaEntity("alice")
    assert checked_value(alice, "request_percentage", 12.5) == 12.5
    assert config_string("producer_byte_rate", checked_value(alice, "producer_byte_rate", 1024.0)) == "1024"
    assert config_string("request_percentage", 200.0) == "200.0"
    assert checked_value(QuotaEntity(ip=DEFAULT), "connection_creation_rate", 0.0) == 0.0
    assert config_string("connection_creation_rate", 10.0) == "10"


def test_znode_names_are_sanitized_as_kafkas_sanitizer() -> None:
    assert sanitize("CN=alice, O=x*~") == "CN%3Dalice%2C%20O%3Dx%2A%7E"
    assert desanitize(sanitize("CN=alice, O=x*~")) == "CN=alice, O=x*~"
    assert sanitize(DEFAULT) == "<default>"
    assert desanitize("<default>") is DEFAULT


def test_znode_paths_of_each_entity_and_back() -> None:
    for entity, expected in [
        (QuotaEntity("alice"), ("users", "alice")),
        (QuotaEntity("alice", DEFAULT), ("users", "alice/clients/<default>")),
        (QuotaEntity(client_id="app"), ("clients", "app")),
        (QuotaEntity(ip="::1"), ("ips", "%3A%3A1")),
    ]:
        assert zk_entity_path(entity) == expected
        assert entity_from_zk_path("/".join(expected)) == entity
    assert entity_from_zk_path("topics/t") is None
