"""The inter-broker listener's client side read from Kafka's settings, and what is refused in one line."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest
import trustme

from odradek.cluster.inter_broker_connection import PLAINTEXT, inter_broker_security
from odradek.config import BrokerConfig
from odradek.config.types import ConfigError

SCRAM_LOGIN = (
    'org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="pw";'
)
PLAIN_LOGIN = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="broker" password="pw" user_broker="pw";'
)


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def stores(ca: trustme.CA, tmp_path: Path) -> dict[str, str]:
    keystore, truststore = tmp_path / "broker.pem", tmp_path / "ca.pem"
    ca.issue_cert("127.0.0.1").private_key_and_cert_chain_pem.write_to_path(str(keystore))
    ca.cert_pem.write_to_path(str(truststore))
    return {
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(keystore),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(truststore),
    }


def _config(settings: dict[str, str]) -> BrokerConfig:
    listeners = "CLIENT://127.0.0.1:9092,INTERNAL://127.0.0.1:9093"
    return BrokerConfig(
        {
            "listeners": listeners,
            "advertised.listeners": listeners,
            "listener.security.protocol.map": "CLIENT:PLAINTEXT,INTERNAL:SASL_SSL",
            **settings,
        },
        warn_unknown=False,
    )


def _error(settings: dict[str, str]) -> str:
    with pytest.raises(ConfigError) as caught:
        inter_broker_security(_config(settings))
    message = str(caught.value)
    assert "\n" not in message and "pw" not in message.replace("password", "")
    return message


def test_plaintext_inter_broker_listener_needs_no_tls_nor_login() -> None:
    security = inter_broker_security(_config({"inter.broker.listener.name": "CLIENT"}))
    assert (security.listener_name, security.security_protocol) == ("CLIENT", "PLAINTEXT")
    assert security.tls is None and security.sasl is None


def test_default_is_plaintext_when_no_listener_is_named_plaintext() -> None:
    assert inter_broker_security(_config({})) is PLAINTEXT


def test_sasl_ssl_listener_gives_a_verifying_tls_client_and_the_jaas_login(stores: dict[str, str]) -> None:
    security = inter_broker_security(
        _config(
            {
                **stores,
                "inter.broker.listener.name": "INTERNAL",
                "sasl.enabled.mechanisms": "SCRAM-SHA-512",
                "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
                "listener.name.internal.scram-sha-512.sasl.jaas.config": SCRAM_LOGIN,
            }
        )
    )
    assert security.security_protocol == "SASL_SSL"
    assert security.tls is not None
    assert security.tls.verify_mode == ssl.CERT_REQUIRED and security.tls.check_hostname
    assert security.sasl is not None
    assert (security.sasl.mechanism, security.sasl.username, security.sasl.password) == (
        "SCRAM-SHA-512",
        "broker",
        "pw",
    )
    assert "pw" not in repr(security.sasl)


def test_empty_endpoint_identification_turns_the_host_name_check_off(stores: dict[str, str]) -> None:
    security = inter_broker_security(
        _config(
            {
                **stores,
                "listener.security.protocol.map": "CLIENT:PLAINTEXT,INTERNAL:SSL",
                "inter.broker.listener.name": "INTERNAL",
                "ssl.endpoint.identification.algorithm": "",
            }
        )
    )
    assert security.tls is not None and not security.tls.check_hostname


def test_security_inter_broker_protocol_names_the_listener(stores: dict[str, str]) -> None:
    listeners = "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093"
    config = BrokerConfig(
        {"listeners": listeners, "security.inter.broker.protocol": "SSL", **stores}, warn_unknown=False
    )
    security = inter_broker_security(config)
    assert (security.listener_name, security.security_protocol) == ("SSL", "SSL")
    assert security.tls is not None


@pytest.mark.parametrize("mechanism", ["GSSAPI", "OAUTHBEARER"])
def test_inter_broker_mechanism_not_built_is_refused(stores: dict[str, str], mechanism: str) -> None:
    message = _error(
        {
            **stores,
            "inter.broker.listener.name": "INTERNAL",
            "sasl.enabled.mechanisms": "PLAIN",
            "sasl.jaas.config": PLAIN_LOGIN,
            "sasl.mechanism.inter.broker.protocol": mechanism,
        }
    )
    assert message.startswith(f"sasl.mechanism.inter.broker.protocol={mechanism}: ")


def test_inter_broker_mechanism_not_enabled_on_the_listener_is_refused(stores: dict[str, str]) -> None:
    message = _error(
        {
            **stores,
            "inter.broker.listener.name": "INTERNAL",
            "sasl.enabled.mechanisms": "PLAIN",
            "sasl.jaas.config": PLAIN_LOGIN,
            "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-256",
        }
    )
    assert "must be included in sasl.enabled.mechanisms" in message


def test_inter_broker_sasl_without_username_is_refused(stores: dict[str, str]) -> None:
    message = _error(
        {
            **stores,
            "inter.broker.listener.name": "INTERNAL",
            "sasl.enabled.mechanisms": "PLAIN",
            "listener.name.internal.plain.sasl.jaas.config": (
                'org.apache.kafka.common.security.plain.PlainLoginModule required user_broker="pw";'
            ),
            "sasl.mechanism.inter.broker.protocol": "PLAIN",
        }
    )
    assert message.startswith("listener.name.internal.plain.sasl.jaas.config: ")
    assert "username and password" in message


def test_inter_broker_scram_without_jaas_config_names_the_setting(stores: dict[str, str]) -> None:
    message = _error(
        {
            **stores,
            "inter.broker.listener.name": "INTERNAL",
            "sasl.enabled.mechanisms": "SCRAM-SHA-256",
            "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-256",
        }
    )
    assert "listener.name.internal.scram-sha-256.sasl.jaas.config" in message


def test_inter_broker_protocol_without_such_listener_is_refused() -> None:
    config = BrokerConfig(
        {"listeners": "PLAINTEXT://127.0.0.1:9092", "security.inter.broker.protocol": "SSL"},
        warn_unknown=False,
    )
    with pytest.raises(ConfigError) as caught:
        inter_broker_security(config)
    assert caught.value.name == "security.inter.broker.protocol"


def test_a_cluster_member_with_no_listener_for_the_default_plaintext_inter_broker_protocol_is_refused() -> (
    None
):
    """A single node has no one to connect to; a cluster member whose brokers cannot reach each other
    (no PLAINTEXT listener and none named for them) stops at start-up, as Kafka's, naming the setting."""
    message = _error({"zookeeper.connect": "127.0.0.1:2181"})
    assert "PLAINTEXT is not in advertised.listeners" in message
    with pytest.raises(ConfigError) as caught:
        inter_broker_security(_config({"zookeeper.connect": "127.0.0.1:2181"}))
    assert caught.value.name == "security.inter.broker.protocol"
