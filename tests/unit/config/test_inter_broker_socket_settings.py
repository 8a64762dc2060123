"""The socket settings of Kafka's broker-to-broker clients: real, or refused naming them. Kafka 3.9's
socket.connection.setup.timeout.ms and .max.ms (its inter-broker network clients' connect timeout
with backoff) were unknown to odradek: a server.properties setting them got a warning and nothing."""

from __future__ import annotations

import pytest

from odradek.config.broker import BrokerConfig
from odradek.config.types import ConfigError

BASE = {"node.id": "1", "listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": "/tmp/unused"}


@pytest.mark.parametrize(
    ("name", "kafkas_default"),
    [("socket.connection.setup.timeout.ms", "10000"), ("socket.connection.setup.timeout.max.ms", "30000")],
)
def test_connection_setup_timeouts_are_taken_at_kafkas_default_and_refused_otherwise(
    name: str, kafkas_default: str
) -> None:
    config = BrokerConfig({**BASE, name: kafkas_default}, warn_unknown=False)
    assert name not in config.unknown
    assert config[name] == int(kafkas_default)
    with pytest.raises(ConfigError, match=name.replace(".", r"\.")):
        BrokerConfig({**BASE, name: "5000"}, warn_unknown=False)
