"""A connection's SASL state machine, as Kafka's SaslServerAuthenticator."""

from __future__ import annotations

import scramp

from odradek.protocol.error_codes import ErrorCode
from odradek.security.authenticator import SaslAuthenticator, SaslState
from odradek.security.sasl_config import ListenerSasl
from odradek.security.scram_credentials import ScramCredential, credential_from_password

SASL = ListenerSasl(
    "SASL_PLAINTEXT",
    ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"),
    {"alice": "alice-secret", "bob": "bob-secret"},
    max_receive_size=1024,
    max_reauth_ms=0,
    failed_authentication_delay_ms=0,
)
CREDENTIALS = {("carol", "SCRAM-SHA-256"): credential_from_password("SCRAM-SHA-256", "carol-secret", 4096)}


def _lookup(user: str, mechanism: str) -> ScramCredential | None:
    return CREDENTIALS.get((user, mechanism))


def _authenticator(sasl: ListenerSasl = SASL) -> SaslAuthenticator:
    return SaslAuthenticator(sasl, _lookup)


def test_plain_success_sets_the_principal_and_admits_requests() -> None:
    auth = _authenticator()
    assert not auth.allows_request()
    assert auth.handshake("PLAIN", 1).error_code is ErrorCode.NONE
    result = auth.authenticate(b"\0alice\0alice-secret", 2)
    assert result.error_code is ErrorCode.NONE
    assert auth.principal == "User:alice"
    assert auth.allows_request()
    assert result.session_lifetime_ms == 0


def test_wrong_password_and_unknown_user_fail_alike() -> None:
    for token in (b"\0alice\0wrong", b"\0mallory\0alice-secret"):
        auth = _authenticator()
        auth.handshake("PLAIN", 1)
        result = auth.authenticate(token, 1)
        assert result.error_code is ErrorCode.SASL_AUTHENTICATION_FAILED
        assert result.error_message == "Authentication failed: Invalid username or password"
        assert auth.state is SaslState.FAILED
        assert not auth.allows_request()


def test_unknown_mechanism_lists_the_offered_ones() -> None:
    auth = _authenticator()
    result = auth.handshake("GSSAPI", 1)
    assert result.error_code is ErrorCode.UNSUPPORTED_SASL_MECHANISM
    assert result.mechanisms == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]


def test_authenticate_before_handshake_and_second_handshake_are_illegal_state() -> None:
    auth = _authenticator()
    assert auth.authenticate(b"\0alice\0alice-secret", 1).error_code is ErrorCode.ILLEGAL_SASL_STATE
    auth = _authenticator()
    auth.handshake("PLAIN", 1)
    assert auth.handshake("PLAIN", 1).error_code is ErrorCode.ILLEGAL_SASL_STATE


def test_v0_handshake_expects_raw_tokens() -> None:
    auth = _authenticator()
    auth.handshake("PLAIN", 0)
    assert auth.state is SaslState.RAW_TOKENS
    assert not auth.authenticate(b"\0bob\0bob-secret", 0).failed
    assert auth.principal == "User:bob"


def test_scram_exchange_with_a_real_client() -> None:
    auth = _authenticator()
    assert auth.handshake("SCRAM-SHA-256", 1).error_code is ErrorCode.NONE
    client = scramp.ScramClient(["SCRAM-SHA-256"], "carol", "carol-secret")
    first = auth.authenticate(client.get_client_first().encode(), 1)
    assert first.error_code is ErrorCode.NONE and not auth.allows_request()
    client.set_server_first(first.auth_bytes.decode())
    final = auth.authenticate(client.get_client_final().encode(), 1)
    assert final.error_code is ErrorCode.NONE
    client.set_server_final(final.auth_bytes.decode())  # the client checks the server's signature too
    assert auth.principal == "User:carol"


def test_scram_wrong_password_unknown_user_and_wrong_mechanism_fail() -> None:
    for mechanism, user, password in (
        ("SCRAM-SHA-256", "carol", "nope"),
        ("SCRAM-SHA-256", "nobody", "carol-secret"),
        ("SCRAM-SHA-512", "carol", "carol-secret"),  # carol has no SHA-512 credential
    ):
        auth = _authenticator()
        auth.handshake(mechanism, 1)
        client = scramp.ScramClient([mechanism], user, password)
        first = auth.authenticate(client.get_client_first().encode(), 1)
        if not first.failed:
            client.set_server_first(first.auth_bytes.decode())
            first = auth.authenticate(client.get_client_final().encode(), 1)
        assert first.error_code is ErrorCode.SASL_AUTHENTICATION_FAILED, (mechanism, user)
        assert first.error_message == "Authentication failed: Invalid user credentials"


def test_session_lifetime_and_reauthentication() -> None:
    sasl = ListenerSasl("L", ("PLAIN",), {"alice": "a", "bob": "b"}, 1024, 60_000, 0)
    auth = _authenticator(sasl)
    auth.handshake("PLAIN", 1)
    assert auth.authenticate(b"\0alice\0a", 1).session_lifetime_ms == 60_000
    assert auth.session_expires_at is not None
    assert auth.session_expired(auth.session_expires_at + 1)
    # KIP-368: a new v1 handshake on the authenticated connection, same mechanism and principal
    assert auth.handshake("PLAIN", 1).error_code is ErrorCode.NONE
    assert not auth.authenticate(b"\0alice\0a", 1).failed
    assert auth.handshake("PLAIN", 1).error_code is ErrorCode.NONE
    result = auth.authenticate(b"\0bob\0b", 1)
    assert result.error_code is ErrorCode.SASL_AUTHENTICATION_FAILED
    assert (
        result.error_message
        == "Cannot change principals during re-authentication from User:alice to User:bob"
    )


def test_v0_authenticate_gets_no_session_lifetime() -> None:
    sasl = ListenerSasl("L", ("PLAIN",), {"alice": "a"}, 1024, 60_000, 0)
    auth = _authenticator(sasl)
    auth.handshake("PLAIN", 1)
    assert auth.authenticate(b"\0alice\0a", 0).session_lifetime_ms == 0


def test_token_over_the_receive_limit_fails() -> None:
    auth = _authenticator()
    auth.handshake("PLAIN", 1)
    assert auth.authenticate(b"\0alice\0" + b"x" * 2000, 1).error_code is ErrorCode.SASL_AUTHENTICATION_FAILED
