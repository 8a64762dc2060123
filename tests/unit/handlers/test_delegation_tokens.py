"""The four delegation token APIs (38-41) as Kafka 3.9 answers them in ZooKeeper mode."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from odradek.cluster.metadata import BrokerMode
from odradek.cluster.metadata.acls import LocalAclStore
from odradek.cluster.metadata.delegation_tokens import FILE_NAME, LocalTokenStore
from odradek.handlers._common.registry import registration_for
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.create_delegation_token import CreatableRenewers, CreateDelegationTokenRequest
from odradek.protocol.messages.describe_delegation_token import (
    DescribeDelegationTokenOwner,
    DescribeDelegationTokenRequest,
)
from odradek.protocol.messages.expire_delegation_token import ExpireDelegationTokenRequest
from odradek.protocol.messages.renew_delegation_token import RenewDelegationTokenRequest
from odradek.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from odradek.security.authenticator import SaslAuthenticator
from odradek.security.authorizer import authorizer_from_config
from odradek.security.delegation_tokens import DelegationTokenManager, token_settings
from odradek.security.sasl_config import ListenerSasl
from tests.support.handler_services import HandlerBroker

SECRET = "s3cret-key"
SASL = "SASL_PLAINTEXT"
ALICE, BOB, CAROL = "User:alice", "User:bob", "User:carol"
HOUR_MS = 3_600_000


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def _broker(path: Path, clock: Clock, **settings: str) -> HandlerBroker:
    broker = HandlerBroker(path, **settings)
    store = LocalTokenStore(path)
    config_settings = token_settings(broker.config)
    tokens = store.load() if config_settings.enabled else []
    broker.services.delegation_tokens = DelegationTokenManager(config_settings, store, tokens, clock)
    return broker


@pytest.fixture
def broker(tmp_path: Path, clock: Clock) -> Iterator[HandlerBroker]:
    made = _broker(
        tmp_path / "data",
        clock,
        **{
            "delegation.token.secret.key": SECRET,
            "delegation.token.max.lifetime.ms": str(24 * HOUR_MS),
            "delegation.token.expiry.time.ms": str(HOUR_MS),
        },
    )
    try:
        yield made
    finally:
        made.close()


async def _call(broker: HandlerBroker, request: Any, version: int, principal: str = ALICE, **kw: Any) -> Any:
    return await broker.call(
        request, version, principal=principal, security_protocol=kw.pop("protocol", SASL), **kw
    )


def _create(
    renewers: tuple[str, ...] = (), max_lifetime_ms: int = -1, owner: str | None = None
) -> CreateDelegationTokenRequest:
    owner_type, _, owner_name = owner.partition(":") if owner else (None, "", None)
    return CreateDelegationTokenRequest(
        owner_principal_type=owner_type,
        owner_principal_name=owner_name,
        renewers=[
            CreatableRenewers(principal_type=r.split(":")[0], principal_name=r.split(":")[1])
            for r in renewers
        ],
        max_lifetime_ms=max_lifetime_ms,
    )


def test_the_four_token_apis_are_served_at_kafka_39s_versions_in_both_modes() -> None:
    for mode in (BrokerMode.SINGLE_NODE, BrokerMode.ZOOKEEPER):
        served = {
            key: (registration.min_version, registration.max_version)
            for key in (38, 39, 40, 41)
            if (registration := registration_for(key, 0, mode)) is not None
        }
        assert served == {
            ApiKey.CREATE_DELEGATION_TOKEN: (0, 3),
            ApiKey.RENEW_DELEGATION_TOKEN: (0, 2),
            ApiKey.EXPIRE_DELEGATION_TOKEN: (0, 2),
            ApiKey.DESCRIBE_DELEGATION_TOKEN: (0, 3),
        }, mode


async def test_create_renew_expire_describe_a_token(broker: HandlerBroker, clock: Clock) -> None:
    created = await _call(broker, _create((BOB,)), 3)
    assert created.error_code == ErrorCode.NONE
    now = int(clock.now * 1000)
    assert (created.principal_type, created.principal_name) == ("User", "alice")
    assert (created.token_requester_principal_type, created.token_requester_principal_name) == (
        "User",
        "alice",
    )
    assert (created.issue_timestamp_ms, created.expiry_timestamp_ms, created.max_timestamp_ms) == (
        now,
        now + HOUR_MS,
        now + 24 * HOUR_MS,
    )
    assert len(created.hmac) == 64 and len(created.token_id) == 22
    clock.now += 60
    renewed = await _call(
        broker, RenewDelegationTokenRequest(hmac=created.hmac, renew_period_ms=2 * HOUR_MS), 2, BOB
    )
    assert (renewed.error_code, renewed.expiry_timestamp_ms) == (ErrorCode.NONE, now + 60_000 + 2 * HOUR_MS)
    described = await _call(broker, DescribeDelegationTokenRequest(owners=None), 3, BOB)
    [token] = described.tokens
    assert (token.token_id, token.hmac, token.expiry_timestamp) == (
        created.token_id,
        created.hmac,
        now + 60_000 + 2 * HOUR_MS,
    )
    assert [(r.principal_type, r.principal_name) for r in token.renewers] == [("User", "bob")]
    expired = await _call(
        broker, ExpireDelegationTokenRequest(hmac=created.hmac, expiry_time_period_ms=-1), 2
    )
    assert (expired.error_code, expired.expiry_timestamp_ms) == (ErrorCode.NONE, now + 60_000)
    assert (await _call(broker, DescribeDelegationTokenRequest(owners=None), 3)).tokens == []


@pytest.mark.parametrize(
    ("protocol", "principal"), [("PLAINTEXT", "User:ANONYMOUS"), ("SSL", "User:ANONYMOUS")]
)
async def test_token_requests_over_plaintext_or_one_way_tls_are_not_allowed(
    broker: HandlerBroker, protocol: str, principal: str
) -> None:
    not_allowed = ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
    for request, version in (
        (_create(), 3),
        (RenewDelegationTokenRequest(hmac=b"x", renew_period_ms=1), 2),
        (ExpireDelegationTokenRequest(hmac=b"x", expiry_time_period_ms=1), 2),
        (DescribeDelegationTokenRequest(owners=None), 3),
    ):
        response = await _call(broker, request, version, principal, protocol=protocol)
        assert response.error_code == not_allowed, request
    # TLS with a client certificate is allowed, as in Kafka
    assert (await _call(broker, _create(), 3, "User:CN=client", protocol="SSL")).error_code == ErrorCode.NONE


async def test_a_token_authenticated_connection_cannot_create_renew_expire_or_describe(
    broker: HandlerBroker,
) -> None:
    sasl = SaslAuthenticator(ListenerSasl(SASL, ("SCRAM-SHA-256",), {}, 1024, 0, 0), lambda _u, _m: None)
    sasl.token_authenticated = True
    response = await _call(broker, _create(), 3, sasl=sasl)
    assert response.error_code == ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
    assert response.token_id == "" and response.max_timestamp_ms == -1


async def test_without_a_secret_key_every_api_answers_auth_disabled(tmp_path: Path, clock: Clock) -> None:
    broker = _broker(tmp_path / "data", clock)
    try:
        for request, version in (
            (_create(), 3),
            (RenewDelegationTokenRequest(hmac=b"x", renew_period_ms=1), 2),
            (ExpireDelegationTokenRequest(hmac=b"x", expiry_time_period_ms=1), 2),
            (DescribeDelegationTokenRequest(owners=None), 3),
        ):
            response = await _call(broker, request, version)
            assert response.error_code == ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, request
    finally:
        broker.close()


async def test_another_principals_hmac_an_unknown_hmac_and_an_expired_token(
    broker: HandlerBroker, clock: Clock
) -> None:
    created = await _call(broker, _create(), 3)
    for request, version in (
        (RenewDelegationTokenRequest(hmac=created.hmac, renew_period_ms=1), 2),
        (ExpireDelegationTokenRequest(hmac=created.hmac, expiry_time_period_ms=1), 2),
    ):
        assert (
            await _call(broker, request, version, CAROL)
        ).error_code == ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH
    unknown = RenewDelegationTokenRequest(hmac=b"\0" * 64, renew_period_ms=1)
    assert (await _call(broker, unknown, 2)).error_code == ErrorCode.DELEGATION_TOKEN_NOT_FOUND
    clock.now += 2 * HOUR_MS / 1000  # past its expiry (one hour), not yet removed
    renew = RenewDelegationTokenRequest(hmac=created.hmac, renew_period_ms=1)
    assert (await _call(broker, renew, 2)).error_code == ErrorCode.DELEGATION_TOKEN_EXPIRED
    expire = ExpireDelegationTokenRequest(hmac=created.hmac, expiry_time_period_ms=1)
    assert (await _call(broker, expire, 2)).error_code == ErrorCode.DELEGATION_TOKEN_EXPIRED


async def test_huge_lifetimes_and_periods_end_at_the_maximum_and_negative_ones_take_the_defaults(
    broker: HandlerBroker, clock: Clock
) -> None:
    now = int(clock.now * 1000)
    created = await _call(broker, _create(max_lifetime_ms=2**63 - 1), 3)
    assert created.max_timestamp_ms == now + 24 * HOUR_MS
    renewed = await _call(
        broker, RenewDelegationTokenRequest(hmac=created.hmac, renew_period_ms=2**63 - 1), 2
    )
    assert renewed.expiry_timestamp_ms == now + 24 * HOUR_MS  # Java's sum wraps into the past here
    renewed = await _call(broker, RenewDelegationTokenRequest(hmac=created.hmac, renew_period_ms=-5), 2)
    assert renewed.expiry_timestamp_ms == now + HOUR_MS
    short = await _call(broker, _create(max_lifetime_ms=1000), 3)
    assert short.expiry_timestamp_ms == short.max_timestamp_ms == now + 1000


async def test_renewers_must_be_users_and_thousands_of_them_are_kept(broker: HandlerBroker) -> None:
    refused = await _call(broker, _create(("Group:ops",)), 3)
    assert (refused.error_code, refused.token_id) == (ErrorCode.INVALID_PRINCIPAL_TYPE, "")
    many = [f"User:renewer-{n}" for n in range(5000)]
    created = await _call(broker, _create(tuple(many)), 3)
    assert created.error_code == ErrorCode.NONE
    renewed = await _call(
        broker, RenewDelegationTokenRequest(hmac=created.hmac, renew_period_ms=1), 2, "User:renewer-4999"
    )
    assert renewed.error_code == ErrorCode.NONE


async def test_describe_filters_by_owner_or_renewer_and_an_empty_owner_list_describes_nothing(
    broker: HandlerBroker,
) -> None:
    await _call(broker, _create((BOB,)), 3, ALICE)
    await _call(broker, _create(), 3, CAROL)

    def owners(response: Any) -> list[str]:
        return sorted(t.principal_name for t in response.tokens)

    def owned_by(name: str) -> DescribeDelegationTokenRequest:
        return DescribeDelegationTokenRequest(
            owners=[DescribeDelegationTokenOwner(principal_type="User", principal_name=name)]
        )

    # without an authorizer every principal may describe every token, as in Kafka
    assert owners(await _call(broker, DescribeDelegationTokenRequest(owners=None), 3, BOB)) == [
        "alice",
        "carol",
    ]
    assert owners(await _call(broker, owned_by("carol"), 3, BOB)) == ["carol"]
    assert owners(await _call(broker, owned_by("bob"), 3, CAROL)) == ["alice"]  # bob renews alice's
    assert (await _call(broker, DescribeDelegationTokenRequest(owners=[]), 3, CAROL)).tokens == []


async def test_acls_decide_creating_for_another_owner_and_describing_others_tokens(
    tmp_path: Path, clock: Clock
) -> None:
    broker = _broker(
        tmp_path / "data",
        clock,
        **{
            "delegation.token.secret.key": SECRET,
            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        },
    )
    authorizer = broker.services.authorizer = authorizer_from_config(
        broker.config, LocalAclStore(tmp_path / "data")
    )
    try:
        for_bob = _create(owner=BOB)
        refused = await _call(broker, for_bob, 3, ALICE)
        assert refused.error_code == ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED
        assert (refused.principal_name, refused.token_requester_principal_name) == ("bob", "alice")

        def grant(operation: AclOperation, resource: ResourceType, name: str) -> AclBinding:
            return AclBinding(
                ResourcePattern(resource, name, PatternType.LITERAL),
                AccessControlEntry(ALICE, "*", operation, AclPermissionType.ALLOW),
            )

        await authorizer.create_acls([grant(AclOperation.CREATE_TOKENS, ResourceType.USER, BOB)])
        created = await _call(broker, for_bob, 3, ALICE)
        assert created.error_code == ErrorCode.NONE
        assert (created.principal_name, created.token_requester_principal_name) == ("bob", "alice")
        # carol is neither its owner, requester nor renewer: describing it needs an ACL
        assert (await _call(broker, DescribeDelegationTokenRequest(owners=None), 3, CAROL)).tokens == []
        await authorizer.create_acls(
            [
                AclBinding(
                    ResourcePattern(ResourceType.USER, BOB, PatternType.LITERAL),
                    AccessControlEntry(CAROL, "*", AclOperation.DESCRIBE_TOKENS, AclPermissionType.ALLOW),
                )
            ]
        )
        [token] = (await _call(broker, DescribeDelegationTokenRequest(owners=None), 3, CAROL)).tokens
        assert token.token_id == created.token_id
        # and renewing it needs being its owner or renewer, whatever the ACLs
        renew = RenewDelegationTokenRequest(hmac=created.hmac, renew_period_ms=1)
        assert (await _call(broker, renew, 2, ALICE)).error_code == ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH
    finally:
        broker.close()


async def test_tokens_survive_a_restart_of_a_single_node_and_the_file_holds_no_hmac(
    tmp_path: Path, clock: Clock
) -> None:
    settings = {"delegation.token.secret.key": SECRET}
    first = _broker(tmp_path / "data", clock, **settings)
    created = await _call(first, _create((BOB,)), 3)
    first.close()
    stored = (tmp_path / "data" / FILE_NAME).read_text()
    assert created.token_id in stored and json.loads(stored)["tokens"][0]["owner"] == "User%3Aalice"
    assert created.hmac.hex() not in stored
    again = _broker(tmp_path / "data", clock, **settings)
    try:
        [token] = (await _call(again, DescribeDelegationTokenRequest(owners=None), 3)).tokens
        assert (token.token_id, token.hmac) == (created.token_id, created.hmac)
    finally:
        again.close()


async def test_the_expiry_task_removes_expired_tokens_only(broker: HandlerBroker, clock: Clock) -> None:
    short = await _call(broker, _create(max_lifetime_ms=1000), 3)
    long = await _call(broker, _create(), 3)
    tokens = broker.services.delegation_tokens
    assert tokens is not None
    assert await tokens.expire_tokens() == []
    clock.now += 2
    assert await tokens.expire_tokens() == [short.token_id]
    assert [
        t.token_id for t in (await _call(broker, DescribeDelegationTokenRequest(owners=None), 3)).tokens
    ] == [long.token_id]


async def test_token_credentials_are_made_off_the_event_loop(
    broker: HandlerBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PBKDF2 twice per token (tens of milliseconds) on the loop stalled every connection of the
    broker at each token created, loaded or changed by another broker."""
    import threading

    from odradek.security import delegation_tokens

    made_in: list[str] = []
    real = delegation_tokens.token_credentials

    def recording(hmac_bytes: bytes) -> Any:
        made_in.append(threading.current_thread().name)
        return real(hmac_bytes)

    monkeypatch.setattr(delegation_tokens, "token_credentials", recording)
    created = await _call(broker, _create(), 3)
    tokens = broker.services.delegation_tokens
    assert tokens is not None
    await tokens.token_changed(
        "from-another-broker", replace_id(tokens.tokens()[0].info, "from-another-broker")
    )
    await tokens.load([replace_id(tokens.tokens()[0].info, "loaded-at-start")])
    assert created.error_code == ErrorCode.NONE
    assert len(made_in) == 3 and threading.main_thread().name not in made_in, made_in


