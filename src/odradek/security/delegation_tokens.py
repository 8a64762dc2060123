"""Delegation tokens (KIP-48), as Kafka 3.9's DelegationTokenManager(Zk) keeps them.

A token is its information (id, owner, the principal that asked for it, renewers, issue, expiry and
maximum timestamps) and its HMAC: HMAC-SHA512 of the token id under `delegation.token.secret.key`,
never stored (every broker with the same key derives it). A client authenticates with it over SCRAM
(`tokenauth=true`, username = the token id, password = the HMAC in base64): each token has a SCRAM
credential per mechanism, made from that password at the mechanism's minimum iterations as Kafka's
DelegationTokenCache does, and the session's principal is the token's owner.

`DelegationTokenManager` answers the four token APIs and the SASL exchange from its in-memory cache;
changes go through a `TokenStore` (the log dir on a single node, /delegation_token in ZooKeeper)
before the cache and the answer, and other brokers' changes arrive through `token_changed`.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import logging
import time
import uuid
from collections.abc import Callable, Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from typing import Final, Protocol

from odradek.config.broker import BrokerConfig
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.security.scram_credentials import (
    MECHANISMS,
    MIN_ITERATIONS,
    ScramCredential,
    credential_from_salted_password,
    salted_password,
)

log = logging.getLogger("odradek.security")

#: The principal type every renewer must have (KafkaPrincipal.USER_TYPE).
USER_TYPE: Final = "User"
#: Kafka's DelegationTokenManager.ErrorTimestamp: the timestamps of an answer that failed.
ERROR_TIMESTAMP: Final = -1
#: The SCRAM extension that marks a token authentication (ScramLoginModule's `tokenauth=true`).
TOKEN_AUTH_EXTENSION: Final = "tokenauth"


@dataclass(frozen=True, slots=True)
class TokenInformation:
    """Kafka's TokenInformation; principals are ``Type:name`` strings."""

    token_id: str
    owner: str
    requester: str
    renewers: tuple[str, ...]
    issue_timestamp_ms: int
    max_timestamp_ms: int
    expiry_timestamp_ms: int

    def owner_or_renewer(self, principal: str) -> bool:
        """Who may renew or expire it (Kafka's DelegationTokenManagerZk.allowedToRenew)."""
        return principal == self.owner or principal in self.renewers

    def owner_requester_or_renewer(self, principal: str) -> bool:
        """Who may describe it without an ACL, and whom an owner filter matches (Kafka's
        TokenInformation.ownerOrRenewer, which counts the requester since KIP-373)."""
        return principal == self.requester or self.owner_or_renewer(principal)

    def expired(self, now_ms: int) -> bool:
        return self.max_timestamp_ms < now_ms or self.expiry_timestamp_ms < now_ms


@dataclass(frozen=True, slots=True)
class DelegationToken:
    info: TokenInformation
    hmac: bytes


@dataclass(frozen=True, slots=True)
class TokenCredential:
    """What the SCRAM exchange needs of a token: its credential, whose session it is, until when."""

    credential: ScramCredential
    owner: str
    expiry_timestamp_ms: int


@dataclass(frozen=True, slots=True)
class TokenSettings:
    #: `delegation.token.secret.key` (or the deprecated `delegation.token.master.key`); None or empty:
    #: tokens are disabled and every token API answers DELEGATION_TOKEN_AUTH_DISABLED.
    secret_key: str | None
    max_lifetime_ms: int
    expiry_time_ms: int

    @property
    def enabled(self) -> bool:
        return bool(self.secret_key)


def token_settings(config: BrokerConfig) -> TokenSettings:
    """The `delegation.token.*` settings; the deprecated master key stands in for an unset secret key
    (KafkaConfig.delegationTokenSecretKey)."""
    key = config.delegation_token_secret_key or config.delegation_token_master_key
    return TokenSettings(
        secret_key=key.value if key is not None else None,
        max_lifetime_ms=config.delegation_token_max_lifetime_ms,
        expiry_time_ms=config.delegation_token_expiry_time_ms,
    )


class TokenStoreError(Exception):
    """The store could not be written or read (ZooKeeper unreachable, a malformed znode, a full disk)."""


class TokenStore(Protocol):
    """Where tokens live: the log dir on a single node, /delegation_token/tokens in a cluster."""

    async def write(self, token: TokenInformation) -> None:
        """Create or replace the token, durably (and tell the other brokers), before returning."""
        ...

    async def delete(self, token_id: str) -> None:
        """Remove the token (and tell the other brokers) before returning."""
        ...


def token_hmac(token_id: str, secret_key: str) -> bytes:
    """Kafka's DelegationTokenManager.createHmac: HMAC-SHA512 of the id's UTF-8 under the key's."""
    return hmac.new(secret_key.encode(), token_id.encode(), hashlib.sha512).digest()


