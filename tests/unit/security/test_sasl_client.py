"""The SASL client exchange shared by the wire client and the brokers' own connections: the requests
it sends, and the refusals it reports with Kafka's error codes."""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
import scramp

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.sasl_authenticate import SaslAuthenticateRequest
from odradek.protocol.messages.sasl_handshake import SaslHandshakeRequest
from odradek.security.sasl_client import KeyDerivation, SaslLoginError, SaslRequest, SaslSteps, sasl_exchange


@dataclass
class Answer:
    error_code: int = 0
    error_message: str | None = None
    auth_bytes: bytes = b""


def _drive(steps: SaslSteps, answer: Callable[[SaslRequest], Answer]) -> list[SaslRequest]:
    """Run the exchange, answering each request with answer(request) and running the key derivation
    inline; the requests sent."""
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


def test_plain_sends_the_handshake_then_one_token() -> None:
    sent = _drive(sasl_exchange("PLAIN", "broker", "pw"), lambda request: Answer())
    assert isinstance(sent[0], SaslHandshakeRequest) and sent[0].mechanism == "PLAIN"
    assert isinstance(sent[1], SaslAuthenticateRequest) and sent[1].auth_bytes == b"\0broker\0pw"
    assert len(sent) == 2


def _scram_server(mechanism: str, password: str) -> Any:
    auth = scramp.ScramMechanism(mechanism).make_auth_info(password, iteration_count=4096)
    return scramp.ScramMechanism(mechanism).make_server(lambda username: auth)


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_completes_against_a_server_knowing_the_password(mechanism: str) -> None:
    server = _scram_server(mechanism, "pw")

    def answer(request: SaslRequest) -> Answer:
        if isinstance(request, SaslHandshakeRequest):
            return Answer()
        assert isinstance(request, SaslAuthenticateRequest)
        token = request.auth_bytes.decode()
        if "p=" not in token:
            server.set_client_first(token)
            return Answer(auth_bytes=server.get_server_first().encode())
        server.set_client_final(token)
        return Answer(auth_bytes=server.get_server_final().encode())

    assert len(_drive(sasl_exchange(mechanism, "broker", "pw"), answer)) == 3


def test_scram_server_with_a_wrong_signature_is_refused() -> None:
    # a server that does not know the password cannot prove it does
    client_side = sasl_exchange("SCRAM-SHA-256", "broker", "pw")
    other = _scram_server("SCRAM-SHA-256", "pw")

    def answer(request: SaslRequest) -> Answer:
        if isinstance(request, SaslHandshakeRequest):
            return Answer()
        assert isinstance(request, SaslAuthenticateRequest)
        token = request.auth_bytes.decode()
        if "p=" not in token:
            other.set_client_first(token)
            return Answer(auth_bytes=other.get_server_first().encode())
        return Answer(auth_bytes=b"v=" + b"A" * 44)

    with pytest.raises(SaslLoginError) as caught:
        _drive(client_side, answer)
    assert caught.value.code == ErrorCode.SASL_AUTHENTICATION_FAILED


def test_refusal_carries_the_brokers_error_code_and_message() -> None:
    def answer(request: SaslRequest) -> Answer:
        if isinstance(request, SaslHandshakeRequest):
            return Answer()
        return Answer(
            ErrorCode.SASL_AUTHENTICATION_FAILED, "Authentication failed: Invalid username or password"
        )

    with pytest.raises(SaslLoginError) as caught:
        _drive(sasl_exchange("PLAIN", "broker", "wrong"), answer)
    assert caught.value.code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert str(caught.value) == (
        "SaslAuthenticate failed: Authentication failed: Invalid username or password "
        "(SASL_AUTHENTICATION_FAILED)"
    )


def test_mechanism_the_broker_does_not_offer_is_unsupported_sasl_mechanism() -> None:
    with pytest.raises(SaslLoginError) as caught:
        _drive(
            sasl_exchange("SCRAM-SHA-512", "broker", "pw"),
            lambda request: Answer(ErrorCode.UNSUPPORTED_SASL_MECHANISM),
        )
    assert caught.value.code == ErrorCode.UNSUPPORTED_SASL_MECHANISM


def test_mechanism_not_built_is_refused_before_sending() -> None:
    with pytest.raises(SaslLoginError) as caught:
        next(sasl_exchange("GSSAPI", "broker", "pw"))
    assert caught.value.code == ErrorCode.UNSUPPORTED_SASL_MECHANISM


def _server_first_asking(iterations: int) -> Callable[[SaslRequest], Answer]:
    """A server whose first message asks for `iterations` rounds of PBKDF2."""

    def answer(request: SaslRequest) -> Answer:
        if isinstance(request, SaslHandshakeRequest):
            return Answer()
        assert isinstance(request, SaslAuthenticateRequest)
        nonce = dict(part.split("=", 1) for part in request.auth_bytes.decode().split(",")[2:])["r"]
        salt = base64.b64encode(b"sixteen-byte-slt").decode()
        return Answer(auth_bytes=f"r={nonce}server-nonce,s={salt},i={iterations}".encode())

    return answer


@pytest.mark.parametrize("iterations", [16_385, 10_000_000, 2**31 - 1])
def test_a_server_asking_more_rounds_than_kafkas_maximum_is_refused_before_deriving_the_key(
    iterations: int,
) -> None:
    """Kafka's credentials never have more than 16384 (AlterUserScramCredentials refuses them): a server
    asking more could only freeze the broker logging in (2^31-1 rounds take hours)."""
    steps = sasl_exchange("SCRAM-SHA-256", "broker", "pw")
    answer = _server_first_asking(iterations)
    step = next(steps)
    with pytest.raises(SaslLoginError) as caught:
        while True:
            assert not isinstance(step, KeyDerivation), "would derive the key"
            step = steps.send(answer(step))
    if iterations < 10_000_000:  # scramp refuses from there on itself, in its own words
        assert str(caught.value) == (
            f"Requested iterations {iterations} is more than the maximum 16384 for SCRAM-SHA-256"
        )
    assert caught.value.code == ErrorCode.SASL_AUTHENTICATION_FAILED


def test_a_server_asking_fewer_rounds_than_the_minimum_is_refused() -> None:
    with pytest.raises(SaslLoginError) as caught:
        _drive(sasl_exchange("SCRAM-SHA-512", "broker", "pw"), _server_first_asking(4095))
    assert caught.value.code == ErrorCode.SASL_AUTHENTICATION_FAILED


def test_the_scram_key_derivation_is_a_step_of_its_own_for_the_driver_to_run() -> None:
    """So that a driver on an event loop runs PBKDF2 in a thread."""
    steps = sasl_exchange("SCRAM-SHA-256", "broker", "pw")
    answer = _server_first_asking(8192)
    step = next(steps)
    while not isinstance(step, KeyDerivation):
        step = steps.send(answer(step))
    assert step.iterations == 8192
    final = steps.send(step.derive())
    assert isinstance(final, SaslAuthenticateRequest) and final.auth_bytes.startswith(b"c=biws,r=")
