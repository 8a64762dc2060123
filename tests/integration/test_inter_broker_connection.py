"""The brokers' own client (cluster/inter_broker_connection.py) against a real broker's secured
listeners: TLS with the trust store, the key store as client certificate, SASL PLAIN and SCRAM from the
JAAS login, and a refused login or an untrusted certificate reported as InterBrokerAuthenticationError."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme

from odradek.cluster.inter_broker_connection import (
    InterBrokerAuthenticationError,
    InterBrokerSecurity,
    inter_broker_security,
    open_inter_broker_connection,
)
from odradek.config import BrokerConfig
from odradek.protocol.frames import decode_response, encode_request
from odradek.protocol.messages.metadata import MetadataRequest
from tests.support.broker_process import free_port
from tests.support.security import PLAIN_USERS, SCRAM_USERS, SecureBroker, start_secure_broker

pytestmark = pytest.mark.timeout(120)

SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"
PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureBroker]:
    made = start_secure_broker(tmp_path_factory.mktemp("inter-broker-peer"))
    try:
        yield made
    finally:
        made.process.stop()


def _security(broker: SecureBroker, listener: str, protocol: str, **settings: str) -> InterBrokerSecurity:
    """The client side a broker with `settings` would build for its inter-broker `listener`."""
    address = f"{listener}://127.0.0.1:{broker.ports[listener]}"
    config = BrokerConfig(
        {
            "listeners": address,
            "advertised.listeners": address,
            "listener.security.protocol.map": f"{listener}:{protocol}",
            "inter.broker.listener.name": listener,
            "ssl.keystore.type": "PEM",
            "ssl.truststore.type": "PEM",
            **settings,
        },
        warn_unknown=False,
    )
    return inter_broker_security(config)


def _metadata(broker: SecureBroker, listener: str, security: InterBrokerSecurity) -> list[int]:
    """Connect as a broker would and ask for Metadata (refused before authentication)."""

    async def run() -> list[int]:
        reader, writer = await open_inter_broker_connection(
            "127.0.0.1", broker.ports[listener], security, "broker-9"
        )
        try:
            writer.write(encode_request(MetadataRequest(topics=[]), 1, 7, "broker-9"))
            await writer.drain()
            (size,) = struct.unpack(">i", await reader.readexactly(4))
            _, body = decode_response(await reader.readexactly(size), MetadataRequest.API_KEY, 1)
            return [b.node_id for b in body.brokers]
        finally:
            writer.close()

    return asyncio.run(asyncio.wait_for(run(), 30))


def _tls_settings(broker: SecureBroker, keystore: Path | None = None) -> dict[str, str]:
    certificates = broker.certificates
    return {
        "ssl.keystore.location": str(keystore or certificates.broker_keystore),
        "ssl.truststore.location": str(certificates.ca_file),
    }


def test_sasl_ssl_scram_login_from_the_jaas_config_is_accepted(broker: SecureBroker) -> None:
    user, password = next(iter(SCRAM_USERS.items()))
    security = _security(
        broker,
        "SASL_SSL",
        "SASL_SSL",
        **_tls_settings(broker),
        **{
            "sasl.enabled.mechanisms": "SCRAM-SHA-256",
            "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-256",
            "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config": (
                f'{SCRAM} required username="{user}" password="{password}";'
            ),
        },
    )
    assert _metadata(broker, "SASL_SSL", security)


def test_sasl_plaintext_plain_login_is_accepted(broker: SecureBroker) -> None:
    security = _security(
        broker,
        "SASL_PLAINTEXT",
        "SASL_PLAINTEXT",
        **{
            "sasl.enabled.mechanisms": "PLAIN",
            "sasl.mechanism.inter.broker.protocol": "PLAIN",
            "sasl.jaas.config": f'{PLAIN} required username="alice" password="{PLAIN_USERS["alice"]}";',
        },
    )
    assert _metadata(broker, "SASL_PLAINTEXT", security)


def test_key_store_is_presented_to_a_listener_requiring_client_certificates(broker: SecureBroker) -> None:
    security = _security(broker, "MTLS", "SSL", **_tls_settings(broker, broker.certificates.client_keystore))
    assert _metadata(broker, "MTLS", security)


def test_wrong_inter_broker_password_is_refused_with_the_reason(broker: SecureBroker) -> None:
    user = next(iter(SCRAM_USERS))
    security = _security(
        broker,
        "SASL_SSL",
        "SASL_SSL",
        **_tls_settings(broker),
        **{
            "sasl.enabled.mechanisms": "SCRAM-SHA-512",
            "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
            "sasl.jaas.config": f'{SCRAM} required username="{user}" password="wrong";',
        },
    )
    with pytest.raises(InterBrokerAuthenticationError) as caught:
        _metadata(broker, "SASL_SSL", security)
    assert "SASL_AUTHENTICATION_FAILED" in str(caught.value)
    assert f"login as {user}" in str(caught.value)


def test_peer_certificate_from_an_unknown_ca_is_refused(broker: SecureBroker, tmp_path: Path) -> None:
    other_ca = tmp_path / "other-ca.pem"
    trustme.CA().cert_pem.write_to_path(str(other_ca))
    security = _security(
        broker, "SSL", "SSL", **{**_tls_settings(broker), "ssl.truststore.location": str(other_ca)}
    )
    with pytest.raises(InterBrokerAuthenticationError) as caught:
        _metadata(broker, "SSL", security)
    assert "TLS handshake with broker at 127.0.0.1" in str(caught.value)


def test_broker_with_gssapi_between_brokers_refuses_to_start_in_one_line(tmp_path: Path) -> None:
    from tests.integration.test_broker_startup_errors import (
        assert_refused_in_one_line,
        config_file,
        run_broker,
    )

    port = free_port()
    settings = {
        "listeners": f"SASL_PLAINTEXT://127.0.0.1:{port}",
        "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT",
        "inter.broker.listener.name": "SASL_PLAINTEXT",
        "log.dirs": str(tmp_path / "data"),
        "sasl.enabled.mechanisms": "PLAIN",
        "sasl.jaas.config": f'{PLAIN} required username="b" password="p" user_b="p";',
        # sasl.mechanism.inter.broker.protocol left at Kafka's default, GSSAPI
    }
    arguments = config_file(tmp_path / "server.properties", settings)
    line = assert_refused_in_one_line(run_broker(*arguments), "sasl.mechanism.inter.broker.protocol=GSSAPI")
    assert "PLAIN, SCRAM-SHA-256, SCRAM-SHA-512" in line


def test_key_store_changed_at_run_time_is_presented_by_new_inter_broker_connections(
    broker: SecureBroker, tmp_path: Path
) -> None:
    from dataclasses import dataclass

    from odradek.security.tls_reload import TlsReloader

    @dataclass
    class Acceptor:  # the broker's own TLS listener, whose stores are changed
        listener: str
        ssl_context: object

    stranger = tmp_path / "stranger.pem"
    trustme.CA().issue_cert("broker-9").private_key_and_cert_chain_pem.write_to_path(str(stranger))
    address = f"MTLS://127.0.0.1:{broker.ports['MTLS']}"
    settings = {
        "listeners": address,
        "advertised.listeners": address,
        "listener.security.protocol.map": "MTLS:SSL",
        "inter.broker.listener.name": "MTLS",
        "ssl.keystore.type": "PEM",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(broker.certificates.ca_file),
        "listener.name.mtls.ssl.keystore.location": str(stranger),
    }
    config = BrokerConfig(settings, warn_unknown=False)
    security = inter_broker_security(config)
    reloader = TlsReloader(config, security)
    reloader.add_acceptor(Acceptor("MTLS", object()))
    with pytest.raises(InterBrokerAuthenticationError):  # the peer does not trust that certificate
        _metadata(broker, "MTLS", security)
    # AlterConfigs of listener.name.mtls.ssl.keystore.location, as the broker applies it
    trusted = str(broker.certificates.client_keystore)
    reloader.apply(BrokerConfig({**settings, "listener.name.mtls.ssl.keystore.location": trusted}))
    assert _metadata(broker, "MTLS", security)