def new_token_id() -> str:
    """Kafka's CoreUtils.generateUuidAsBase64: a random UUID's 16 bytes, URL-safe base64, unpadded."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


def token_credentials(hmac_bytes: bytes) -> dict[str, ScramCredential]:
    """The token's SCRAM credential per mechanism: the HMAC's base64 as password, the mechanism's
    minimum iterations, a fresh salt (as Kafka's ScramFormatter.generateCredential)."""
    password = base64.b64encode(hmac_bytes).decode()
    credentials = {}
    for mechanism in MECHANISMS:
        salt = hashlib.sha256(uuid.uuid4().bytes).digest()
        salted = salted_password(mechanism, password, salt, MIN_ITERATIONS)
        credentials[mechanism] = credential_from_salted_password(mechanism, salt, salted, MIN_ITERATIONS)
    return credentials


@dataclass(slots=True)
class _Cached:
    token: DelegationToken
    credentials: dict[str, ScramCredential] = field(default_factory=dict)


class DelegationTokenManager:
    """The token APIs' rules and the broker's token cache (Kafka's DelegationTokenManagerZk and
    DelegationTokenCache). Every change is one at a time (Kafka's `lock`)."""

    def __init__(
        self,
        settings: TokenSettings,
        store: TokenStore,
        tokens: Iterable[TokenInformation] = (),
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self.store = store
        self.clock = clock
        self._by_id: dict[str, _Cached] = {}
        self._id_by_hmac: dict[bytes, str] = {}
        self._changing = asyncio.Lock()
        #: Tokens whose credentials are being made in a worker thread (how many times), and those of
        #: them removed meanwhile: such a thread must not cache the token again when it finishes.
        self._caching: dict[str, int] = {}
        self._removed_while_caching: set[str] = set()
        if settings.enabled:
            for info in tokens:  # (blocking: small sets, in tests; the broker awaits `load`)
                self._insert(self._entry(info))

    async def load(self, tokens: Iterable[TokenInformation]) -> None:
        """Cache the tokens a store holds at start-up (their credentials made in a worker thread)."""
        if not self.enabled:
            return
        infos = list(tokens)
        for entry in await asyncio.to_thread(lambda: [self._entry(info) for info in infos]):
            self._insert(entry)

    @property
    def enabled(self) -> bool:
        return self.settings.enabled

    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    # ----- the APIs ----------------------------------------------------------------------------------

    async def create(
        self, owner: str, requester: str, renewers: list[str], max_lifetime_ms: int
    ) -> DelegationToken:
        self._require_enabled()
        async with self._changing:
            now = self.now_ms()
            limit = self.settings.max_lifetime_ms
            lifetime = limit if max_lifetime_ms <= 0 else min(max_lifetime_ms, limit)
            max_timestamp = now + lifetime
            info = TokenInformation(
                token_id=new_token_id(),
                owner=owner,
                requester=requester,
                renewers=tuple(renewers),
                issue_timestamp_ms=now,
                max_timestamp_ms=max_timestamp,
                expiry_timestamp_ms=min(max_timestamp, now + self.settings.expiry_time_ms),
            )
            await self._write(info)
            log.info("delegation token %s created for %s", info.token_id, owner)
            return self._by_id[info.token_id].token

    async def renew(self, principal: str, hmac_bytes: bytes, renew_period_ms: int) -> int:
        """The new expiry timestamp; raises KafkaError with Kafka's codes."""
        self._require_enabled()
        async with self._changing:
            info = self._owned_token(principal, hmac_bytes)
            now = self.now_ms()
            if info.expired(now):
                raise KafkaError(ErrorCode.DELEGATION_TOKEN_EXPIRED)
            period = self.settings.expiry_time_ms if renew_period_ms < 0 else renew_period_ms
            # (Python's integers do not wrap: a huge period ends at the maximum, where Java's overflow
            # gave a timestamp in the past)
            expiry = min(info.max_timestamp_ms, now + period)
            await self._write(replace(info, expiry_timestamp_ms=expiry))
            log.info("delegation token %s renewed until %d", info.token_id, expiry)
            return expiry

    async def expire(self, principal: str, hmac_bytes: bytes, expiry_period_ms: int) -> int:
        """The new expiry timestamp (now when removed at once, for a negative period)."""
        self._require_enabled()
        async with self._changing:
            info = self._owned_token(principal, hmac_bytes)
            now = self.now_ms()
            if expiry_period_ms < 0:
                try:
                    await self._delete(info.token_id)
                except TokenStoreError:
                    raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR) from None
                log.info("delegation token %s expired (removed)", info.token_id)
                return now
            if info.expired(now):
                raise KafkaError(ErrorCode.DELEGATION_TOKEN_EXPIRED)
            expiry = min(info.max_timestamp_ms, now + expiry_period_ms)
            await self._write(replace(info, expiry_timestamp_ms=expiry))
            log.info("delegation token %s expires at %d", info.token_id, expiry)
            return expiry

    def tokens(self) -> list[DelegationToken]:
        """Every token in the cache (DescribeDelegationToken filters them)."""
        self._require_enabled()
        return [cached.token for cached in self._by_id.values()]

    async def expire_tokens(self) -> list[str]:
        """Remove the tokens past their expiry or maximum (the periodic task); returns their ids."""
        if not self.enabled:
            return []
        removed = []
        async with self._changing:
            now = self.now_ms()
            for cached in list(self._by_id.values()):
                info = cached.token.info
                if info.expired(now):
                    try:
                        await self._delete(info.token_id)
                    except TokenStoreError as error:
                        log.error("expired delegation token %s not removed: %s", info.token_id, error)
                        continue
                    log.info("delegation token %s of %s expired: removed", info.token_id, info.owner)
                    removed.append(info.token_id)
        return removed

    # ----- the SASL exchange and other brokers' changes ---------------------------------------------

    def credential(self, token_id: str, mechanism: str) -> TokenCredential | None:
        """The token's SCRAM credential for `mechanism`; None: no such token (or tokens disabled).

        A token past its expiry is refused here, where Kafka authenticates it until the expiry task
        removes it and then ends the session at once (a lifetime of 0): the client learns why."""
        cached = self._by_id.get(token_id)
        if cached is None:
            return None
        info = cached.token.info
        credential = cached.credentials.get(mechanism)
        if credential is None or info.expired(self.now_ms()):
            return None
        return TokenCredential(credential, info.owner, info.expiry_timestamp_ms)

    async def token_changed(self, token_id: str, info: TokenInformation | None) -> None:
        """Another broker changed (or removed, None) the token: what the store now holds."""
        if not self.enabled:
            return
        if info is None:
            self._uncache(token_id)
        else:
            await self._cache(info)

    # ----- helpers -----------------------------------------------------------------------------------

    def _require_enabled(self) -> None:
        if not self.enabled:
            raise KafkaError(ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED)

    def _owned_token(self, principal: str, hmac_bytes: bytes) -> TokenInformation:
        token_id = self._id_by_hmac.get(hmac_bytes)
        cached = self._by_id.get(token_id) if token_id is not None else None
        if cached is None:
            raise KafkaError(ErrorCode.DELEGATION_TOKEN_NOT_FOUND)
        info = cached.token.info
        if not info.owner_or_renewer(principal):
            raise KafkaError(ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH)
        return info

    async def _write(self, info: TokenInformation) -> None:
        try:
            await self.store.write(info)
        except TokenStoreError as error:
            log.error("delegation token %s not stored: %s", info.token_id, error)
            raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR) from None
        await self._cache(info)

    async def _delete(self, token_id: str) -> None:
        try:
            await self.store.delete(token_id)
        except TokenStoreError as error:
            log.error("delegation token %s not removed: %s", token_id, error)
            raise
        self._uncache(token_id)

    async def _cache(self, info: TokenInformation) -> None:
        known = self._by_id.get(info.token_id)
        if known is not None:  # renewed or expired: same id, same HMAC, same credentials
            known.token = DelegationToken(info, known.token.hmac)
            return
        # PBKDF2 twice (tens of milliseconds): in a worker thread, never on the event loop
        token_id = info.token_id
        self._caching[token_id] = self._caching.get(token_id, 0) + 1
        try:
            entry = await asyncio.to_thread(self._entry, info)
        finally:
            self._caching[token_id] -= 1
            if not self._caching[token_id]:
                del self._caching[token_id]
        if token_id in self._removed_while_caching:
            # expired or removed meanwhile (ids are never reused): caching it now would revive it
            if token_id not in self._caching:
                self._removed_while_caching.discard(token_id)
            return
        self._insert(entry)

    def _entry(self, info: TokenInformation) -> _Cached:
        secret = self.settings.secret_key
        assert secret
        digest = token_hmac(info.token_id, secret)
        return _Cached(DelegationToken(info, digest), token_credentials(digest))

    def _insert(self, entry: _Cached) -> None:
        info = entry.token.info
        known = self._by_id.get(info.token_id)
        if known is not None:  # cached meanwhile (a notification of this very change): keep its credentials
            known.token = DelegationToken(info, known.token.hmac)
            return
        self._by_id[info.token_id] = entry
        self._id_by_hmac[entry.token.hmac] = info.token_id

    def _uncache(self, token_id: str) -> None:
        if token_id in self._caching:
            self._removed_while_caching.add(token_id)
        cached = self._by_id.pop(token_id, None)
        if cached is not None:
            self._id_by_hmac.pop(cached.token.hmac, None)


def describable(
    token: TokenInformation,
    requester: str,
    owners: AbstractSet[str] | None,
    may_describe_token: Callable[[str], bool],
    may_describe_owner: Callable[[str], bool],
) -> bool:
    """Kafka's DelegationTokenManager.filterToken: a token asked for (by one of `owners`, its owner,
    requester or renewer; None: any) that the principal asking owns, requested or renews, or may
    describe (DESCRIBE on the token, or DESCRIBE_TOKENS on its owner)."""
    # (a set: a request may name a million owners, and each token is looked up in it, not compared
    # with each of them)
    if owners is not None and not (
        token.owner in owners or token.requester in owners or any(r in owners for r in token.renewers)
    ):
        return False
    if token.owner_requester_or_renewer(requester):
        return True
    return may_describe_token(token.token_id) or may_describe_owner(token.owner)
