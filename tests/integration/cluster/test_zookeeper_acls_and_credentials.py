"""ACLs and SCRAM credentials in a real ZooKeeper, as two brokers' stores see them (no broker processes):
Kafka's znodes and notifications, compare-and-set against a concurrent writer, the quota keys another
writer keeps in the same user znode, notifications followed into another broker's cache, and purging."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import pytest
from kazoo.client import KazooClient

from odradek.cluster.metadata.acls import AclChangeListener, ZkAclStore
from odradek.cluster.metadata.scram_credentials import ZkScramCredentialStore
from odradek.cluster.zookeeper.acl_znodes import EXTENDED_CHANGES, LITERAL_CHANGES
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.cluster.zookeeper.configs import set_entity_config
from odradek.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from odradek.security.acl_store import AclStoreError
from odradek.security.authorizer import AclAuthorizer
from odradek.security.scram_credentials import (
    ScramCredential,
    credential_from_password,
    credential_to_string,
)
from tests.support import znode_golden as golden
from tests.support.znode_golden import assert_same_json
from tests.support.zookeeper import ZooKeeperServer, expire_session

pytestmark = pytest.mark.timeout(120)
T = TypeVar("T")

ORDERS = ResourcePattern(ResourceType.TOPIC, "orders", PatternType.LITERAL)
TEAM = ResourcePattern(ResourceType.GROUP, "team-", PatternType.PREFIXED)
ALICE_READS = AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW)
BOB_WRITES = AccessControlEntry("User:bob", "*", AclOperation.WRITE, AclPermissionType.ALLOW)
EVERYTHING = AclBindingFilter(
    ResourceType.ANY, None, PatternType.ANY, None, None, AclOperation.ANY, AclPermissionType.ANY
)


def _authorizer(zk: ZooKeeperClient) -> AclAuthorizer:
    return AclAuthorizer(ZkAclStore(zk), (), False)


async def _eventually(check: Callable[[], bool], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.05)


def _run(main: Callable[[], Awaitable[T]]) -> T:
    async def wrapped() -> T:
        return await main()

    return asyncio.run(wrapped())


def test_acls_are_written_in_kafkas_layout_with_notifications(
    connect_zk: Callable[[], ZooKeeperClient], raw_zk: KazooClient, zookeeper_connect: str
) -> None:
    zk = connect_zk()
    chroot = "/" + zookeeper_connect.split("/", 1)[1]
    authorizer = _authorizer(zk)
    _run(lambda: authorizer.create_acls([AclBinding(ORDERS, ALICE_READS), AclBinding(TEAM, ALICE_READS)]))

    def data(path: str) -> bytes:
        return bytes(raw_zk.get(chroot + path)[0])

    assert_same_json(data("/kafka-acl/Topic/orders"), golden.ACL_ZNODE)
    assert_same_json(data("/kafka-acl-extended/prefixed/Group/team-"), golden.ACL_ZNODE)
    assert data("/kafka-acl-changes/acl_changes_0000000000") == golden.LITERAL_ACL_CHANGE
    assert json.loads(data("/kafka-acl-extended-changes/acl_changes_0000000000")) == {
        "version": 1,
        "resourceType": "GROUP",
        "name": "team-",
        "patternType": "PREFIXED",
    }
    # the last ACL of a pattern removed: its znode goes, as Kafka's conditionalDelete
    _run(lambda: authorizer.delete_acls([EVERYTHING]))
    assert raw_zk.exists(chroot + "/kafka-acl/Topic/orders") is None
    assert raw_zk.exists(chroot + "/kafka-acl/Topic") is not None
    assert sorted(raw_zk.get_children(chroot + LITERAL_CHANGES)) == [
        "acl_changes_0000000000",
        "acl_changes_0000000001",
    ]


def test_a_stale_broker_adds_to_what_another_wrote_instead_of_overwriting(
    connect_zk: Callable[[], ZooKeeperClient],
) -> None:
    first, second = _authorizer(connect_zk()), _authorizer(connect_zk())  # both loaded with no ACLs
    _run(lambda: first.create_acls([AclBinding(ORDERS, ALICE_READS)]))
    _run(lambda: second.create_acls([AclBinding(ORDERS, BOB_WRITES)]))  # second's cache is stale
    assert ZkAclStore(connect_zk()).load() == {ORDERS: frozenset({ALICE_READS, BOB_WRITES})}


def test_concurrent_writers_of_one_pattern_lose_nothing(connect_zk: Callable[[], ZooKeeperClient]) -> None:
    authorizers = [_authorizer(connect_zk()) for _ in range(3)]
    entries = [
        AccessControlEntry(f"User:u{i}", "*", AclOperation.READ, AclPermissionType.ALLOW) for i in range(12)
    ]

    async def main() -> None:
        await asyncio.gather(
            *(authorizers[i % 3].create_acls([AclBinding(ORDERS, entry)]) for i, entry in enumerate(entries))
        )

    _run(main)
    assert ZkAclStore(connect_zk()).load() == {ORDERS: frozenset(entries)}


def test_another_broker_follows_acl_changes_and_purges_old_notifications(
    connect_zk: Callable[[], ZooKeeperClient], raw_zk: KazooClient, zookeeper_connect: str
) -> None:
    writer_zk, follower_zk = connect_zk(), connect_zk()
    writer = _authorizer(writer_zk)
    _run(lambda: writer.create_acls([AclBinding(ORDERS, ALICE_READS)]))  # before the follower starts
    follower_store = ZkAclStore(follower_zk)
    follower = AclAuthorizer(follower_store, (), False)
    chroot = "/" + zookeeper_connect.split("/", 1)[1]

    def alice_may(operation: AclOperation, resource: ResourcePattern) -> bool:
        return follower.authorize("User:alice", "10.0.0.1", operation, resource.resource_type, resource.name)

    async def main() -> None:
        assert alice_may(AclOperation.READ, ORDERS)  # loaded at start
        # expiration 0: every notification handled is purged at once
        AclChangeListener(follower_zk, follower_store, follower, change_expiration_ms=0).start(
            asyncio.get_running_loop()
        )
        await writer.create_acls([AclBinding(TEAM, ALICE_READS)])
        team_a = ResourcePattern(ResourceType.GROUP, "team-a", PatternType.LITERAL)
        await _eventually(lambda: alice_may(AclOperation.READ, team_a), "the prefixed ACL on the follower")
        await writer.delete_acls([EVERYTHING])
        await _eventually(lambda: not alice_may(AclOperation.READ, ORDERS), "the removal on the follower")
        # the literal and the prefixed ACL are two notifications (two change paths), read one by one
        await _eventually(lambda: follower.acls(EVERYTHING) == [], "both removals on the follower")
        await _eventually(
            lambda: (
                not raw_zk.get_children(chroot + LITERAL_CHANGES)
                and not raw_zk.get_children(chroot + EXTENDED_CHANGES)
            ),
            "the notifications purged",
        )

    _run(main)


def _credential(password: str) -> ScramCredential:
    return credential_from_password("SCRAM-SHA-256", password, 4096)


def test_scram_credentials_keep_the_users_quotas_and_notify(
    connect_zk: Callable[[], ZooKeeperClient], raw_zk: KazooClient, zookeeper_connect: str
) -> None:
    zk = connect_zk()
    zk.ensure_persistent_paths()
    chroot = "/" + zookeeper_connect.split("/", 1)[1]
    set_entity_config(zk, "users", "alice", {"producer_byte_rate": "1024"})  # a quota, written first
    store = ZkScramCredentialStore(zk).load()
    credential = _credential("alice-secret")
    _run(lambda: store.alter({("alice", "SCRAM-SHA-256"): credential}, set()))

    written = bytes(raw_zk.get(chroot + "/config/users/alice")[0])
    value = credential_to_string(credential)
    salt, stored_key, server_key = (part.split("=", 1)[1] for part in value.split(",")[:3])
    assert_same_json(
        written,
        golden.SCRAM_USER_CONFIG_TEMPLATE.format(salt=salt, stored_key=stored_key, server_key=server_key),
    )
    (change,) = raw_zk.get_children(chroot + "/config/changes")
    assert_same_json(
        bytes(raw_zk.get(f"{chroot}/config/changes/{change}")[0]), golden.USER_CONFIG_CHANGE_ZNODE
    )
    # deleting the credential leaves the quota, as Kafka's changeConfigs of the remaining keys
    _run(lambda: store.alter({}, {("alice", "SCRAM-SHA-256")}))
    assert json.loads(raw_zk.get(chroot + "/config/users/alice")[0]) == {
        "version": 1,
        "config": {"producer_byte_rate": "1024"},
    }
    assert store.get("alice", "SCRAM-SHA-256") is None


def test_another_broker_reads_credentials_at_start_and_on_notification(
    connect_zk: Callable[[], ZooKeeperClient],
) -> None:
    writer_zk = connect_zk()
    writer_zk.ensure_persistent_paths()
    writer = ZkScramCredentialStore(writer_zk).load()
    first = _credential("first")
    _run(lambda: writer.alter({("CN=carol,O=org", "SCRAM-SHA-256"): first}, set()))
    follower = ZkScramCredentialStore(connect_zk()).load()
    assert follower.get("CN=carol,O=org", "SCRAM-SHA-256") == first  # a sanitized name, read back
    second = _credential("second")
    _run(lambda: writer.alter({("CN=carol,O=org", "SCRAM-SHA-256"): second}, set()))
    assert follower.get("CN=carol,O=org", "SCRAM-SHA-256") == first  # until told
    _run(lambda: follower.user_changed("CN%3Dcarol%2CO%3Dorg"))
    assert follower.get("CN=carol,O=org", "SCRAM-SHA-256") == second
    described = _run(lambda: follower.describe(None))
    assert list(described) == ["CN=carol,O=org"]
    _run(lambda: follower.user_changed("carol/clients/app"))  # a quota entity: nothing to read


def test_a_broker_still_follows_acl_changes_after_its_session_expired(
    connect_zk: Callable[[], ZooKeeperClient], zookeeper_server: ZooKeeperServer, zookeeper_connect: str
) -> None:
    writer_zk, follower_zk = connect_zk(), connect_zk()
    writer = _authorizer(writer_zk)
    follower_store = ZkAclStore(follower_zk)
    follower = AclAuthorizer(follower_store, (), False)

    def alice_reads() -> bool:
        return follower.authorize("User:alice", "h", AclOperation.READ, ResourceType.TOPIC, "orders")

    async def main() -> None:
        AclChangeListener(follower_zk, follower_store, follower).start(asyncio.get_running_loop())
        # the follower's session ends and kazoo opens a new one: the watches must be set again
        await asyncio.to_thread(expire_session, follower_zk.kazoo, zookeeper_server.connect_string)
        await writer.create_acls([AclBinding(ORDERS, ALICE_READS)])
        await _eventually(alice_reads, "the ACL on the follower after its new session")

    _run(main)


def test_a_malformed_acl_znode_fails_the_change_and_the_start_up_naming_it(
    connect_zk: Callable[[], ZooKeeperClient], raw_zk: KazooClient, zookeeper_connect: str
) -> None:
    zk = connect_zk()
    authorizer = _authorizer(zk)
    chroot = "/" + zookeeper_connect.split("/", 1)[1]
    raw_zk.create(chroot + "/kafka-acl/Topic/orders", b'{"version":1,"acls":"not a list"}')
    with pytest.raises(AclStoreError, match="/kafka-acl/Topic/orders"):
        _run(lambda: authorizer.create_acls([AclBinding(ORDERS, ALICE_READS)]))
    with pytest.raises(AclStoreError, match="/kafka-acl/Topic/orders"):
        ZkAclStore(connect_zk()).load()


def test_a_user_znode_name_kafka_would_not_write_is_skipped(
    connect_zk: Callable[[], ZooKeeperClient], raw_zk: KazooClient, zookeeper_connect: str
) -> None:
    zk = connect_zk()
    zk.ensure_persistent_paths()
    chroot = "/" + zookeeper_connect.split("/", 1)[1]
    raw_zk.create(chroot + "/config/users/%FF", b'{"version":1,"config":{}}')
    writer = ZkScramCredentialStore(zk).load()
    _run(lambda: writer.alter({("ann", "SCRAM-SHA-256"): _credential("pw")}, set()))
    assert list(ZkScramCredentialStore(connect_zk()).load().credentials) == ["ann"]
    _run(lambda: writer.user_changed("%FF"))


def test_acls_too_big_for_a_znode_are_refused_without_losing_the_zookeeper_session(
    connect_zk: Callable[[], ZooKeeperClient],
) -> None:
    """20,000 ACLs on one resource (one CreateAcls) make a znode of about 1.5 MB, over ZooKeeper's
    packet limit (jute.maxbuffer, 1 MB): sent, ZooKeeper dropped the connection (every watch of the
    broker fired again) and the write was reported as unanswered after the session timeout."""
    zk = connect_zk()
    authorizer = _authorizer(zk)
    session = zk.session_id
    many = [
        AclBinding(
            ORDERS,
            AccessControlEntry(f"User:user-number-{n}", "*", AclOperation.READ, AclPermissionType.ALLOW),
        )
        for n in range(20_000)
    ]
    with pytest.raises(AclStoreError, match="bytes"):
        _run(lambda: authorizer.create_acls(many))
    assert zk.connected and zk.session_id == session
    _run(lambda: authorizer.create_acls(many[:100]))
    assert len(authorizer.acls(EVERYTHING)) == 100
