"""TLS listeners from JKS and PKCS12 key and trust stores made with keytool, and the stores refused
at start-up with one line naming the setting."""

from __future__ import annotations

import contextlib
import ssl
from dataclasses import dataclass
from pathlib import Path

import pytest
import trustme

from odradek.config import BrokerConfig
from odradek.config.types import ConfigError
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.security.listener_security import listener_security
from odradek.security.tls_reload import TlsReloader
from tests.support.java_stores import key_store, trust_store

STORE_TYPES = ("JKS", "PKCS12")


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


def _settings(tmp_path: Path, ca: trustme.CA, store_type: str, **more: str) -> dict[str, str]:
    keystore = key_store(ca.issue_cert("localhost"), tmp_path / "broker.ks", store_type, "store-pw")
    truststore = trust_store(ca, tmp_path / "trust.ks", store_type, "trust-pw")
    return {
        "listeners": "SSL://:9093",
        "ssl.keystore.type": store_type,
        "ssl.keystore.location": str(keystore),
        "ssl.keystore.password": "store-pw",
        "ssl.truststore.type": store_type,
        "ssl.truststore.location": str(truststore),
        "ssl.truststore.password": "trust-pw",
        **{name.replace("_", "."): value for name, value in more.items()},
    }


def _error(settings: dict[str, str]) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        listener_security(BrokerConfig(settings, warn_unknown=False))
    assert "\n" not in str(caught.value)
    for secret in ("store-pw", "trust-pw", "wrong-pw"):
        assert secret not in str(caught.value)
    return caught.value


def _handshake(context: ssl.SSLContext, ca: trustme.CA, client: trustme.LeafCert | None) -> None:
    """A TLS handshake in memory between the listener's context and a client trusting `ca`."""
    client_context = ssl.create_default_context(cadata=ca.cert_pem.bytes().decode())
    if client is not None:
        client.configure_cert(client_context)
    server_in, server_out, client_in, client_out = (ssl.MemoryBIO() for _ in range(4))
    server = context.wrap_bio(server_in, server_out, server_side=True)
    peer = client_context.wrap_bio(client_in, client_out, server_hostname="localhost")
    for _ in range(10):
        for side in (peer, server):
            with contextlib.suppress(ssl.SSLWantReadError):
                side.do_handshake()
        server_in.write(client_out.read())
        client_in.write(server_out.read())
    assert server.version() is not None and peer.version() is not None
    if client is not None:
        assert server.getpeercert() is not None


@pytest.mark.parametrize("store_type", STORE_TYPES)
def test_listener_presents_the_key_of_a_keytool_store(
    tmp_path: Path, ca: trustme.CA, store_type: str
) -> None:
    tls = listener_security(BrokerConfig(_settings(tmp_path, ca, store_type), warn_unknown=False))["SSL"].tls
    assert tls is not None
    _handshake(tls.context, ca, None)


@pytest.mark.parametrize("store_type", STORE_TYPES)
def test_client_certificates_are_checked_against_a_keytool_trust_store(
    tmp_path: Path, ca: trustme.CA, store_type: str
) -> None:
    settings = _settings(tmp_path, ca, store_type, ssl_client_auth="required")
    tls = listener_security(BrokerConfig(settings, warn_unknown=False))["SSL"].tls
    assert tls is not None and tls.context.verify_mode == ssl.CERT_REQUIRED
    _handshake(tls.context, ca, ca.issue_cert("client@example.com"))
    with pytest.raises(ssl.SSLCertVerificationError, match="certificate verify failed"):
        _handshake(tls.context, ca, trustme.CA().issue_cert("stranger@example.com"))


@pytest.mark.parametrize("store_type", STORE_TYPES)
def test_a_listener_prefixed_store_is_read_for_its_listener(
    tmp_path: Path, ca: trustme.CA, store_type: str
) -> None:
    settings = _settings(tmp_path, ca, store_type)
    for name in ("ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password"):
        settings[f"listener.name.ssl.{name}"] = settings.pop(name)
    settings["ssl.keystore.type"] = "PEM"
    tls = listener_security(BrokerConfig(settings, warn_unknown=False))["SSL"].tls
    assert tls is not None
    _handshake(tls.context, ca, None)


