"""GROUP config resources in a ZooKeeper cluster: a group's configs set through one broker are in
/config/groups/<group> (URL-encoded), announced in /config/changes and read by every broker (a share
partition may be led by any of them); deleting all of them removes the znode everywhere."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

import pytest
from kazoo.client import KazooClient

from odradek.cluster.metadata.group_configs import ZkGroupConfigs
from odradek.cluster.zookeeper.client import ZooKeeperClient

pytestmark = pytest.mark.timeout(120)
GROUP = "team a/queue"


def _chroot(zookeeper_connect: str) -> str:
    return "/" + zookeeper_connect.split("/", 1)[1]


async def _until(predicate: Callable[[], bool], what: str) -> None:
    """Poll for another broker's notification to be applied (ZooKeeper's watch is asynchronous)."""
    for _ in range(500):
        if predicate():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"never: {what}")


def test_a_groups_configs_set_through_one_broker_reach_the_others(
    connect_zk: Callable[[], ZooKeeperClient], raw_zk: KazooClient, zookeeper_connect: str
) -> None:
    chroot = _chroot(zookeeper_connect)

    async def scenario() -> None:
        zk = connect_zk()
        zk.ensure_persistent_paths()  # as every broker at start
        writer, reader = ZkGroupConfigs(zk), ZkGroupConfigs(connect_zk())
        await writer.start()
        await reader.start()
        wanted = {"share.auto.offset.reset": "earliest"}
        await writer.alter(GROUP, lambda current: {**current, **wanted}, validate_only=True)
        assert writer.configs(GROUP) == {}
        await writer.alter(GROUP, lambda current: {**current, **wanted}, validate_only=False)
        assert writer.configs(GROUP) == wanted
        await _until(lambda: reader.configs(GROUP) == wanted, "the other broker has them")
        assert reader.group_ids() == [GROUP]
        stored = json.loads(raw_zk.get(f"{chroot}/config/groups/team%20a%2Fqueue")[0])
        assert stored == {"version": 1, "config": wanted}
        changes = sorted(raw_zk.get_children(f"{chroot}/config/changes"))
        notified = json.loads(raw_zk.get(f"{chroot}/config/changes/{changes[-1]}")[0])
        assert notified["entity_path"] == "groups/team%20a%2Fqueue"
        late = ZkGroupConfigs(connect_zk())
        await late.start()  # a broker started later reads them at start
        assert late.configs(GROUP) == wanted
        await writer.alter(GROUP, lambda current: {}, validate_only=False)
        await _until(lambda: reader.configs(GROUP) == {}, "the other broker dropped them")
        assert raw_zk.exists(f"{chroot}/config/groups/team%20a%2Fqueue") is None

    asyncio.run(scenario())
