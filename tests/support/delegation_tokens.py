"""Delegation tokens from a raw client: the four APIs, and a SCRAM login with `tokenauth=true` (the
username is the token id, the password the HMAC in base64), as Kafka's ScramLoginModule sends it."""

from __future__ import annotations

import base64
from dataclasses import dataclass

import scramp

from odradek.protocol.messages.create_delegation_token import CreatableRenewers, CreateDelegationTokenRequest
from odradek.protocol.messages.sasl_authenticate import SaslAuthenticateRequest
from odradek.protocol.messages.sasl_handshake import SaslHandshakeRequest
from tests.support.raw_client import RawClient


@dataclass(frozen=True)
class Login:
    error_code: int
    error_message: str | None
    session_lifetime_ms: int


def scram_login(
    client: RawClient, mechanism: str, username: str, password: str, *, token: bool = False
) -> Login:
    """SaslHandshake v1 then SaslAuthenticate v2 frames; `token`: with the `tokenauth=true` extension."""
    handshake = client.request(SaslHandshakeRequest(mechanism=mechanism), 1)
    assert handshake.error_code == 0, handshake
    scram = scramp.ScramClient([mechanism], username, password)
    first = scram.get_client_first()
    if token:
        first += ",tokenauth=true"
        scram.client_first_bare += ",tokenauth=true"  # the proof covers the extension
    answer = client.request(SaslAuthenticateRequest(auth_bytes=first.encode()), 2)
    if answer.error_code:
        return Login(answer.error_code, answer.error_message, 0)
    scram.set_server_first(answer.auth_bytes.decode())
    final = client.request(SaslAuthenticateRequest(auth_bytes=scram.get_client_final().encode()), 2)
    if not final.error_code:
        scram.set_server_final(final.auth_bytes.decode())
    return Login(final.error_code, final.error_message, final.session_lifetime_ms)


def token_password(hmac: bytes) -> str:
    return base64.b64encode(hmac).decode()


def create_token(client: RawClient, renewers: tuple[str, ...] = (), max_lifetime_ms: int = -1) -> object:
    request = CreateDelegationTokenRequest(
        owner_principal_type=None,
        owner_principal_name=None,
        renewers=[
            CreatableRenewers(principal_type=kind, principal_name=name)
            for kind, _, name in (renewer.partition(":") for renewer in renewers)
        ],
        max_lifetime_ms=max_lifetime_ms,
    )
    return client.request(request, 3)
