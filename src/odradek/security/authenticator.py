"""One connection's SASL state, as Kafka's SaslServerAuthenticator.

A SASL connection may first send ApiVersions, then SaslHandshake naming a mechanism. After a v1
handshake the mechanism's tokens come inside SaslAuthenticate requests; after a v0 handshake they come
as raw size-prefixed frames (no request header). Until the exchange completes, any other request closes
the connection. With `connections.max.reauth.ms`, the session ends that long after authentication
(its lifetime is told in SaslAuthenticate v1+); the client re-authenticates on the same connection
with a new handshake, and a request after the end closes it.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable
from dataclasses import dataclass

from odradek.protocol.error_codes import ErrorCode
from odradek.security.delegation_tokens import TokenCredential
from odradek.security.principal_mapping import ANONYMOUS
from odradek.security.sasl_config import PLAIN, ListenerSasl
from odradek.security.sasl_mechanisms import PlainServer, SaslAuthenticationError, SaslServer, ScramServer
from odradek.security.scram_credentials import ScramCredential

CredentialLookup = Callable[[str, str], ScramCredential | None]
TokenLookup = Callable[[str, str], TokenCredential | None]


class SaslState(enum.Enum):
    HANDSHAKE = "handshake"  # ApiVersions or SaslHandshake expected
    AUTHENTICATE = "authenticate"  # SaslAuthenticate requests carry the tokens (handshake v1)
    RAW_TOKENS = "raw_tokens"  # size-prefixed tokens without a header (handshake v0)
    COMPLETE = "complete"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class HandshakeResult:
    error_code: ErrorCode
    mechanisms: list[str]


@dataclass(frozen=True, slots=True)
class AuthenticateResult:
    error_code: ErrorCode
    error_message: str | None
    auth_bytes: bytes
    session_lifetime_ms: int = 0

    @property
    def failed(self) -> bool:
        return self.error_code != ErrorCode.NONE


class SaslAuthenticator:
    def __init__(
        self, sasl: ListenerSasl, credential_of: CredentialLookup, token_of: TokenLookup | None = None
    ) -> None:
        self.sasl = sasl
        self.credential_of = credential_of
        self.token_of = token_of
        self.state = SaslState.HANDSHAKE
        self.server: SaslServer | None = None
        #: The authenticated principal (``User:alice``; a token's owner); kept across re-authentications.
        self.authenticated_principal: str | None = None
        #: Whether the session is a delegation token's (KafkaPrincipal.tokenAuthenticated): such a
        #: session may not create or renew tokens.
        self.token_authenticated = False
        self.mechanism: str | None = None
        #: time.monotonic() at which the session ends; None: it never does.
        self.session_expires_at: float | None = None

    # ----- where the connection stands --------------------------------------------------------------

    @property
    def authenticated(self) -> bool:
        return self.authenticated_principal is not None and self.state is not SaslState.FAILED

    @property
    def principal(self) -> str:
        return self.authenticated_principal or f"User:{ANONYMOUS}"

    def session_expired(self, now: float | None = None) -> bool:
        expires = self.session_expires_at
        return expires is not None and (time.monotonic() if now is None else now) >= expires

    def allows_request(self) -> bool:
        """Whether a request other than ApiVersions and the SASL ones may be handled now."""
        return self.state is SaslState.COMPLETE and not self.session_expired()

    # ----- the exchange -------------------------------------------------------------------------------

    def handshake(self, mechanism: str, version: int) -> HandshakeResult:
        offered = list(self.sasl.mechanisms)
        reauthenticating = self.state is SaslState.COMPLETE
        if self.state is not SaslState.HANDSHAKE and not (reauthenticating and version >= 1):
            self.state = SaslState.FAILED
            return HandshakeResult(ErrorCode.ILLEGAL_SASL_STATE, offered)
        if mechanism not in offered or (reauthenticating and mechanism != self.mechanism):
            # KIP-368: a re-authentication keeps the mechanism it started with
            self.state = SaslState.FAILED
            return HandshakeResult(ErrorCode.UNSUPPORTED_SASL_MECHANISM, offered)
        self.mechanism = mechanism
        self.server = (
            PlainServer(self.sasl.plain_users)
            if mechanism == PLAIN
            else ScramServer(mechanism, self.credential_of, self.token_of)
        )
        self.state = SaslState.AUTHENTICATE if version >= 1 else SaslState.RAW_TOKENS
        return HandshakeResult(ErrorCode.NONE, offered)

    def authenticate(self, token: bytes, version: int) -> AuthenticateResult:
        """One token of a SaslAuthenticate request (or, after a v0 handshake, a raw frame)."""
        if self.state not in (SaslState.AUTHENTICATE, SaslState.RAW_TOKENS) or self.server is None:
            self.state = SaslState.FAILED
            return AuthenticateResult(
                ErrorCode.ILLEGAL_SASL_STATE,
                "Unexpected SaslAuthenticate request: no SASL handshake is under way",
                b"",
            )
        if len(token) > self.sasl.max_receive_size:
            return self._fail(
                f"Authentication failed: the token of {len(token)} bytes is over sasl.server.max.receive.size"
            )
        try:
            answer = self.server.evaluate(token)
        except SaslAuthenticationError as error:
            return self._fail(str(error))
        if not self.server.complete:
            return AuthenticateResult(ErrorCode.NONE, None, answer)
        session_token = self.server.token if isinstance(self.server, ScramServer) else None
        principal = (
            session_token.owner if session_token is not None else f"User:{self.server.authorization_id}"
        )
        previous = self.authenticated_principal
        if previous is not None and principal != previous:
            return self._fail(
                f"Cannot change principals during re-authentication from {previous} to {principal}"
            )
        self.authenticated_principal = principal
        self.token_authenticated = session_token is not None
        self.state = SaslState.COMPLETE
        lifetime_ms = self.sasl.max_reauth_ms
        if session_token is not None:
            # Kafka's session ends with the token's credential (CREDENTIAL_LIFETIME_MS), with or
            # without connections.max.reauth.ms: the client re-authenticates then, or is closed.
            left_ms = max(session_token.expiry_timestamp_ms - int(time.time() * 1000), 1)
            lifetime_ms = min(lifetime_ms, left_ms) if lifetime_ms > 0 else left_ms
        self.session_expires_at = time.monotonic() + lifetime_ms / 1000 if lifetime_ms > 0 else None
        return AuthenticateResult(ErrorCode.NONE, None, answer, lifetime_ms if version >= 1 else 0)

    def _fail(self, message: str) -> AuthenticateResult:
        self.state = SaslState.FAILED
        return AuthenticateResult(ErrorCode.SASL_AUTHENTICATION_FAILED, message, b"")
