"""SCRAM extensions in the client's first message (RFC 5802, Kafka's ScramExtensions, KIP-84): a
delegation token logs in with `tokenauth=true` after the nonce, and the client's proof covers it; a
hostile or broken server's first message is refused with SASL_AUTHENTICATION_FAILED, never a crash."""

from __future__ import annotations

import base64
import re
import time
from collections.abc import Callable

import pytest

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.sasl_authenticate import SaslAuthenticateRequest
from odradek.protocol.messages.sasl_handshake import SaslHandshakeRequest
from odradek.security.authenticator import SaslAuthenticator
from odradek.security.delegation_tokens import (
    DelegationTokenManager,
    TokenInformation,
    TokenSettings,
    token_hmac,
)
from odradek.security.sasl_client import KeyDerivation, SaslLoginError, SaslRequest, SaslSteps, sasl_exchange
from odradek.security.sasl_config import ListenerSasl

TOKEN = {"tokenauth": "true"}
SECRET = "the-secret-key"
SASL = ListenerSasl("SASL_PLAINTEXT", ("SCRAM-SHA-256", "SCRAM-SHA-512"), {}, 4096, 0, 0)


class _NoStore:
    async def write(self, token: TokenInformation) -> None:
        pass

    async def delete(self, token_id: str) -> None:
        pass


class Answer:
    def __init__(self, auth_bytes: bytes = b"", error_code: int = 0) -> None:
        self.auth_bytes = auth_bytes
        self.error_code = error_code
        self.error_message: str | None = None


def _drive(steps: SaslSteps, answer: Callable[[SaslRequest], Answer]) -> list[SaslRequest]:
    sent = []
    step = next(steps)
    try:
        while True:
            if isinstance(step, KeyDerivation):
                step = steps.send(step.derive())
                continue
            sent.append(step)
            step = steps.send(answer(step))
    except StopIteration:
        return sent


def _first_token(steps: SaslSteps) -> str:
    assert isinstance(next(steps), SaslHandshakeRequest)
    first = steps.send(Answer())
    assert isinstance(first, SaslAuthenticateRequest)
    return bytes(first.auth_bytes).decode()


def test_a_token_login_sends_tokenauth_after_the_nonce_of_the_client_first_message() -> None:
    first = _first_token(sasl_exchange("SCRAM-SHA-256", "token-id", "hmac", TOKEN))
    assert re.fullmatch(r"n,,n=token-id,r=[!-+\--~]+,tokenauth=true", first), first


def test_a_login_without_extensions_sends_none() -> None:
    first = _first_token(sasl_exchange("SCRAM-SHA-512", "alice", "pw"))
    assert re.fullmatch(r"n,,n=alice,r=[!-+\--~]+", first), first


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_a_token_login_is_accepted_by_the_brokers_authenticator_as_the_tokens_owner(mechanism: str) -> None:
    """The broker hashes the client-first-bare it received, extensions and all (RFC 5802's
    AuthMessage): a client whose proof left `,tokenauth=true` out would be refused."""
    now = int(time.time() * 1000)
    token = TokenInformation("tok1", "User:alice", "User:alice", (), now, now + 3_600_000, now + 60_000)
    tokens = DelegationTokenManager(TokenSettings(SECRET, 3_600_000, 60_000), _NoStore(), (token,))
    auth = SaslAuthenticator(SASL, lambda user, mechanism: None, tokens.credential)
    password = base64.b64encode(token_hmac("tok1", SECRET)).decode()

    def answer(request: SaslRequest) -> Answer:
        if isinstance(request, SaslHandshakeRequest):
            assert auth.handshake(request.mechanism, 1).error_code is ErrorCode.NONE
            return Answer()
        assert isinstance(request, SaslAuthenticateRequest)
        reply = auth.authenticate(bytes(request.auth_bytes), 1)
        return Answer(reply.auth_bytes, reply.error_code)

    assert len(_drive(sasl_exchange(mechanism, "tok1", password, TOKEN), answer)) == 3
    assert auth.principal == "User:alice"


@pytest.mark.parametrize(
    "extensions",
    [{"token auth": "true"}, {"tokenauth": "a,b"}, {"tokenauth": "a=b"}, {"": "true"}, {"tokenauth": ""}],
)
def test_an_extension_that_cannot_be_written_is_refused_before_anything_is_sent(
    extensions: dict[str, str],
) -> None:
    with pytest.raises(SaslLoginError, match="SCRAM extension") as caught:
        next(sasl_exchange("SCRAM-SHA-256", "token-id", "hmac", extensions))
    assert caught.value.code == ErrorCode.SASL_AUTHENTICATION_FAILED


def test_extensions_with_plain_are_refused() -> None:
    with pytest.raises(SaslLoginError, match="PLAIN"):
        next(sasl_exchange("PLAIN", "token-id", "hmac", TOKEN))


def _hostile(server_first: Callable[[str], bytes]) -> Callable[[SaslRequest], Answer]:
    """A server that answers the client-first (given its nonce) with `server_first(nonce)`."""

    def answer(request: SaslRequest) -> Answer:
        if isinstance(request, SaslHandshakeRequest):
            return Answer()
        assert isinstance(request, SaslAuthenticateRequest)
        token = bytes(request.auth_bytes).decode()
        nonce = dict(p.split("=", 1) for p in token.split(",")[2:])["r"]
        return Answer(server_first(nonce))

    return answer


SALT = base64.b64encode(b"sixteen-byte-slt").decode()


@pytest.mark.parametrize(
    "server_first",
    [
        # RFC 5802: a mandatory extension the client does not know fails the login (Kafka's parser
        # accepts and ignores `m=`; odradek follows the RFC, as scramp does)
        lambda nonce: f"m=tokenauth,r={nonce}x,s={SALT},i=4096".encode(),
        lambda nonce: f"r=not-my-nonce,s={SALT},i=4096".encode(),  # another exchange's nonce
        lambda nonce: f"r={nonce}x,s={SALT}".encode(),  # no iteration count
        lambda nonce: f"r={nonce}x,s=@@@,i=4096".encode(),  # salt not base64
        lambda nonce: f"r={nonce}x,s={SALT},i=many".encode(),
        lambda nonce: f"r={nonce}x,s={SALT},i=4096,tokenauth".encode(),  # an extension without '='
        lambda nonce: f"r={nonce}x,s={SALT},i=4096,".encode() + b"e=\xff\xfe",  # not UTF-8
        lambda nonce: b"",
        lambda nonce: ("r=" + nonce + "x," * 100_000).encode(),  # a megabyte of garbage
    ],
)
def test_a_hostile_or_malformed_server_first_message_is_refused_cleanly(
    server_first: Callable[[str], bytes],
) -> None:
    with pytest.raises(SaslLoginError) as caught:
        _drive(sasl_exchange("SCRAM-SHA-256", "token-id", "hmac", TOKEN), _hostile(server_first))
    assert caught.value.code == ErrorCode.SASL_AUTHENTICATION_FAILED


def test_optional_extensions_in_the_server_first_message_are_ignored_as_kafka_does() -> None:
    """RFC 5802 lets a server add extensions after the iteration count; Kafka's client ignores them. The
    login goes on to the key derivation (and fails later only on the server's signature)."""
    steps = sasl_exchange("SCRAM-SHA-256", "token-id", "hmac", TOKEN)
    answer = _hostile(lambda nonce: f"r={nonce}x,s={SALT},i=4096,x=1,y=2".encode())
    step = next(steps)
    while not isinstance(step, KeyDerivation):
        step = steps.send(answer(step))
    assert step.iterations == 4096
