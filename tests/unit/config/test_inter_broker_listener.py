"""The inter-broker listener in cluster mode must be a PLAINTEXT one, since odradek's brokers have no
TLS or SASL client for each other; a single node, with no inter-broker traffic, accepts any.

Before, a cluster broker naming an SSL or SASL listener here started and its peers talked PLAINTEXT to it.
"""

from __future__ import annotations

import pytest

from odradek.config import BrokerConfig
from odradek.config.types import ConfigError

CLUSTER = {"zookeeper.connect": "127.0.0.1:2181", "broker.id": "1"}
TWO_LISTENERS = {
    "listeners": "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093,SASL_SSL://127.0.0.1:9094",
}


def _refusal(settings: dict[str, str]) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        BrokerConfig(settings)
    return caught.value


@pytest.mark.parametrize("listener", ["SSL", "SASL_SSL"])
def test_cluster_broker_with_secured_inter_broker_listener_is_refused_naming_it(listener: str) -> None:
    error = _refusal({**CLUSTER, **TWO_LISTENERS, "inter.broker.listener.name": listener})
    assert error.name == "inter.broker.listener.name"
    assert str(error).startswith("inter.broker.listener.name: ")
    assert f"uses {listener}" in str(error)
    assert "\n" not in str(error)


def test_cluster_broker_whose_protocol_map_secures_the_inter_broker_listener_is_refused() -> None:
    error = _refusal(
        {
            **CLUSTER,
            "listeners": "INTERNAL://127.0.0.1:9092,CLIENT://127.0.0.1:9093",
            "listener.security.protocol.map": "INTERNAL:SASL_PLAINTEXT,CLIENT:PLAINTEXT",
            "inter.broker.listener.name": "INTERNAL",
        }
    )
    assert error.name == "inter.broker.listener.name"
    assert "uses SASL_PLAINTEXT" in str(error)


def test_cluster_broker_whose_default_inter_broker_listener_maps_to_ssl_is_refused() -> None:
    # No inter.broker.listener.name: Kafka picks the listener named after security.inter.broker.protocol.
    error = _refusal(
        {
            **CLUSTER,
            "listeners": "PLAINTEXT://127.0.0.1:9092",
            "listener.security.protocol.map": "PLAINTEXT:SSL",
        }
    )
    assert error.name == "listener.security.protocol.map"
    assert str(error).startswith("listener.security.protocol.map: the inter-broker listener PLAINTEXT uses")
    assert "uses SSL" in str(error)


def test_cluster_broker_without_the_default_inter_broker_listener_is_refused_as_kafka_does() -> None:
    error = _refusal({**CLUSTER, "listeners": "SSL://127.0.0.1:9093"})
    assert error.name == "inter.broker.listener.name"
    assert "must be a listener name defined in advertised.listeners" in str(error)


def test_cluster_broker_with_plaintext_inter_broker_listener_beside_secured_ones_starts() -> None:
    config = BrokerConfig({**CLUSTER, **TWO_LISTENERS, "inter.broker.listener.name": "PLAINTEXT"})
    assert config.inter_broker_listener_name == "PLAINTEXT"
    assert BrokerConfig({**CLUSTER, **TWO_LISTENERS}).zookeeper_connect == "127.0.0.1:2181"


def test_single_node_accepts_a_secured_inter_broker_listener_having_no_inter_broker_traffic() -> None:
    config = BrokerConfig({**TWO_LISTENERS, "inter.broker.listener.name": "SSL"})
    assert config.inter_broker_listener_name == "SSL"
    assert BrokerConfig({"listeners": "SSL://127.0.0.1:9093"}).inter_broker_listener_name is None
