"""The client side of Kafka's SASL exchange, sans-io, for every client odradek has: the command-line
wire client (cli/wire_security.py) and the brokers' own connections to each other
(cluster/inter_broker_connection.py).

`sasl_exchange` is a generator: it yields the requests to send (SaslHandshake v1, then the mechanism's
tokens in SaslAuthenticate) and is sent each answer; it returns when the broker accepted the login and
raises SaslLoginError (with Kafka's error code) when it did not. PLAIN sends one token; SCRAM-SHA-256/
512 (RFC 5802) two, and checks the server's signature in the last answer.

SCRAM's salted password is PBKDF2 with as many rounds as the server's first message asks: the exchange
yields that step as a `KeyDerivation` for its driver to run (a driver on an event loop runs it in a
thread) and is sent its result. Kafka's client refuses fewer rounds than the mechanism's minimum (4096);
this one also refuses more than Kafka's maximum (16384, which AlterUserScramCredentials enforces), since
whoever answers on a broker's address could otherwise ask for 2^31-1 rounds, hours of CPU.

SCRAM extensions (RFC 5802, Kafka's ScramExtensions): `extensions` go after the nonce of the client's
first message, `n,,n=<name>,r=<nonce>,tokenauth=true` for a delegation token (KIP-48/84), and are part of
the client-first-bare the proof signs. scramp writes no extensions, so they are added to its message
and to the bare message it signs. A server's first message may carry optional extensions after the
iteration count (ignored, as Kafka's client does); a mandatory one (`m=`) fails the login (RFC 5802).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from scramp import ScramClient, ScramException

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.sasl_authenticate import SaslAuthenticateRequest
from odradek.protocol.messages.sasl_handshake import SaslHandshakeRequest
from odradek.security.scram_credentials import MAX_ITERATIONS

MECHANISMS: Final = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
#: The extension of a delegation token's login (the broker's side: security/delegation_tokens.py).
TOKEN_AUTH_EXTENSION: Final = "tokenauth"
# Kafka's ScramMessages: an extension's name is letters, its value printable ASCII without ',' and '='.
_EXTENSION_NAME = re.compile(r"[A-Za-z]+")
_EXTENSION_VALUE = re.compile(r"[\x01-\x2b\x2d-\x3c\x3e-\x7f]+")


@dataclass(frozen=True)
class KeyDerivation:
    """SCRAM's costly step: `derive` runs PBKDF2 (`iterations` rounds, up to tens of milliseconds) and
    returns the next token, which the driver sends back into the exchange."""

    iterations: int
    derive: Callable[[], bytes]


SaslRequest = SaslHandshakeRequest | SaslAuthenticateRequest
SaslSteps = Generator[SaslRequest | KeyDerivation, Any, None]


class SaslLoginError(Exception):
    """The broker refused the login (or the server's proof was wrong); `code` is Kafka's error."""

    def __init__(self, message: str, code: int = ErrorCode.SASL_AUTHENTICATION_FAILED) -> None:
        super().__init__(message)
        self.code = code


def sasl_exchange(
    mechanism: str, username: str, password: str, extensions: Mapping[str, str] | None = None
) -> SaslSteps:
    """The requests of one login as `username` with `mechanism` (one of MECHANISMS); `extensions`
    (SCRAM only) go in the client's first message."""
    if mechanism not in MECHANISMS:
        raise SaslLoginError(
            f"SASL mechanism {mechanism} is not supported here ({', '.join(MECHANISMS)})",
            ErrorCode.UNSUPPORTED_SASL_MECHANISM,
        )
    suffix = _extensions(mechanism, extensions or {})
    handshake = yield SaslHandshakeRequest(mechanism=mechanism)
    _check(handshake.error_code, None, "SaslHandshake")
    if mechanism == "PLAIN":
        yield from _token(b"\0" + username.encode() + b"\0" + password.encode())
        return
    client = ScramClient([mechanism], username, password)
    try:
        client_first = client.get_client_first() + suffix
        client.client_first_bare += suffix  # the AuthMessage the proof signs holds the extensions
        server_first = yield from _token(client_first.encode())
        client.set_server_first(server_first.decode())
        iterations = int(client.iterations)
        if iterations > MAX_ITERATIONS:  # fewer than Kafka's minimum (4096) scramp refuses itself
            raise SaslLoginError(
                f"Requested iterations {iterations} is more than the maximum {MAX_ITERATIONS} for {mechanism}"
            )
        client_final = yield KeyDerivation(iterations, lambda: client.get_client_final().encode())
        server_final = yield from _token(client_final)
        client.set_server_final(server_final.decode())
    except (ScramException, UnicodeDecodeError) as error:
        raise SaslLoginError(f"SASL {mechanism} authentication failed: {error}") from None


def _extensions(mechanism: str, extensions: Mapping[str, str]) -> str:
    """`,name=value` for each extension, refused (before anything is sent) when one cannot be written."""
    if not extensions:
        return ""
    if mechanism == "PLAIN":
        raise SaslLoginError("SASL PLAIN carries no extensions (a delegation token logs in with SCRAM)")
    for name, value in extensions.items():
        if not _EXTENSION_NAME.fullmatch(name) or not _EXTENSION_VALUE.fullmatch(value):
            raise SaslLoginError(
                f"SCRAM extension {name!r}={value!r} cannot be sent: a name is letters, a value "
                "printable ASCII without ',' or '='"
            )
    return "".join(f",{name}={value}" for name, value in extensions.items())


def _token(token: bytes) -> Generator[SaslRequest, Any, bytes]:
    answer = yield SaslAuthenticateRequest(auth_bytes=token)
    _check(answer.error_code, answer.error_message, "SaslAuthenticate")
    return bytes(answer.auth_bytes)


def _check(code: int, message: str | None, api: str) -> None:
    if code:
        error = ErrorCode.for_code(code)
        raise SaslLoginError(f"{api} failed: {message or error.message.rstrip('.')} ({error.name})", code)
