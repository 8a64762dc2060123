"""The TLS and SASL settings of odradek's own clients (client/security.py): read once, refused clearly."""

from __future__ import annotations

import ssl
from pathlib import Path
from types import SimpleNamespace

import pytest

from odradek.client.security import ClientSecurityError, authenticate, client_security, unsupported_settings
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.sasl_authenticate import SaslAuthenticateRequest
from odradek.security.sasl_client import SaslRequest


def test_plaintext_needs_nothing() -> None:
    security = client_security({"bootstrap.servers": "h:1"})
    assert (security.protocol, security.tls, security.sasl) == ("PLAINTEXT", None, None)


def test_sasl_ssl_reads_librdkafkas_and_javas_mechanism_names(tmp_path: Path) -> None:
    import trustme

    ca = tmp_path / "ca.pem"
    trustme.CA().cert_pem.write_to_path(str(ca))
    for key in ("sasl.mechanisms", "sasl.mechanism"):
        security = client_security(
            {
                "security.protocol": "sasl_ssl",
                key: "scram-sha-256",
                "sasl.username": "u",
                "sasl.password": "p",
                "ssl.ca.location": str(ca),
            }
        )
        assert security.protocol == "SASL_SSL"
        assert security.sasl is not None and security.sasl.mechanism == "SCRAM-SHA-256"
        assert security.tls is not None and security.tls.verify_mode == ssl.CERT_REQUIRED
        assert "p" not in repr(security.sasl)  # the password is never shown


def test_endpoint_identification_none_turns_off_the_host_name_check_only() -> None:
    security = client_security({"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": "none"})
    assert security.tls is not None
    assert not security.tls.check_hostname and security.tls.verify_mode == ssl.CERT_REQUIRED


@pytest.mark.parametrize(
    ("settings", "message", "code"),
    [
        ({"security.protocol": "SASL_TLS"}, "security.protocol SASL_TLS is not one of", None),
        (
            {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "GSSAPI"},
            "sasl.mechanism GSSAPI is not supported here",
            ErrorCode.UNSUPPORTED_SASL_MECHANISM,
        ),
        (
            {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": "u"},
            "SASL needs sasl.username and sasl.password",
            None,
        ),
        ({"security.protocol": "SSL", "ssl.ca.location": "/nonexistent/ca.pem"}, "TLS settings", None),
        ({"security.protocol": "SSL", "ssl.cipher.suites": "NO-SUCH-CIPHER"}, "TLS settings", None),
    ],
)
def test_settings_that_cannot_be_used_are_refused_clearly(
    settings: dict[str, str], message: str, code: int | None
) -> None:
    with pytest.raises(ClientSecurityError, match=message) as refused:
        client_security(settings)
    assert refused.value.kafka_code == code


def test_ssl_and_sasl_settings_these_clients_do_not_read_are_named() -> None:
    settings = {
        "security.protocol": "SSL",
        "ssl.ca.location": "ca.pem",
        "ssl.crl.location": "crl.pem",
        "sasl.oauthbearer.config": "x",
        "linger.ms": "5",
    }
    assert unsupported_settings(settings) == ["sasl.oauthbearer.config", "ssl.crl.location"]


def test_a_token_login_sends_tokenauth_and_names_the_token_when_refused() -> None:
    """A delegation token logs in with SCRAM and `tokenauth=true`; a refusal says it was a token's."""
    security = client_security(
        {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": "tok1",
            "sasl.password": "hmac",
        },
        token=True,
    )
    assert security.sasl is not None and security.sasl.token
    sent: list[bytes] = []

    def exchange(request: SaslRequest) -> object:
        if isinstance(request, SaslAuthenticateRequest):
            sent.append(bytes(request.auth_bytes))
            return SimpleNamespace(error_code=ErrorCode.SASL_AUTHENTICATION_FAILED, error_message="expired")
        return SimpleNamespace(error_code=0)

    with pytest.raises(ClientSecurityError) as refused:
        authenticate(exchange, security)
    assert sent[0].endswith(b",tokenauth=true")
    assert "delegation token tok1" in str(refused.value)
    assert refused.value.kafka_code == ErrorCode.SASL_AUTHENTICATION_FAILED


def test_a_token_login_with_plain_is_refused() -> None:
    with pytest.raises(ClientSecurityError, match="delegation token"):
        client_security(
            {
                "security.protocol": "SASL_SSL",
                "sasl.mechanism": "PLAIN",
                "sasl.username": "tok1",
                "sasl.password": "hmac",
            },
            token=True,
        )