@pytest.mark.parametrize("store_type", STORE_TYPES)
@pytest.mark.parametrize(
    ("change", "name", "words"),
    [
        ({"ssl.keystore.password": "wrong-pw"}, "ssl.keystore.location", "key store cannot be loaded"),
        ({"ssl.key.password": "wrong-pw"}, "ssl.keystore.location", "key password is wrong"),
        ({"ssl.keystore.password": None}, "ssl.keystore.password", "password (ssl.keystore.password) is not"),
        ({"ssl.keystore.location": "/nonexistent/broker.ks"}, "ssl.keystore.location", "No such file"),
        ({"ssl.truststore.password": "wrong-pw"}, "ssl.truststore.location", "trust store cannot be loaded"),
        ({"ssl.truststore.password": None}, "ssl.truststore.password", "needs ssl.truststore.password"),
        ({"ssl.keystore.type": "BCFKS"}, "ssl.keystore.type", "reads JKS, PKCS12 and PEM stores"),
    ],
)
def test_a_store_that_cannot_be_read_is_refused_in_one_line(
    tmp_path: Path, ca: trustme.CA, store_type: str, change: dict[str, str | None], name: str, words: str
) -> None:
    settings = _settings(tmp_path, ca, store_type)
    for key, value in change.items():
        if value is None:
            settings.pop(key)
        else:
            settings[key] = value
    error = _error(settings)
    assert error.name == name
    assert words in str(error)


def test_a_jks_store_read_as_pkcs12_is_refused(tmp_path: Path, ca: trustme.CA) -> None:
    settings = {**_settings(tmp_path, ca, "JKS"), "ssl.keystore.type": "PKCS12"}
    assert "PKCS12 key store cannot be loaded" in str(_error(settings))


@dataclass
class _Acceptor:
    listener: str
    ssl_context: ssl.SSLContext | None


def test_alter_configs_with_a_wrong_store_password_is_invalid_config_and_changes_nothing(
    tmp_path: Path, ca: trustme.CA
) -> None:
    settings = _settings(tmp_path, ca, "JKS")
    config = BrokerConfig(settings, warn_unknown=False)
    acceptor = _Acceptor("SSL", listener_security(config)["SSL"].tls.context)  # type: ignore[union-attr]
    before = acceptor.ssl_context
    reloader = TlsReloader(config)
    reloader.add_acceptor(acceptor)
    wrong = BrokerConfig(
        {**settings, "listener.name.ssl.ssl.keystore.password": "wrong-pw"}, warn_unknown=False
    )
    with pytest.raises(KafkaError) as caught:
        reloader.apply(wrong)
    assert caught.value.error_code is ErrorCode.INVALID_CONFIG
    message = str(caught.value.error_message)
    assert "ssl.keystore.location" in message and "store password is wrong" in message
    assert "wrong-pw" not in message
    assert acceptor.ssl_context is before
    # a new PKCS12 store under the same listener is taken
    pkcs12 = key_store(ca.issue_cert("localhost"), tmp_path / "new.p12", "PKCS12", "new-store-pw")
    changed = {
        **settings,
        "listener.name.ssl.ssl.keystore.type": "PKCS12",
        "listener.name.ssl.ssl.keystore.location": str(pkcs12),
        "listener.name.ssl.ssl.keystore.password": "new-store-pw",
    }
    reloader.apply(BrokerConfig(changed, warn_unknown=False))
    assert acceptor.ssl_context is not before and acceptor.ssl_context is not None
    _handshake(acceptor.ssl_context, ca, None)


def test_a_reloader_made_before_the_listeners_are_bound_reloads_the_acceptors_registered_since(
    tmp_path: Path, ca: trustme.CA
) -> None:
    """The broker builds its reloader with its services, before its listeners are bound; each bound
    TLS acceptor registers with it (a plain one is not kept), and a new store reaches them all."""
    settings = {**_settings(tmp_path, ca, "PKCS12"), "listeners": "SSL://:9093,PLAIN://:9092"}
    settings["listener.security.protocol.map"] = "SSL:SSL,PLAIN:PLAINTEXT"
    config = BrokerConfig(settings, warn_unknown=False)
    reloader = TlsReloader(config)
    context = listener_security(config)["SSL"].tls.context  # type: ignore[union-attr]
    ipv4, ipv6, plain = _Acceptor("SSL", context), _Acceptor("SSL", context), _Acceptor("PLAIN", None)
    for acceptor in (ipv4, ipv6, plain):
        reloader.add_acceptor(acceptor)
    reloader.apply(config)  # nothing changed: nothing rebuilt
    assert ipv4.ssl_context is context and ipv6.ssl_context is context
    new = key_store(ca.issue_cert("localhost"), tmp_path / "new.p12", "PKCS12", "new-store-pw")
    changed = {
        **settings,
        "listener.name.ssl.ssl.keystore.location": str(new),
        "listener.name.ssl.ssl.keystore.password": "new-store-pw",
    }
    reloader.apply(BrokerConfig(changed, warn_unknown=False))
    assert ipv4.ssl_context is not context and ipv4.ssl_context is ipv6.ssl_context
    assert plain.ssl_context is None
