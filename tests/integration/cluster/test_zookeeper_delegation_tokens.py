"""Delegation tokens in a real ZooKeeper, as two brokers' managers see them (no broker processes):
Kafka 3.9's znodes and JSON, a `token_change_` notification after each change, the other broker's
cache following them (renewal, removal), and a token written by a Kafka broker read with its HMAC."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable

import pytest
from kazoo.client import KazooClient

from odradek.cluster.metadata.delegation_tokens import TokenChangeListener, ZkTokenStore
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.security.delegation_tokens import DelegationTokenManager, TokenSettings, token_hmac
from tests.support.znode_golden import assert_same_json

pytestmark = pytest.mark.timeout(120)

SECRET = "shared-secret"
SETTINGS = TokenSettings(SECRET, 24 * 3600 * 1000, 3600 * 1000)


async def _eventually(check: Callable[[], bool], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.05)


def _manager(zk: ZooKeeperClient) -> tuple[DelegationTokenManager, ZkTokenStore]:
    store = ZkTokenStore(zk)
    return DelegationTokenManager(SETTINGS, store, store.load()), store


def test_tokens_are_kafkas_znodes_and_every_broker_follows_their_notifications(
    connect_zk: Callable[[], ZooKeeperClient], raw_zk: KazooClient, zookeeper_connect: str
) -> None:
    chroot = "/" + zookeeper_connect.split("/", 1)[1]

    async def main() -> None:
        first, _ = _manager(connect_zk())
        second, second_store = _manager(connect_zk())
        TokenChangeListener(second_store, second).start(asyncio.get_running_loop())
        token = await first.create("User:alice", "User:admin", ["User:spark job"], -1)
        info = token.info
        data, _ = raw_zk.get(f"{chroot}/delegation_token/tokens/{info.token_id}")
        assert_same_json(
            data.decode(),
            json.dumps(
                {
                    "version": 3,
                    "owner": "User%3Aalice",
                    "tokenRequester": "User%3Aadmin",
                    "renewers": ["User%3Aspark+job".replace("+", "%20")],
                    "issueTimestamp": info.issue_timestamp_ms,
                    "maxTimestamp": info.max_timestamp_ms,
                    "expiryTimestamp": info.expiry_timestamp_ms,
                    "tokenId": info.token_id,
                }
            ),
        )
        changes = raw_zk.get_children(f"{chroot}/delegation_token/token_changes")
        assert [name[: len("token_change_")] for name in changes] == ["token_change_"]
        assert (
            raw_zk.get(f"{chroot}/delegation_token/token_changes/{changes[0]}")[0] == info.token_id.encode()
        )
        await _eventually(lambda: second.credential(info.token_id, "SCRAM-SHA-256") is not None, "the token")
        [seen] = second.tokens()
        assert seen.hmac == token.hmac == token_hmac(info.token_id, SECRET)

        expiry = await first.renew("User:spark job", token.hmac, 10 * 3600 * 1000)
        await _eventually(lambda: second.tokens()[0].info.expiry_timestamp_ms == expiry, "the renewal")
        await first.expire("User:alice", token.hmac, -1)
        assert not raw_zk.exists(f"{chroot}/delegation_token/tokens/{info.token_id}")
        await _eventually(lambda: second.credential(info.token_id, "SCRAM-SHA-512") is None, "the removal")

    asyncio.run(main())


def test_a_token_a_kafka_broker_wrote_is_read_with_its_hmac(
    connect_zk: Callable[[], ZooKeeperClient], raw_zk: KazooClient, zookeeper_connect: str
) -> None:
    chroot = "/" + zookeeper_connect.split("/", 1)[1]

    async def main() -> None:
        manager, store = _manager(connect_zk())
        TokenChangeListener(store, manager).start(asyncio.get_running_loop())
        now = int(time.time() * 1000)
        # DelegationTokenManagerZk.toJsonCompatibleMap, as Jackson writes it (key order of a HashMap)
        written = (
            f'{{"owner":"User%3Abob","renewers":[],"maxTimestamp":{now + 7_200_000},'
            f'"tokenRequester":"User%3Abob","issueTimestamp":{now},"expiryTimestamp":{now + 3_600_000},'
            f'"tokenId":"k4fkaT0kenIdAAAAAAAAAA","version":3}}'
        )
        raw_zk.create(f"{chroot}/delegation_token/tokens/k4fkaT0kenIdAAAAAAAAAA", written.encode())
        raw_zk.create(
            f"{chroot}/delegation_token/token_changes/token_change_",
            b"k4fkaT0kenIdAAAAAAAAAA",
            sequence=True,
        )
        await _eventually(
            lambda: manager.credential("k4fkaT0kenIdAAAAAAAAAA", "SCRAM-SHA-256") is not None, "it"
        )
        [token] = manager.tokens()
        assert token.info.owner == "User:bob" and token.hmac == token_hmac("k4fkaT0kenIdAAAAAAAAAA", SECRET)
        # a malformed token znode is skipped, and what follows still applies
        raw_zk.create(f"{chroot}/delegation_token/tokens/broken", b"{not json")
        raw_zk.create(f"{chroot}/delegation_token/token_changes/token_change_", b"broken", sequence=True)
        await manager.expire("User:bob", token.hmac, -1)
        await _eventually(lambda: manager.tokens() == [], "the removal after a malformed one")
        assert [t.info.token_id for t in _manager(connect_zk())[0].tokens()] == []  # loading skips it too

    asyncio.run(main())


def test_a_token_too_big_for_a_znode_is_refused_without_losing_the_zookeeper_session(
    connect_zk: Callable[[], ZooKeeperClient],
) -> None:
    """A renewer list of 100,000 makes a token of about 2.5 MB, over ZooKeeper's packet limit
    (jute.maxbuffer, 1 MB): sent, ZooKeeper drops the connection (every watch of the broker fires
    again) and the client gets its error only after a reconnection."""
    from odradek.protocol.error_codes import ErrorCode, KafkaError

    zk = connect_zk()

    async def main() -> None:
        manager, _ = _manager(zk)
        session = zk.session_id
        renewers = [f"User:renewer-number-{n}" for n in range(100_000)]
        with pytest.raises(KafkaError) as refused:
            await manager.create("User:alice", "User:alice", renewers, -1)
        assert refused.value.error_code == ErrorCode.UNKNOWN_SERVER_ERROR
        assert manager.tokens() == []
        assert zk.connected and zk.session_id == session
        token = await manager.create("User:alice", "User:alice", renewers[:1000], -1)
        assert len(token.info.renewers) == 1000

    asyncio.run(main())