def replace_id(info: Any, token_id: str) -> Any:
    import dataclasses

    return dataclasses.replace(info, token_id=token_id)


async def test_describe_lists_a_token_to_its_requester_and_by_its_requester_as_kafkas_owner_or_renewer(
    tmp_path: Path, clock: Clock
) -> None:
    # Kafka 3.9's filterToken uses TokenInformation.ownerOrRenewer, which counts the token's requester
    # (KIP-373): alice, who made a token for bob, sees it without any DESCRIBE ACL, and an owner filter
    # naming alice finds it. Renewing stays the owner's and renewers' (allowedToRenew).
    broker = _broker(
        tmp_path / "data",
        clock,
        **{
            "delegation.token.secret.key": SECRET,
            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        },
    )
    authorizer = broker.services.authorizer = authorizer_from_config(
        broker.config, LocalAclStore(tmp_path / "data")
    )
    try:
        await authorizer.create_acls(
            [
                AclBinding(
                    ResourcePattern(ResourceType.USER, BOB, PatternType.LITERAL),
                    AccessControlEntry(ALICE, "*", AclOperation.CREATE_TOKENS, AclPermissionType.ALLOW),
                )
            ]
        )
        created = await _call(broker, _create(owner=BOB), 3, ALICE)
        assert created.error_code == ErrorCode.NONE
        [token] = (await _call(broker, DescribeDelegationTokenRequest(owners=None), 3, ALICE)).tokens
        assert token.token_id == created.token_id
        by_alice = DescribeDelegationTokenRequest(
            owners=[DescribeDelegationTokenOwner(principal_type="User", principal_name="alice")]
        )
        [token] = (await _call(broker, by_alice, 3, BOB)).tokens
        assert token.token_id == created.token_id
        assert (await _call(broker, DescribeDelegationTokenRequest(owners=None), 3, CAROL)).tokens == []
        renew = RenewDelegationTokenRequest(hmac=created.hmac, renew_period_ms=1)
        assert (await _call(broker, renew, 2, ALICE)).error_code == ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH
    finally:
        broker.close()


