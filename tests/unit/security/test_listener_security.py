"""Listener security built from Kafka's settings, and the settings refused with one line naming them."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest
import trustme

from odradek.config import BrokerConfig
from odradek.config.types import ConfigError
from odradek.security.listener_security import listener_security

JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";'


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def keystore(ca: trustme.CA, tmp_path: Path) -> Path:
    path = tmp_path / "broker.pem"
    ca.issue_cert("localhost").private_key_and_cert_chain_pem.write_to_path(str(path))
    return path


def _config(settings: dict[str, str]) -> BrokerConfig:
    return BrokerConfig({"listeners": "PLAINTEXT://:9092", **settings}, warn_unknown=False)


def _tls(keystore: Path, **more: str) -> dict[str, str]:
    return {
        "listeners": "SSL://:9093",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(keystore),
        **{name.replace("_", "."): value for name, value in more.items()},
    }


def _error(settings: dict[str, str]) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        listener_security(_config(settings))
    assert "\n" not in str(caught.value)
    return caught.value


def test_plaintext_listener_needs_nothing() -> None:
    (security,) = listener_security(_config({})).values()
    assert security.tls is None and security.sasl is None


def test_tls_listener_from_a_pem_key_store(keystore: Path) -> None:
    security = listener_security(_config(_tls(keystore)))["SSL"]
    assert security.tls is not None
    assert security.tls.context.verify_mode == ssl.CERT_NONE
    assert security.tls.context.minimum_version == ssl.TLSVersion.TLSv1_2


def test_inline_key_and_chain_with_required_client_auth(ca: trustme.CA) -> None:
    cert = ca.issue_cert("localhost")
    settings = {
        "listeners": "SSL://:9093",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.key": cert.private_key_pem.bytes().decode(),
        "ssl.keystore.certificate.chain": "".join(p.bytes().decode() for p in cert.cert_chain_pems),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.certificates": ca.cert_pem.bytes().decode(),
        "ssl.client.auth": "required",
        "ssl.enabled.protocols": "TLSv1.3",
    }
    tls = listener_security(_config(settings))["SSL"].tls
    assert tls is not None
    assert tls.context.verify_mode == ssl.CERT_REQUIRED
    assert tls.context.minimum_version == ssl.TLSVersion.TLSv1_3


def test_listener_prefixed_settings_win(keystore: Path, tmp_path: Path) -> None:
    settings = {
        **_tls(keystore),
        "ssl.keystore.location": str(tmp_path / "missing.pem"),
        "listener.name.ssl.ssl.keystore.location": str(keystore),
        "listener.name.ssl.ssl.client.auth": "requested",
    }
    tls = listener_security(_config(settings))["SSL"].tls
    assert tls is not None and tls.context.verify_mode == ssl.CERT_OPTIONAL


@pytest.mark.parametrize(
    ("more", "name", "words"),
    [
        ({"ssl.keystore.type": "JKS"}, "ssl.keystore.password", "password (ssl.keystore.password) is not"),
        ({"ssl.keystore.type": "PKCS12"}, "ssl.keystore.password", "password (ssl.keystore.password) is not"),
        ({"ssl.keystore.password": "s3cret"}, "ssl.keystore.password", "cannot be specified with PEM"),
        ({"ssl.enabled.protocols": "TLSv1.1,TLSv1.2"}, "ssl.enabled.protocols", "not TLSv1.1"),
        ({"ssl.protocol": "SSLv3"}, "ssl.protocol", "knows TLS, TLSv1.2 and TLSv1.3"),
        ({"ssl.principal.mapping.rules": "RULE:x"}, "ssl.principal.mapping.rules", "Invalid rule"),
        (
            {"ssl.truststore.location": "/nonexistent/ca.jks"},
            "ssl.truststore.password",
            "needs ssl.truststore",
        ),
    ],
)
def test_tls_settings_that_cannot_be_honoured(
    keystore: Path, more: dict[str, str], name: str, words: str
) -> None:
    error = _error({**_tls(keystore), **more})
    assert error.name == name
    assert words in str(error)
    assert "s3cret" not in str(error)


def test_tls_listener_without_a_key_store_or_with_a_missing_one(tmp_path: Path) -> None:
    assert "set ssl.keystore.location" in str(
        _error({"listeners": "SSL://:9093", "ssl.keystore.type": "PEM"})
    )
    error = _error(_tls(tmp_path / "missing.pem"))
    assert str(error).startswith("ssl.keystore.location: the key and certificate cannot be loaded")


def test_sasl_listener_mechanisms_and_plain_users() -> None:
    settings = {
        "listeners": "SASL_PLAINTEXT://:9094",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
    }
    sasl = listener_security(_config(settings))["SASL_PLAINTEXT"].sasl
    assert sasl is not None
    assert sasl.mechanisms == ("PLAIN", "SCRAM-SHA-512")
    assert sasl.plain_users == {"alice": "alice-secret"}


@pytest.mark.parametrize(
    ("settings", "name", "words"),
    [
        ({}, "sasl.enabled.mechanisms", "not GSSAPI"),  # Kafka's default is Kerberos
        ({"sasl.enabled.mechanisms": "PLAIN"}, "sasl.jaas.config", "has no JAAS config"),
        ({"sasl.enabled.mechanisms": "OAUTHBEARER"}, "sasl.enabled.mechanisms", "not OAUTHBEARER"),
        (
            {"sasl.enabled.mechanisms": "PLAIN", "sasl.jaas.config": "x.y.Z required user_a=b;"},
            "sasl.jaas.config",
            "PlainLoginModule",
        ),
        (
            {"sasl.enabled.mechanisms": "PLAIN", "sasl.jaas.config": "broken"},
            "sasl.jaas.config",
            "control flag",
        ),
    ],
)
def test_sasl_settings_that_cannot_be_honoured(settings: dict[str, str], name: str, words: str) -> None:
    error = _error({"listeners": "SASL_PLAINTEXT://:9094", **settings})
    assert error.name == name
    assert words in str(error)


@pytest.mark.parametrize(
    ("settings", "name"),
    [
        ({"listener.name.plaintext.ssl.client.auth": "required"}, "listener.name.plaintext.ssl.client.auth"),
        (
            {"listener.name.plaintext.sasl.enabled.mechanisms": "PLAIN"},
            "listener.name.plaintext.sasl.enabled.mechanisms",
        ),
    ],
)
def test_a_listener_scoped_security_setting_for_a_listener_that_cannot_read_it_is_refused(
    settings: dict[str, str], name: str
) -> None:
    error = _error(settings)
    assert error.name == name
    assert "does not use" in str(error)


@pytest.mark.parametrize(
    "settings",
    [
        {"ssl.client.auth": "none"},
        {"ssl.keystore.location": "/etc/kafka/broker.jks", "ssl.keystore.password": "secret"},
        {"sasl.enabled.mechanisms": "PLAIN"},
        {"connections.max.reauth.ms": "1000"},
    ],
)
def test_a_kafka_server_properties_with_tls_or_sasl_settings_but_no_such_listener_stopped_the_start(
    settings: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    """Kafka reads these only for TLS or SASL listeners and starts without one; an operator's
    PLAINTEXT-only server.properties often carries them (prepared for later, or left from a template).
    odradek starts too, and says in one warning which settings no listener reads."""
    caplog.set_level("WARNING")
    security = listener_security(_config(settings))
    assert [s.security_protocol for s in security.values()] == ["PLAINTEXT"]
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warned) == 1
    for name in settings:
        assert name in warned[0]
    assert "secret" not in warned[0]
