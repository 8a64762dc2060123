"""Admin reads in a ZooKeeper cluster see what another broker wrote a moment ago, before its change
notification reached this broker (an admin client sends an alter to one broker and the describe that
follows to another: `kafka-configs --alter` then `--describe` failed in CI that way).

Kafka 3.9's ZkAdminManager reads ZooKeeper itself for DescribeClientQuotas and AlterClientQuotas; for
a broker's own dynamic configs it writes ZooKeeper and lets the notification apply them, a race odradek
closes by applying its own write at once."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from odradek.cluster.dynamic_configs import DynamicBrokerConfigs
from odradek.cluster.metadata.acls import ZkAclStore
from odradek.cluster.metadata.broker_configs import ZkBrokerConfigs
from odradek.cluster.metadata.client_quotas import ZkQuotaChangeFollower, ZkQuotaStore
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.config.broker import BrokerConfig
from odradek.protocol.messages.alter_client_quotas import (
    AlterClientQuotasRequest,
    EntityData,
    EntryData,
    OpData,
)
from odradek.protocol.messages.delete_acls import DeleteAclsFilter, DeleteAclsRequest
from odradek.protocol.messages.describe_client_quotas import DescribeClientQuotasRequest
from odradek.protocol.messages.incremental_alter_configs import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from odradek.security.acl import AclOperation, AclPermissionType, PatternType, ResourceType
from odradek.security.authorizer import AclAuthorizer
from odradek.security.client_quotas import ClientQuotas
from tests.support.handler_services import HandlerBroker

pytestmark = pytest.mark.timeout(120)


def _chroot(zookeeper_connect: str) -> str:
    return "/" + zookeeper_connect.split("/", 1)[1]


@pytest.fixture
def broker(connect_zk: Callable[[], ZooKeeperClient], tmp_path: Path) -> Iterator[HandlerBroker]:
    """A broker's handlers whose client quotas are kept in ZooKeeper (no notification ever written)."""
    broker = HandlerBroker(tmp_path / "data")
    zk = connect_zk()
    zk.ensure_persistent_paths()
    _follow_zookeeper_quotas(broker, zk)
    try:
        yield broker
    finally:
        broker.close()


def _another_brokers_write(raw_zk: KazooClient, chroot: str, user: str, config: dict[str, str]) -> None:
    """What another broker's AlterClientQuotas leaves before its notification is followed here."""
    raw_zk.create(
        f"{chroot}/config/users/{user}",
        json.dumps({"version": 1, "config": config}).encode(),
        makepath=True,
    )


def _follow_zookeeper_quotas(broker: HandlerBroker, zk: ZooKeeperClient) -> None:
    """The broker's client quotas kept in ZooKeeper, as a cluster member's."""
    quotas = ClientQuotas(11, 1, ZkQuotaStore(zk))
    broker.services.client_quotas = quotas
    asyncio.run(ZkQuotaChangeFollower(ZkQuotaStore(zk), quotas).start())


def test_describe_client_quotas_reads_zookeeper_not_the_copy_notifications_update(
    raw_zk: KazooClient, zookeeper_connect: str, broker: HandlerBroker
) -> None:
    _another_brokers_write(raw_zk, _chroot(zookeeper_connect), "alice", {"producer_byte_rate": "1024"})
    # this broker's copy has not seen it (the notification was never written)
    assert broker.services.client_quotas.configs.by_entity == {}
    response = asyncio.run(broker.call(DescribeClientQuotasRequest(components=[], strict=False), 1))
    assert [
        ([(e.entity_type, e.entity_name) for e in entry.entity], [(v.key, v.value) for v in entry.values])
        for entry in response.entries
    ] == [([("user", "alice")], [("producer_byte_rate", 1024.0)])]


def test_alter_client_quotas_starts_from_zookeeper_not_the_copy_notifications_update(
    raw_zk: KazooClient, zookeeper_connect: str, broker: HandlerBroker
) -> None:
    """Before: the removal compared against the stale copy (nothing to remove) and wrote nothing."""
    chroot = _chroot(zookeeper_connect)
    _another_brokers_write(
        raw_zk, chroot, "bob", {"producer_byte_rate": "1024", "consumer_byte_rate": "2048"}
    )
    entry = EntryData(
        entity=[EntityData(entity_type="user", entity_name="bob")],
        ops=[OpData(key="producer_byte_rate", value=0.0, remove=True)],
    )
    response = asyncio.run(broker.call(AlterClientQuotasRequest(entries=[entry], validate_only=False), 1))
    assert [r.error_code for r in response.entries] == [0]
    data, _ = raw_zk.get(f"{chroot}/config/users/bob")
    assert json.loads(data) == {"version": 1, "config": {"consumer_byte_rate": "2048"}}


def test_a_brokers_own_config_write_is_applied_at_once_not_when_its_notification_comes(
    connect_zk: Callable[[], ZooKeeperClient], tmp_path: Path
) -> None:
    zk = connect_zk()
    zk.ensure_persistent_paths()
    static = BrokerConfig({"node.id": "1", "log.dirs": str(tmp_path)}, warn_unknown=False)
    configs = ZkBrokerConfigs(zk, 1, DynamicBrokerConfigs(1, static))
    applied: list[BrokerConfig] = []
    configs.dynamic.add_reconfigurable(applied.append)
    # nobody follows /config/changes here: only the write itself can apply it
    asyncio.run(configs.write({"log.retention.ms": "10800000"}, cluster_default=False))
    assert [config.log_retention_ms for config in applied] == [10800000]
    asyncio.run(configs.write({"log.retention.ms": "3600000"}, cluster_default=True))
    assert applied[-1].log_retention_ms == 10800000  # its own layer still wins over the default
    assert configs.dynamic.cluster_default == {"log.retention.ms": "3600000"}


