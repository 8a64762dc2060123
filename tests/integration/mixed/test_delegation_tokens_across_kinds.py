"""Delegation tokens across kinds (issue #29): one Apache Kafka 3.9 broker (1, controller) and one odradek
broker (2) on one ZooKeeper chroot, with the same `delegation.token.secret.key`. A token created
through one kind logs in on the other (SCRAM with tokenauth=true, as its owner), is described and
renewed there, and expired there no longer logs in on the first: both kinds keep tokens in Kafka's
/delegation_token znodes and follow each other's token_change_ notifications."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.alter_user_scram_credentials import AlterUserScramCredentialsRequest
from odradek.protocol.messages.describe_delegation_token import DescribeDelegationTokenRequest
from odradek.protocol.messages.expire_delegation_token import ExpireDelegationTokenRequest
from odradek.protocol.messages.renew_delegation_token import RenewDelegationTokenRequest
from tests.support.delegation_tokens import create_token, scram_login, token_password
from tests.support.interop import wait_until
from tests.support.kafka_reference import broker_host
from tests.support.mixed_cluster import PATIENCE_S, Kind, MixedCluster, running_mixed_cluster
from tests.support.mixed_security import SaslListeners
from tests.support.raw_client import RawClient
from tests.support.security import scram_upsertions
from tests.support.zookeeper import ZooKeeperServer

pytestmark = pytest.mark.timeout(600)

KAFKA, ODRADEK = 1, 2
KINDS = {KAFKA: Kind.KAFKA, ODRADEK: Kind.ODRADEK}
DIRECTIONS = [(KAFKA, ODRADEK), (ODRADEK, KAFKA)]
DIRECTION_IDS = ["kafka-to-odradek", "odradek-to-kafka"]
SECRET_KEY = "mixed-cluster-token-secret"


@pytest.fixture(scope="module")
def listeners() -> SaslListeners:
    return SaslListeners({node: broker_host(node, len(KINDS)) for node in KINDS})


@pytest.fixture(scope="module")
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory, listeners: SaslListeners
) -> Iterator[MixedCluster]:
    def settings(node: int, port: int) -> dict[str, str]:
        return {**listeners.settings(node, port), "delegation.token.secret.key": SECRET_KEY}

    with running_mixed_cluster(
        tmp_path_factory, zookeeper_server, KINDS, KAFKA, node_settings=settings
    ) as made:
        yield made


def _client(listeners: SaslListeners, node: int) -> RawClient:
    host, port = listeners.addresses[node]
    return RawClient(port, timeout=15, host=host)


def _user_logs_in(listeners: SaslListeners, node: int, user: str, password: str) -> bool:
    with _client(listeners, node) as client:
        return scram_login(client, "SCRAM-SHA-512", user, password).error_code == 0


def _token_logs_in(listeners: SaslListeners, node: int, token_id: str, hmac: bytes, mechanism: str) -> bool:
    with _client(listeners, node) as client:
        login = scram_login(client, mechanism, token_id, token_password(hmac), token=True)
        return login.error_code == 0


@pytest.mark.parametrize(("made_on", "checked_on"), DIRECTIONS, ids=DIRECTION_IDS)
def test_a_token_made_on_one_kind_logs_in_on_the_other_and_expired_there_no_longer_logs_in_on_the_first(
    cluster: MixedCluster, listeners: SaslListeners, made_on: int, checked_on: int
) -> None:
    user, password = f"token-owner-{made_on}", "owner-secret"
    host, port = cluster.kafka.addresses[made_on]  # PLAINTEXT: User:ANONYMOUS, a super user
    with RawClient(port, host=host) as admin:
        upserted = admin.request(
            AlterUserScramCredentialsRequest(deletions=[], upsertions=scram_upsertions(user, password)), 0
        )
    assert [r.error_code for r in upserted.results] == [ErrorCode.NONE]
    for node in KINDS:
        wait_until(
            lambda n=node: _user_logs_in(listeners, n, user, password), PATIENCE_S, f"{user} on {node}", 0.3
        )  # type: ignore[misc]

    with _client(listeners, made_on) as owner:
        assert scram_login(owner, "SCRAM-SHA-512", user, password).error_code == 0
        created: Any = create_token(owner, renewers=("User:renewer",))
    assert created.error_code == ErrorCode.NONE, created
    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        wait_until(
            lambda m=mechanism: _token_logs_in(listeners, checked_on, created.token_id, created.hmac, m),  # type: ignore[misc]
            PATIENCE_S,
            f"the token of broker {made_on} logging in with {mechanism} on broker {checked_on}",
            0.3,
        )

    with _client(listeners, checked_on) as owner:
        assert scram_login(owner, "SCRAM-SHA-512", user, password).error_code == 0
        [described] = owner.request(DescribeDelegationTokenRequest(owners=None), 3).tokens
        assert (described.token_id, described.hmac) == (created.token_id, created.hmac)
        assert (described.principal_type, described.principal_name) == ("User", user)
        assert [(r.principal_type, r.principal_name) for r in described.renewers] == [("User", "renewer")]
        assert (described.max_timestamp, described.issue_timestamp) == (
            created.max_timestamp_ms,
            created.issue_timestamp_ms,
        )
        renewed = owner.request(RenewDelegationTokenRequest(hmac=created.hmac, renew_period_ms=60_000), 2)
        assert renewed.error_code == ErrorCode.NONE
        expired = owner.request(ExpireDelegationTokenRequest(hmac=created.hmac, expiry_time_period_ms=-1), 2)
        assert expired.error_code == ErrorCode.NONE
    wait_until(
        lambda: not _token_logs_in(listeners, made_on, created.token_id, created.hmac, "SCRAM-SHA-512"),
        PATIENCE_S,
        f"the expired token refused on broker {made_on}",
        0.3,
    )
