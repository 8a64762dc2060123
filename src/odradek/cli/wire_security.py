"""TLS and SASL for the commands that speak the protocol themselves (wire.py), from the same client
settings librdkafka reads (`--command-config`, `-X`): `security.protocol` (PLAINTEXT, SSL,
SASL_PLAINTEXT, SASL_SSL), `ssl.ca.location`, `ssl.certificate.location`, `ssl.key.location`,
`ssl.key.password`, `enable.ssl.certificate.verification`, `ssl.endpoint.identification.algorithm`,
`sasl.mechanism` (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512), `sasl.username`, `sasl.password`.

The SASL exchange is Kafka's: SaslHandshake v1, then the mechanism's tokens in SaslAuthenticate.
Other settings of these families (keystores, GSSAPI, OAUTHBEARER) are refused with one line.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Callable
from typing import Any, Final

from odradek.cli.client import ClientConfig
from odradek.cli.errors import CliError
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.sasl_authenticate import SaslAuthenticateRequest
from odradek.protocol.messages.sasl_handshake import SaslHandshakeRequest

PROTOCOLS: Final = ("plaintext", "ssl", "sasl_plaintext", "sasl_ssl")
MECHANISMS: Final = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")

Exchange = Callable[[Any], Any]


def security_protocol(config: ClientConfig, what: str) -> str:
    protocol = str(config.get("security.protocol", "plaintext")).lower()
    if protocol not in PROTOCOLS:
        raise CliError(f"{what}: security.protocol {protocol.upper()} is not one of PLAINTEXT, SSL, SASL_*")
    return protocol


def wrap_tls(sock: socket.socket, config: ClientConfig, host: str) -> socket.socket:
    """The connection over TLS, trusting `ssl.ca.location` (else the system's CAs)."""
    ca = config.get("ssl.ca.location")
    context = ssl.create_default_context(cafile=str(ca) if ca else None)
    certificate = config.get("ssl.certificate.location")
    if certificate:
        key = config.get("ssl.key.location")
        password = config.get("ssl.key.password")
        context.load_cert_chain(
            str(certificate), str(key) if key else None, str(password) if password else None
        )
    if str(config.get("enable.ssl.certificate.verification", "true")).lower() == "false":
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif str(config.get("ssl.endpoint.identification.algorithm", "https")).lower() == "none":
        context.check_hostname = False
    try:
        return context.wrap_socket(sock, server_hostname=host)
    except (ssl.SSLError, OSError) as error:
        sock.close()
        raise CliError(f"TLS with {host} failed: {error}") from None


def authenticate(exchange: Exchange, config: ClientConfig) -> None:
    """Run the SASL exchange of `sasl.mechanism` as `sasl.username`; raises CliError when refused."""
    mechanism = str(config.get("sasl.mechanism", "GSSAPI")).upper()
    if mechanism not in MECHANISMS:
        raise CliError(
            f"sasl.mechanism {mechanism} is not supported here (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)"
        )
    user, password = config.get("sasl.username"), config.get("sasl.password")
    if user is None or password is None:
        raise CliError("SASL needs sasl.username and sasl.password in the client settings")
    handshake = exchange(SaslHandshakeRequest(mechanism=mechanism))
    _check(handshake.error_code, None, "SaslHandshake")
    if mechanism == "PLAIN":
        _token(exchange, b"\0" + str(user).encode() + b"\0" + str(password).encode())
        return
    from scramp import ScramClient, ScramException

    client = ScramClient([mechanism], str(user), str(password))
    try:
        client.set_server_first(_token(exchange, client.get_client_first().encode()).decode())
        client.set_server_final(_token(exchange, client.get_client_final().encode()).decode())
    except ScramException as error:
        raise CliError(f"SASL {mechanism} authentication failed: {error}") from None


def _token(exchange: Exchange, token: bytes) -> bytes:
    answer = exchange(SaslAuthenticateRequest(auth_bytes=token))
    _check(answer.error_code, answer.error_message, "SaslAuthenticate")
    return bytes(answer.auth_bytes)


def _check(code: int, message: str | None, api: str) -> None:
    if code:
        error = ErrorCode.for_code(code)
        raise CliError(
            f"{api} failed: {message or error.message.rstrip('.')} ({error.name})", kafka_code=code
        )
