"""Delegation tokens on a single node, over the wire: a SCRAM user creates a token, a client logs in
with it (`tokenauth=true`) as the token's owner, a token session cannot create tokens, and an expired
token no longer logs in while a session already open keeps working (as Kafka's)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.describe_delegation_token import DescribeDelegationTokenRequest
from odradek.protocol.messages.expire_delegation_token import ExpireDelegationTokenRequest
from odradek.protocol.messages.metadata import MetadataRequest
from tests.support.delegation_tokens import create_token, scram_login, token_password
from tests.support.interop import wait_until
from tests.support.raw_client import RawClient
from tests.support.security import SecureBroker, start_secure_broker

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def secure(tmp_path: Path) -> Iterator[SecureBroker]:
    broker = start_secure_broker(tmp_path, {"delegation.token.secret.key": "token-secret"})
    try:
        yield broker
    finally:
        broker.process.stop()


def _metadata_ok(client: RawClient) -> bool:
    return client.request(MetadataRequest(topics=None), 12).brokers != []


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_a_token_logs_in_as_its_owner_and_its_session_cannot_ask_for_tokens(
    secure: SecureBroker, mechanism: str
) -> None:
    port = secure.ports["SASL_PLAINTEXT"]
    with RawClient(port) as carol:
        assert scram_login(carol, "SCRAM-SHA-512", "carol", "carol-secret").error_code == 0
        created = create_token(carol)
        assert created.error_code == ErrorCode.NONE, created
    with RawClient(port) as client:
        login = scram_login(client, mechanism, created.token_id, token_password(created.hmac), token=True)
        assert (login.error_code, login.error_message) == (0, None)
        # the session ends with the token (its expiry, a day by default)
        assert 0 < login.session_lifetime_ms <= 24 * 3600 * 1000
        assert _metadata_ok(client)
        again = create_token(client)
        assert again.error_code == ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
        described = client.request(DescribeDelegationTokenRequest(owners=None), 3)
        assert described.error_code == ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED


def test_token_requests_over_plaintext_are_not_allowed(secure: SecureBroker) -> None:
    with RawClient(secure.ports["PLAINTEXT"]) as client:
        assert create_token(client).error_code == ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED


def test_an_expired_token_no_longer_logs_in_and_an_open_session_keeps_working(secure: SecureBroker) -> None:
    port = secure.ports["SASL_PLAINTEXT"]
    with RawClient(port) as carol, RawClient(port) as session:
        assert scram_login(carol, "SCRAM-SHA-256", "carol", "carol-secret").error_code == 0
        created = create_token(carol)
        password = token_password(created.hmac)
        assert scram_login(session, "SCRAM-SHA-256", created.token_id, password, token=True).error_code == 0
        expired = carol.request(ExpireDelegationTokenRequest(hmac=created.hmac, expiry_time_period_ms=-1), 2)
        assert expired.error_code == ErrorCode.NONE
        with RawClient(port) as late:
            login = scram_login(late, "SCRAM-SHA-256", created.token_id, password, token=True)
            assert login.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        # Kafka checks the token only when a session authenticates (or re-authenticates)
        assert _metadata_ok(session)


def test_a_wrong_hmac_does_not_log_in(secure: SecureBroker) -> None:
    port = secure.ports["SASL_PLAINTEXT"]
    with RawClient(port) as carol:
        scram_login(carol, "SCRAM-SHA-256", "carol", "carol-secret")
        created = create_token(carol)
    with RawClient(port) as client:
        login = scram_login(client, "SCRAM-SHA-256", created.token_id, token_password(b"\0" * 64), token=True)
        assert login.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED


def test_the_periodic_check_removes_an_expired_token_from_the_log_dir(tmp_path: Path) -> None:
    broker = start_secure_broker(
        tmp_path,
        {"delegation.token.secret.key": "token-secret", "delegation.token.expiry.check.interval.ms": "200"},
    )
    try:
        stored = broker.process.data_dir / "__odradek_delegation_tokens.json"
        with RawClient(broker.ports["SASL_PLAINTEXT"]) as carol:
            scram_login(carol, "SCRAM-SHA-256", "carol", "carol-secret")
            short = create_token(carol, max_lifetime_ms=1000)
            kept = create_token(carol)
        assert short.token_id in stored.read_text() and kept.token_id in stored.read_text()
        wait_until(lambda: short.token_id not in stored.read_text(), 30, "the expired token removed", 0.1)
        assert kept.token_id in stored.read_text()
    finally:
        broker.process.stop()
