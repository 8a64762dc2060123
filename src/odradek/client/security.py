"""TLS and SASL for odradek's own blocking clients, from librdkafka's client settings.

The clients that speak the protocol themselves (the command line's wire client, cli/wire.py, and the
two-phase-commit producer, client/two_phase_commit.py) take the settings a confluent-kafka client
would: `security.protocol` (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL); for TLS `ssl.ca.location` or
`ssl.ca.pem` (else the system's CAs), a client certificate as `ssl.certificate.location` with
`ssl.key.location` (and `ssl.key.password`), `ssl.key.pem` with `ssl.certificate.pem`, or a PKCS12
`ssl.keystore.location` with `ssl.keystore.password`, `enable.ssl.certificate.verification`,
`ssl.endpoint.identification.algorithm` (https, the default, checks the broker's host name; none does
not), `ssl.cipher.suites` (an OpenSSL cipher list, as librdkafka's); for SASL `sasl.mechanism` (or
librdkafka's `sasl.mechanisms`: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512), `sasl.username`, `sasl.password`.
A delegation token (`client_security(config, token=True)`: the username is the token id, the password
its HMAC in base64) logs in with SCRAM and the extension `tokenauth=true`, as Kafka's ScramLoginModule
with `tokenauth="true"`; librdkafka has no setting for it.
Java's settings (JKS stores, `sasl.jaas.config`) are translated to these before (spark/security.py,
cli/client.py).

`client_security(config)` reads them once (ClientSecurityError names a setting it cannot use);
`secure(sock, security, host)` puts a connected socket under TLS and `authenticate(exchange, security)`
runs Kafka's SASL exchange (security/sasl_client.py, shared with the brokers' own connections).
"""

from __future__ import annotations

import os
import socket
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from odradek.protocol.error_codes import ErrorCode
from odradek.security.key_stores import StoreError, read_key_store
from odradek.security.sasl_client import (
    MECHANISMS,
    TOKEN_AUTH_EXTENSION,
    KeyDerivation,
    SaslLoginError,
    SaslRequest,
    sasl_exchange,
)
from odradek.security.tls import load_inline_key

PROTOCOLS: Final = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
#: The settings `client_security` reads; a client that must honour every setting it is given refuses
#: other `ssl.` and `sasl.` ones (`unsupported_settings`).
SETTINGS: Final = frozenset(
    {
        "security.protocol",
        "ssl.ca.location",
        "ssl.ca.pem",
        "ssl.certificate.location",
        "ssl.key.location",
        "ssl.key.password",
        "ssl.key.pem",
        "ssl.certificate.pem",
        "ssl.keystore.location",
        "ssl.keystore.password",
        "enable.ssl.certificate.verification",
        "ssl.endpoint.identification.algorithm",
        "ssl.cipher.suites",
        "sasl.mechanism",
        "sasl.mechanisms",
        "sasl.username",
        "sasl.password",
    }
)

#: Client settings whose values are secrets (librdkafka's and Java's names): never on a command line, where
#: every user of the machine reads them (ps, /proc/PID/cmdline), nor in a log.
SECRET_SETTINGS: Final = frozenset(
    {
        "sasl.password",
        "sasl.jaas.config",
        "sasl.oauthbearer.client.secret",
        "sasl.oauthbearer.config",
        "ssl.key.password",
        "ssl.key.pem",
        "ssl.keystore.password",
        "ssl.keystore.key",
        "ssl.truststore.password",
    }
)

Exchange = Callable[[SaslRequest], Any]


class ClientSecurityError(Exception):
    """A setting that cannot be used, a refused TLS handshake or a refused login; `kafka_code` is
    Kafka's error for a refused login."""

    def __init__(self, message: str, kafka_code: int | None = None) -> None:
        super().__init__(message)
        self.kafka_code = kafka_code


@dataclass(frozen=True)
class SaslCredentials:
    mechanism: str
    username: str
    password: str = field(repr=False)
    #: A delegation token's login (SCRAM with `tokenauth=true`): `username` is the token id.
    token: bool = False


@dataclass(frozen=True)
class ClientSecurity:
    protocol: str = "PLAINTEXT"
    tls: ssl.SSLContext | None = None
    sasl: SaslCredentials | None = None


PLAINTEXT: Final = ClientSecurity()


def client_security(config: Mapping[str, object], *, token: bool = False) -> ClientSecurity:
    """The connection security `config` asks for (`token`: its SASL login is a delegation token's);
    raises ClientSecurityError."""
    protocol = str(config.get("security.protocol", "PLAINTEXT")).strip().upper()
    if protocol not in PROTOCOLS:
        raise ClientSecurityError(f"security.protocol {protocol} is not one of {', '.join(PROTOCOLS)}")
    if token and not protocol.startswith("SASL"):
        raise ClientSecurityError(f"a delegation token logs in with SASL: security.protocol is {protocol}")
    tls = tls_context(config) if protocol in ("SSL", "SASL_SSL") else None
    sasl = _credentials(config, token) if protocol.startswith("SASL") else None
    return ClientSecurity(protocol, tls, sasl)