def _acls_in_zookeeper(broker: HandlerBroker, zk: ZooKeeperClient) -> None:
    """The broker's ACLs kept in ZooKeeper, as a cluster member's (the caller is a super user)."""
    broker.services.authorizer = AclAuthorizer(ZkAclStore(zk), ["User:ANONYMOUS"], False)


def _another_brokers_acl(raw_zk: KazooClient, chroot: str, topic: str, *principals: str) -> None:
    """What another broker's CreateAcls leaves before its notification is followed here."""
    acls = [{"principal": p, "permissionType": "Allow", "operation": "Read", "host": "*"} for p in principals]
    raw_zk.create(
        f"{chroot}/kafka-acl/Topic/{topic}",
        json.dumps({"version": 1, "acls": acls}).encode(),
        makepath=True,
    )


def _delete_acls(broker: HandlerBroker, topic: str | None, pattern_type: int) -> list[list[tuple[str, str]]]:
    """DeleteAcls of every entry of the topic pattern(s): per filter, the (name, principal) deleted."""
    request = DeleteAclsRequest(
        filters=[
            DeleteAclsFilter(
                resource_type_filter=int(ResourceType.TOPIC),
                resource_name_filter=topic,
                pattern_type_filter=pattern_type,
                principal_filter=None,
                host_filter=None,
                operation=int(AclOperation.ANY),
                permission_type=int(AclPermissionType.ANY),
            )
        ]
    )
    response = asyncio.run(broker.call(request, 2))
    assert [result.error_code for result in response.filter_results] == [0]
    return [
        sorted((acl.resource_name, acl.principal) for acl in result.matching_acls)
        for result in response.filter_results
    ]


def test_delete_acls_naming_one_pattern_deletes_what_zookeeper_holds_not_only_the_copy_notifications_update(
    connect_zk: Callable[[], ZooKeeperClient],
    raw_zk: KazooClient,
    zookeeper_connect: str,
    broker: HandlerBroker,
) -> None:
    """Kafka 3.9's AclAuthorizer.deleteAcls also changes the pattern a filter names exactly (it matches
    at most one) and removes what ZooKeeper holds there: an ACL created through another broker is
    deleted at once. Before: only what this broker's copy held was deleted, here nothing."""
    zk = connect_zk()
    _acls_in_zookeeper(broker, zk)
    chroot = _chroot(zookeeper_connect)
    _another_brokers_acl(raw_zk, chroot, "orders", "User:alice")
    assert _delete_acls(broker, "orders", int(PatternType.LITERAL)) == [[("orders", "User:alice")]]
    assert raw_zk.exists(f"{chroot}/kafka-acl/Topic/orders") is None


def test_delete_acls_removes_the_entries_zookeeper_holds_for_a_pattern_this_broker_knows(
    connect_zk: Callable[[], ZooKeeperClient],
    raw_zk: KazooClient,
    zookeeper_connect: str,
    broker: HandlerBroker,
) -> None:
    """For a pattern in its cache, Kafka's compare-and-set with the cached version fails once another
    broker changed it, and the filter is applied to what ZooKeeper holds. Before: the entry added
    through another broker survived a DeleteAcls that matched it."""
    zk = connect_zk()
    chroot = _chroot(zookeeper_connect)
    _another_brokers_acl(raw_zk, chroot, "orders", "User:alice")
    _acls_in_zookeeper(broker, zk)  # this broker read alice's ACL at start
    raw_zk.delete(f"{chroot}/kafka-acl/Topic/orders")
    _another_brokers_acl(raw_zk, chroot, "orders", "User:alice", "User:bob")  # unnotified here
    assert _delete_acls(broker, None, int(PatternType.ANY)) == [
        [("orders", "User:alice"), ("orders", "User:bob")]
    ]
    assert raw_zk.exists(f"{chroot}/kafka-acl/Topic/orders") is None


def test_two_concurrent_broker_config_changes_through_one_broker_both_stay_in_zookeeper(
    connect_zk: Callable[[], ZooKeeperClient], raw_zk: KazooClient, zookeeper_connect: str, tmp_path: Path
) -> None:
    """Each IncrementalAlterConfigs of a broker's layer read it from ZooKeeper, changed it and wrote it
    back, its reads and writes in worker threads: two at once on one broker both read the layer before
    either wrote, and the second write replaced the first's change (both answered NONE). This broker's
    own changes now take turns (changes through other brokers race as in Kafka 3.9: last writer wins)."""
    zk = connect_zk()
    zk.ensure_persistent_paths()
    broker = HandlerBroker(tmp_path / "data")
    dynamic = DynamicBrokerConfigs(broker.services.node_id, broker.config)
    broker.keep_broker_configs(dynamic, ZkBrokerConfigs(zk, broker.services.node_id, dynamic))

    def setting(name: str, value: str) -> IncrementalAlterConfigsRequest:
        return IncrementalAlterConfigsRequest(
            resources=[
                AlterConfigsResource(
                    resource_type=4,  # BROKER
                    resource_name="",
                    configs=[AlterableConfig(name=name, config_operation=0, value=value)],  # SET
                )
            ],
            validate_only=False,
        )

    async def both() -> list[int]:
        answers = await asyncio.gather(
            broker.call(setting("log.retention.ms", "3600000"), 1),
            broker.call(setting("log.retention.bytes", "1048576"), 1),
        )
        return [answer.responses[0].error_code for answer in answers]

    try:
        assert asyncio.run(both()) == [0, 0]
    finally:
        broker.close()
    data, _ = raw_zk.get(f"{_chroot(zookeeper_connect)}/config/brokers/<default>")
    assert json.loads(data)["config"] == {"log.retention.ms": "3600000", "log.retention.bytes": "1048576"}