async def test_describe_naming_many_owners_checks_each_token_once_not_once_per_owner(
    broker: HandlerBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each token was compared with every owner the request names, on the event loop: a request of a
    few megabytes naming a million owners held the broker for (tokens x owners) checks."""
    from odradek.security import delegation_tokens

    for _ in range(20):
        assert (await _call(broker, _create(renewers=(BOB,)), 3)).error_code == ErrorCode.NONE
    checks = 0
    real = delegation_tokens.TokenInformation.owner_requester_or_renewer

    def counting(info: delegation_tokens.TokenInformation, principal: str) -> bool:
        nonlocal checks
        checks += 1
        return real(info, principal)

    monkeypatch.setattr(delegation_tokens.TokenInformation, "owner_requester_or_renewer", counting)
    owners = [
        DescribeDelegationTokenOwner(principal_type="User", principal_name=f"u{i}") for i in range(2000)
    ]
    owners.append(DescribeDelegationTokenOwner(principal_type="User", principal_name="bob"))
    described = await _call(broker, DescribeDelegationTokenRequest(owners=owners), 3, CAROL)
    assert described.error_code == ErrorCode.NONE
    assert len(described.tokens) == 20  # bob renews them all (and without an authorizer carol may see them)
    assert checks <= 2 * 20, checks