def is_secret(setting: str) -> bool:
    """Whether a client setting's value is a secret (a password, a private key, a JAAS login line)."""
    name = setting.strip().lower()
    return name in SECRET_SETTINGS or name.endswith((".password", ".secret"))


def unsupported_settings(config: Mapping[str, object]) -> list[str]:
    """The `ssl.` and `sasl.` settings in `config` that these clients do not read."""
    return sorted(k for k in config if k.startswith(("ssl.", "sasl.", "ssl_")) and k not in SETTINGS)


def tls_context(config: Mapping[str, object]) -> ssl.SSLContext:
    ca, ca_pem = config.get("ssl.ca.location"), config.get("ssl.ca.pem")
    # librdkafka's ssl.ca.location is a file or a directory of hashed CA files (openssl rehash)
    ca_directory = bool(ca) and os.path.isdir(str(ca))
    try:
        context = ssl.create_default_context(
            cafile=str(ca) if ca and not ca_directory else None,
            capath=str(ca) if ca_directory else None,
            cadata=str(ca_pem) if ca_pem else None,
        )
        certificate = config.get("ssl.certificate.location")
        password = config.get("ssl.key.password")
        if certificate:
            key = config.get("ssl.key.location")
            context.load_cert_chain(
                str(certificate), str(key) if key else None, str(password) if password else None
            )
        elif config.get("ssl.key.pem") and config.get("ssl.certificate.pem"):
            load_inline_key(
                context,
                str(config["ssl.key.pem"]),
                str(config["ssl.certificate.pem"]),
                str(password) if password else None,
            )
        elif config.get("ssl.keystore.location"):
            _load_pkcs12(context, config)
        ciphers = config.get("ssl.cipher.suites")
        if ciphers:
            context.set_ciphers(str(ciphers))
    except (OSError, ssl.SSLError) as error:  # a file missing or unreadable, a wrong key password
        raise ClientSecurityError(f"the client's TLS settings cannot be used: {error}") from None
    if str(config.get("enable.ssl.certificate.verification", "true")).lower() == "false":
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif str(config.get("ssl.endpoint.identification.algorithm", "https")).lower() == "none":
        context.check_hostname = False
    return context


def secure(sock: socket.socket, security: ClientSecurity, host: str) -> socket.socket:
    """`sock` (connected to `host`) under TLS when the protocol asks for it; on a refused handshake the
    socket is closed and ClientSecurityError raised (not an OSError: retrying will not help)."""
    if security.tls is None:
        return sock
    try:
        return security.tls.wrap_socket(sock, server_hostname=host)
    except ssl.SSLError as error:
        sock.close()
        raise ClientSecurityError(f"TLS with {host} failed: {error}") from None
    except BaseException:
        sock.close()
        raise


def authenticate(exchange: Exchange, security: ClientSecurity) -> None:
    """Log in as `security.sasl` (nothing to do without SASL), sending each request with `exchange`;
    raises ClientSecurityError with Kafka's code when the broker refuses."""
    login = security.sasl
    if login is None:
        return
    extensions = {TOKEN_AUTH_EXTENSION: "true"} if login.token else None
    steps = sasl_exchange(login.mechanism, login.username, login.password, extensions)
    try:
        step = next(steps)
        while True:  # a command-line client: SCRAM's key derivation runs right here
            step = steps.send(step.derive() if isinstance(step, KeyDerivation) else exchange(step))
    except StopIteration:
        return
    except SaslLoginError as error:
        who = f"with delegation token {login.username}" if login.token else f"as {login.username}"
        raise ClientSecurityError(
            f"SASL {login.mechanism} login {who} refused: {error}", error.code
        ) from None


def _credentials(config: Mapping[str, object], token: bool) -> SaslCredentials:
    mechanism = str(config.get("sasl.mechanism", config.get("sasl.mechanisms", "GSSAPI"))).strip().upper()
    if mechanism not in MECHANISMS:
        raise ClientSecurityError(
            f"sasl.mechanism {mechanism} is not supported here ({', '.join(MECHANISMS)})",
            ErrorCode.UNSUPPORTED_SASL_MECHANISM,
        )
    user, password = config.get("sasl.username"), config.get("sasl.password")
    if user is None or password is None:
        raise ClientSecurityError("SASL needs sasl.username and sasl.password in the client settings")
    if token and not mechanism.startswith("SCRAM-"):
        raise ClientSecurityError(
            f"a delegation token logs in with SCRAM-SHA-256 or SCRAM-SHA-512, not sasl.mechanism {mechanism}"
        )
    return SaslCredentials(mechanism, str(user), str(password), token)


def _load_pkcs12(context: ssl.SSLContext, config: Mapping[str, object]) -> None:
    """librdkafka's `ssl.keystore.location` / `ssl.keystore.password`: a PKCS12 file."""
    location, password = str(config["ssl.keystore.location"]), config.get("ssl.keystore.password")
    try:
        material = read_key_store(location, "PKCS12", str(password or ""), None)
    except StoreError as error:
        raise ClientSecurityError(
            f"ssl.keystore.location {location}: the PKCS12 key store cannot be read: {error}"
        ) from None
    load_inline_key(context, material.key_pem, material.chain_pem, None)
