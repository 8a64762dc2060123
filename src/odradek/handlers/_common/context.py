"""What a handler is given besides its request: who asked, at which version, and the broker's services."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from odradek.protocol.messages.request_header import RequestHeader

if TYPE_CHECKING:
    from odradek.handlers._common.services import Services
    from odradek.security.authenticator import SaslAuthenticator

#: Kafka's principal of an unauthenticated connection (PLAINTEXT, or TLS without a client certificate).
ANONYMOUS_PRINCIPAL = "User:ANONYMOUS"


def _never_closed() -> bool:
    return False


@dataclass(slots=True)
class RequestContext:
    header: RequestHeader
    api_version: int
    client_host: str
    client_port: int
    listener: str
    services: Services
    #: Who sent the request: ``User:<name>`` from SASL or the client certificate, else anonymous.
    principal: str = ANONYMOUS_PRINCIPAL
    #: The listener's security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL).
    security_protocol: str = "PLAINTEXT"
    #: The connection's SASL exchange, on SASL listeners (SaslHandshake and SaslAuthenticate drive it).
    sasl: SaslAuthenticator | None = None
    #: A consumer's Fetch while client quotas are in force: records the answer's record bytes (and the
    #: handling time so far) on the client's quotas and returns the throttle time, 0 if none (KIP-219).
    fetch_quota: Callable[[int], int] | None = None
    #: Whether the connection the request came on has closed since: work done only for its answer
    #: (a client's regex in the regex worker) can be dropped then.
    closed: Callable[[], bool] = _never_closed
    #: The client software (name, version) the connection's ApiVersions v3+ named, if it did (KIP-511).
    client_software: tuple[str, str] | None = None
    #: The broker's number for the connection (0: none). What a client keeps per connection (share
    #: sessions, telemetry instances) goes when it closes.
    connection_id: int = 0

    @property
    def client_id(self) -> str | None:
        return self.header.client_id


class CloseConnection(Exception):
    """Raised by a handler whose request fails but cannot be answered (a Produce with acks=0): the
    connection is closed instead, as Kafka's RequestChannel.closeConnection does, so that the client
    notices. The message says why, for the broker's log; it is not an unexpected error."""
