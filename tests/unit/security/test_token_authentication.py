"""SCRAM with `tokenauth=true`: a delegation token authenticates as its owner (Kafka's ScramSaslServer)."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import threading
import time

import pytest
import scramp

from odradek.protocol.error_codes import ErrorCode
from odradek.security.authenticator import SaslAuthenticator
from odradek.security.delegation_tokens import (
    DelegationTokenManager,
    TokenInformation,
    TokenSettings,
    token_hmac,
)
from odradek.security.sasl_config import ListenerSasl
from odradek.security.scram_credentials import ScramCredential, credential_from_password

SECRET = "the-secret-key"
SASL = ListenerSasl("SASL_PLAINTEXT", ("SCRAM-SHA-256", "SCRAM-SHA-512"), {}, 4096, 0, 0)
USERS = {("carol", "SCRAM-SHA-256"): credential_from_password("SCRAM-SHA-256", "carol-secret", 4096)}


class _NoStore:
    async def write(self, token: TokenInformation) -> None:
        pass

    async def delete(self, token_id: str) -> None:
        pass


def _token(token_id: str = "tok1", expiry_in_ms: int = 60_000) -> TokenInformation:
    now = int(time.time() * 1000)
    return TokenInformation(
        token_id, "User:alice", "User:alice", (), now, now + 3_600_000, now + expiry_in_ms
    )


def _manager(*tokens: TokenInformation) -> DelegationTokenManager:
    return DelegationTokenManager(TokenSettings(SECRET, 3_600_000, 60_000), _NoStore(), tokens)


def _user(user: str, mechanism: str) -> ScramCredential | None:
    return USERS.get((user, mechanism))


def _exchange(
    auth: SaslAuthenticator, mechanism: str, username: str, password: str, extensions: str = ",tokenauth=true"
) -> tuple[ErrorCode, str | None, int]:
    assert auth.handshake(mechanism, 1).error_code is ErrorCode.NONE
    client = scramp.ScramClient([mechanism], username, password)
    first = client.get_client_first() + extensions
    client.client_first_bare += extensions  # the proof covers the extensions, as Kafka's client's does
    answer = auth.authenticate(first.encode(), 1)
    if answer.failed:
        return answer.error_code, answer.error_message, 0
    client.set_server_first(answer.auth_bytes.decode())
    final = auth.authenticate(client.get_client_final().encode(), 1)
    if not final.failed:
        client.set_server_final(final.auth_bytes.decode())
    return final.error_code, final.error_message, final.session_lifetime_ms


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_a_token_authenticates_as_its_owner_with_the_hmac_as_password(mechanism: str) -> None:
    tokens = _manager(_token())
    auth = SaslAuthenticator(SASL, _user, tokens.credential)
    password = base64.b64encode(token_hmac("tok1", SECRET)).decode()
    code, message, lifetime_ms = _exchange(auth, mechanism, "tok1", password)
    assert (code, message) == (ErrorCode.NONE, None)
    assert auth.principal == "User:alice"
    assert auth.token_authenticated
    # the session ends when the token does (Kafka's CREDENTIAL_LIFETIME_MS), even with no re-auth set
    assert 0 < lifetime_ms <= 60_000


def test_a_token_id_without_the_extension_is_looked_up_as_a_user() -> None:
    tokens = _manager(_token())
    auth = SaslAuthenticator(SASL, _user, tokens.credential)
    password = base64.b64encode(token_hmac("tok1", SECRET)).decode()
    code, _message, _ = _exchange(auth, "SCRAM-SHA-256", "tok1", password, extensions="")
    assert code is ErrorCode.SASL_AUTHENTICATION_FAILED
    assert not auth.token_authenticated


def test_a_user_with_the_extension_is_not_a_token() -> None:
    auth = SaslAuthenticator(SASL, _user, _manager().credential)
    code, message, _ = _exchange(auth, "SCRAM-SHA-256", "carol", "carol-secret")
    assert code is ErrorCode.SASL_AUTHENTICATION_FAILED
    assert message is not None and "Token Authentication failed" in message


def test_a_wrong_hmac_an_unknown_token_and_an_expired_token_fail() -> None:
    tokens = _manager(_token("tok1"), _token("old", expiry_in_ms=-1))
    good = base64.b64encode(token_hmac("tok1", SECRET)).decode()
    for username, password in (
        ("tok1", base64.b64encode(token_hmac("tok1", "another key")).decode()),
        ("nope", good),
        ("old", base64.b64encode(token_hmac("old", SECRET)).decode()),
    ):
        auth = SaslAuthenticator(SASL, _user, tokens.credential)
        code, _, _ = _exchange(auth, "SCRAM-SHA-256", username, password)
        assert code is ErrorCode.SASL_AUTHENTICATION_FAILED, username
        assert not auth.authenticated


def test_users_still_authenticate_when_tokens_are_looked_up() -> None:
    auth = SaslAuthenticator(SASL, _user, _manager().credential)
    code, _, lifetime_ms = _exchange(auth, "SCRAM-SHA-256", "carol", "carol-secret", extensions="")
    assert code is ErrorCode.NONE and auth.principal == "User:carol" and lifetime_ms == 0
    assert not auth.token_authenticated


def test_tokenauth_false_is_a_user_exchange() -> None:
    auth = SaslAuthenticator(SASL, _user, _manager().credential)
    code, _, _ = _exchange(auth, "SCRAM-SHA-256", "carol", "carol-secret", extensions=",tokenauth=false")
    assert code is ErrorCode.NONE and auth.principal == "User:carol"


def test_a_session_re_authenticating_with_a_token_removed_meanwhile_fails() -> None:
    """KIP-368: the open session kept working; its re-authentication checks the token again."""
    import asyncio

    tokens = _manager(_token())
    sasl = ListenerSasl("SASL_PLAINTEXT", ("SCRAM-SHA-256",), {}, 4096, 60_000, 0)
    auth = SaslAuthenticator(sasl, _user, tokens.credential)
    password = base64.b64encode(token_hmac("tok1", SECRET)).decode()
    assert _exchange(auth, "SCRAM-SHA-256", "tok1", password)[0] is ErrorCode.NONE
    assert auth.allows_request()
    asyncio.run(tokens.token_changed("tok1", None))  # expired through another broker
    assert auth.allows_request()  # until the session ends
    code, _, _ = _exchange(auth, "SCRAM-SHA-256", "tok1", password)
    assert code is ErrorCode.SASL_AUTHENTICATION_FAILED and not auth.allows_request()


def test_a_token_expired_while_a_notification_of_it_was_being_cached_stays_removed() -> None:
    """The broker's own change notification caches the token in a worker thread (PBKDF2); an Expire
    removing the token before that thread finished was undone by it, and the revoked token kept
    authenticating on this broker until the expiry task found it past its expiry."""
    asyncio.run(_expire_while_a_notification_is_cached())


async def _expire_while_a_notification_is_cached() -> None:
    manager = _manager()
    info = _token("tok1")
    gate = threading.Event()
    real_entry = manager._entry

    def entry(made_for: TokenInformation) -> object:
        if made_for is info:  # the notification's copy only: held until the token was removed
            assert gate.wait(10)
        return real_entry(made_for)

    manager._entry = entry  # type: ignore[method-assign,assignment]
    notified = asyncio.create_task(manager.token_changed(info.token_id, info))
    await asyncio.sleep(0)  # the notification's credentials are being made
    await manager.load([dataclasses.replace(info)])  # the creating request's own copy (an equal one)
    hmac_bytes = token_hmac(info.token_id, SECRET)
    await manager.expire("User:alice", hmac_bytes, -1)
    gate.set()
    await notified
    assert manager.tokens() == []
    assert manager.credential(info.token_id, "SCRAM-SHA-256") is None
