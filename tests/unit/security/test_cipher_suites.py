"""``ssl.cipher.suites`` honoured: TLS 1.2 suites restrict the listener (a client offering only others is
refused), and lists that cannot be honoured because TLS 1.3 suites cannot be narrowed are refused."""

from __future__ import annotations

import contextlib
import ssl
from pathlib import Path

import pytest
import trustme

from odradek.config import BrokerConfig
from odradek.config.types import ConfigError
from odradek.security.cipher_suites import TLS12_SUITES, TLS13_SUITES
from odradek.security.listener_security import listener_security

CHOSEN = "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"  # trustme keys are ECDSA


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


def _context(ca: trustme.CA, tmp_path: Path, **more: str) -> ssl.SSLContext:
    keystore = tmp_path / "broker.pem"
    ca.issue_cert("localhost").private_key_and_cert_chain_pem.write_to_path(str(keystore))
    settings = {
        "listeners": "SSL://:9093",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(keystore),
        **{name.replace("_", "."): value for name, value in more.items()},
    }
    tls = listener_security(BrokerConfig(settings, warn_unknown=False))["SSL"].tls
    assert tls is not None
    return tls.context


def _handshake(server_context: ssl.SSLContext, ca: trustme.CA, ciphers: str | None, tls13: bool) -> str:
    """The suite negotiated with a client offering `ciphers` (TLS 1.2) or TLS 1.3 too."""
    client_context = ssl.create_default_context(cadata=ca.cert_pem.bytes().decode())
    if not tls13:
        client_context.maximum_version = ssl.TLSVersion.TLSv1_2
    if ciphers:
        client_context.set_ciphers(ciphers)
    server_in, server_out, client_in, client_out = (ssl.MemoryBIO() for _ in range(4))
    server = server_context.wrap_bio(server_in, server_out, server_side=True)
    client = client_context.wrap_bio(client_in, client_out, server_hostname="localhost")
    for _ in range(10):
        for side in (client, server):
            with contextlib.suppress(ssl.SSLWantReadError):
                side.do_handshake()
        server_in.write(client_out.read())
        client_in.write(server_out.read())
    negotiated = client.cipher()
    assert negotiated is not None
    return negotiated[0]


def test_every_mapped_suite_is_one_openssl_offers() -> None:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    for openssl_name in TLS12_SUITES.values():
        context.set_ciphers(openssl_name)


def test_a_tls12_only_listener_negotiates_only_the_listed_suite(ca: trustme.CA, tmp_path: Path) -> None:
    context = _context(ca, tmp_path, ssl_enabled_protocols="TLSv1.2", ssl_cipher_suites=CHOSEN)
    assert _handshake(context, ca, None, tls13=False) == TLS12_SUITES[CHOSEN]
    with pytest.raises(ssl.SSLError):
        _handshake(context, ca, "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-CHACHA20-POLY1305", tls13=False)


def test_tls12_suites_are_narrowed_beside_all_tls13_suites(ca: trustme.CA, tmp_path: Path) -> None:
    context = _context(ca, tmp_path, ssl_cipher_suites=",".join([CHOSEN, *TLS13_SUITES]))
    assert _handshake(context, ca, None, tls13=True) in TLS13_SUITES
    assert _handshake(context, ca, None, tls13=False) == TLS12_SUITES[CHOSEN]
    with pytest.raises(ssl.SSLError):
        _handshake(context, ca, "ECDHE-ECDSA-AES128-GCM-SHA256", tls13=False)


def test_only_tls13_suites_leave_tls12_clients_nothing(ca: trustme.CA, tmp_path: Path) -> None:
    context = _context(ca, tmp_path, ssl_cipher_suites=",".join(TLS13_SUITES))
    assert context.minimum_version == ssl.TLSVersion.TLSv1_3
    with pytest.raises(ssl.SSLError):
        _handshake(context, ca, None, tls13=False)


@pytest.mark.parametrize(
    ("more", "words"),
    [
        ({"ssl_cipher_suites": CHOSEN}, "TLS 1.3 suites cannot be restricted"),
        ({"ssl_cipher_suites": "TLS_AES_128_GCM_SHA256"}, "TLS 1.3 suites cannot be restricted"),
        (
            {"ssl_cipher_suites": "TLS_RSA_WITH_RC4_128_MD5"},
            "unknown or unavailable suite(s) TLS_RSA_WITH_RC4",
        ),
        (
            {"ssl_cipher_suites": "TLS_AES_128_GCM_SHA256", "ssl_enabled_protocols": "TLSv1.2"},
            "no TLS 1.2 suite is listed",
        ),
    ],
)
def test_a_list_that_cannot_be_honoured_is_refused_in_one_line(
    ca: trustme.CA, tmp_path: Path, more: dict[str, str], words: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        _context(ca, tmp_path, **more)
    assert caught.value.name == "ssl.cipher.suites"
    assert words in str(caught.value) and "\n" not in str(caught.value)
