"""A user, client or IP whose last config (a quota, a SCRAM credential) is removed leaves no znode behind,
as Kafka 3.9's AdminZkClient cleans them (tryCleanQuotaNodes): the entity's znode goes once it holds
nothing and has no children, and with a user's client its `clients` znode and the user's own when they
hold nothing else. Znodes that still hold something stay."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

import pytest
from kazoo.client import KazooClient

from odradek.cluster.metadata.client_quotas import ZkQuotaStore
from odradek.cluster.metadata.scram_credentials import ZkScramCredentialStore
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.security.quota_entities import QuotaEntity
from odradek.security.scram_credentials import credential_from_password

pytestmark = pytest.mark.timeout(120)


def _quotas(zk: ZooKeeperClient) -> ZkQuotaStore:
    zk.ensure_persistent_paths()
    return ZkQuotaStore(zk)


def _chroot(zookeeper_connect: str) -> str:
    return "/" + zookeeper_connect.split("/", 1)[1]


def test_a_users_client_quota_removed_takes_its_znodes_with_it(
    connect_zk: Callable[[], ZooKeeperClient], raw_zk: KazooClient, zookeeper_connect: str
) -> None:
    quotas, chroot = _quotas(connect_zk()), _chroot(zookeeper_connect)
    entity = QuotaEntity(user="alice@EXAMPLE", client_id="app 1")
    asyncio.run(quotas.write(entity, {"producer_byte_rate": 1024.0}))
    assert raw_zk.exists(f"{chroot}/config/users/alice%40EXAMPLE/clients/app%201")
    asyncio.run(quotas.write(entity, {}))
    assert raw_zk.exists(f"{chroot}/config/users/alice%40EXAMPLE") is None
    # the change is still announced, for the brokers to drop the quota
    changes = raw_zk.get_children(f"{chroot}/config/changes")
    last = json.loads(raw_zk.get(f"{chroot}/config/changes/{max(changes)}")[0])
    assert last["entity_path"] == "users/alice%40EXAMPLE/clients/app%201"


def test_a_client_quota_removed_keeps_the_users_znode_that_holds_more(
    connect_zk: Callable[[], ZooKeeperClient], raw_zk: KazooClient, zookeeper_connect: str
) -> None:
    quotas, chroot = _quotas(connect_zk()), _chroot(zookeeper_connect)
    user, first, second = QuotaEntity(user="bob"), QuotaEntity("bob", "a"), QuotaEntity("bob", "b")
    for entity in (user, first, second):
        asyncio.run(quotas.write(entity, {"producer_byte_rate": 1024.0}))
    asyncio.run(quotas.write(first, {}))
    assert raw_zk.get_children(f"{chroot}/config/users/bob/clients") == ["b"]
    asyncio.run(quotas.write(second, {}))
    assert raw_zk.get_children(f"{chroot}/config/users/bob") == []
    asyncio.run(quotas.write(user, {}))
    assert raw_zk.exists(f"{chroot}/config/users/bob") is None


@pytest.mark.parametrize("entity", [QuotaEntity(client_id="app"), QuotaEntity(ip="127.0.0.5")], ids=str)
def test_a_client_or_ip_quota_removed_takes_its_znode_with_it(
    connect_zk: Callable[[], ZooKeeperClient],
    raw_zk: KazooClient,
    zookeeper_connect: str,
    entity: QuotaEntity,
) -> None:
    quotas, chroot = _quotas(connect_zk()), _chroot(zookeeper_connect)
    value = {"connection_creation_rate": 10.0} if entity.ip else {"consumer_byte_rate": 2048.0}
    asyncio.run(quotas.write(entity, value))
    path = f"{chroot}/config/{'ips' if entity.ip else 'clients'}/{entity.ip or entity.client_id}"
    assert raw_zk.exists(path)
    asyncio.run(quotas.write(entity, {}))
    assert raw_zk.exists(path) is None


def test_a_users_last_scram_credential_deleted_takes_its_znode_with_it(
    connect_zk: Callable[[], ZooKeeperClient], raw_zk: KazooClient, zookeeper_connect: str
) -> None:
    zk, chroot = connect_zk(), _chroot(zookeeper_connect)
    zk.ensure_persistent_paths()
    store = ZkScramCredentialStore(zk).load()
    credential = credential_from_password("SCRAM-SHA-256", "carol-secret", 4096)
    asyncio.run(store.alter({("carol", "SCRAM-SHA-256"): credential}, set()))
    assert raw_zk.exists(f"{chroot}/config/users/carol")
    asyncio.run(store.alter({}, {("carol", "SCRAM-SHA-256")}))
    assert raw_zk.exists(f"{chroot}/config/users/carol") is None
    assert store.get("carol", "SCRAM-SHA-256") is None


def test_a_users_last_scram_credential_deleted_keeps_its_znode_while_it_has_client_quotas(
    connect_zk: Callable[[], ZooKeeperClient], raw_zk: KazooClient, zookeeper_connect: str
) -> None:
    zk, chroot = connect_zk(), _chroot(zookeeper_connect)
    quotas = _quotas(zk)
    store = ZkScramCredentialStore(zk).load()
    credential = credential_from_password("SCRAM-SHA-256", "dave-secret", 4096)
    asyncio.run(store.alter({("dave", "SCRAM-SHA-256"): credential}, set()))
    asyncio.run(quotas.write(QuotaEntity("dave", "app"), {"producer_byte_rate": 1024.0}))
    asyncio.run(store.alter({}, {("dave", "SCRAM-SHA-256")}))
    assert json.loads(raw_zk.get(f"{chroot}/config/users/dave")[0]) == {"version": 1, "config": {}}
    assert raw_zk.get_children(f"{chroot}/config/users/dave/clients") == ["app"]


@pytest.mark.parametrize("quota", [2048.0, None], ids=["changed", "removed"])
def test_a_quota_write_keeps_a_credential_another_broker_wrote_after_it_read(
    connect_zk: Callable[[], ZooKeeperClient],
    raw_zk: KazooClient,
    zookeeper_connect: str,
    quota: float | None,
) -> None:
    """The quota's read-modify-write is a compare-and-set: the credential is not overwritten (nor its
    znode deleted as empty), the quota is written over it."""
    zk, chroot = connect_zk(), _chroot(zookeeper_connect)
    quotas = _quotas(zk)
    other = ZkScramCredentialStore(connect_zk()).load()
    entity = QuotaEntity(user="erin")
    asyncio.run(quotas.write(entity, {"producer_byte_rate": 1024.0}))
    credential = credential_from_password("SCRAM-SHA-256", "erin-secret", 4096)
    read = zk.read
    raced: list[bool] = []

    def read_then_another_broker_writes(path: str) -> object:
        found = read(path)
        if path.endswith("/users/erin") and not raced:
            raced.append(True)
            asyncio.run(other.alter({("erin", "SCRAM-SHA-256"): credential}, set()))
        return found

    zk.read = read_then_another_broker_writes  # type: ignore[method-assign,assignment]
    asyncio.run(quotas.write(entity, {} if quota is None else {"producer_byte_rate": quota}))
    config = json.loads(raw_zk.get(f"{chroot}/config/users/erin")[0])["config"]
    assert raced and "SCRAM-SHA-256" in config
    assert config.get("producer_byte_rate") == (None if quota is None else "2048")
