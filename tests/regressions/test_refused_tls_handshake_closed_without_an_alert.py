"""A TLS handshake the broker refused (no client certificate on a listener with ssl.client.auth=required,
or one from a CA it does not trust) was closed without the alert OpenSSL had written for the client:
asyncio's TLS protocol drops a failed handshake's output. Kafka's broker sends the alert, and the Java
client raises SslAuthenticationException on it; seeing only a closed connection, the Java client took it
for a network fault and retried until its timeout (tests/compat/java SecurityTest
aClientWithoutACertificateFailsTheHandshake). The client must read an alert, not the end of the stream.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme

from tests.support.security import SecureBroker, start_secure_broker

pytestmark = pytest.mark.timeout(90)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureBroker]:
    secure = start_secure_broker(tmp_path_factory.mktemp("tls-alert"))
    try:
        yield secure
    finally:
        secure.process.stop()


@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3])
def test_a_client_without_a_certificate_reads_the_alert_of_the_refused_handshake(
    broker: SecureBroker, version: ssl.TLSVersion
) -> None:
    context = _client_context(broker, version)
    refusal = _refusal(broker, context)
    expected = "CERTIFICATE_REQUIRED" if version == ssl.TLSVersion.TLSv1_3 else "HANDSHAKE_FAILURE"
    assert expected in refusal


def test_a_client_with_an_untrusted_certificate_reads_the_alert_of_the_refused_handshake(
    broker: SecureBroker, tmp_path: Path
) -> None:
    context = _client_context(broker, ssl.TLSVersion.TLSv1_3)
    stranger = trustme.CA().issue_cert("stranger@example.com", common_name="stranger")
    keystore = tmp_path / "stranger.pem"
    stranger.private_key_and_cert_chain_pem.write_to_path(str(keystore))
    context.load_cert_chain(str(keystore))
    assert "UNKNOWN_CA" in _refusal(broker, context)


def _client_context(broker: SecureBroker, version: ssl.TLSVersion) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.load_verify_locations(str(broker.certificates.ca_file))
    context.minimum_version = context.maximum_version = version
    return context


def _refusal(broker: SecureBroker, context: ssl.SSLContext) -> str:
    """The reason of the alert the client read, or what it saw instead, upper-cased."""
    with socket.create_connection(("127.0.0.1", broker.ports["MTLS"]), timeout=20) as raw:
        try:
            with context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
                # TLS 1.3: the client's side of the handshake is over before the broker has checked
                # its certificate, so the refusal arrives on the first read
                tls.sendall(b"\x00\x00\x00\x00")
                received = tls.recv(1)
        except ssl.SSLError as error:
            return f"{type(error).__name__}: {error.reason}".upper()
        except OSError as error:
            return f"no alert: {error!r}"
    return f"no alert: read {received!r}"
