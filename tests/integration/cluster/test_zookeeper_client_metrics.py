"""CLIENT_METRICS config resources in a ZooKeeper cluster: a subscription set through one broker is in
/config/client-metrics/<name> (URL-encoded), announced in /config/changes, and applied by every
broker; deleting all its configs removes the znode and the subscription everywhere."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

import pytest
from kazoo.client import KazooClient

from odradek.cluster.metadata.client_metrics import ZkClientMetricsConfigs
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.telemetry.manager import ClientMetricsManager
from odradek.telemetry.subscriptions import subscription

pytestmark = pytest.mark.timeout(120)


def _chroot(zookeeper_connect: str) -> str:
    return "/" + zookeeper_connect.split("/", 1)[1]


def _set(configs: dict[str, str]) -> Callable[[dict[str, str]], dict[str, str]]:
    def change(current: dict[str, str]) -> dict[str, str]:
        subscription("team a/producers", configs)  # as the handler validates
        return configs

    return change


async def _until(predicate: Callable[[], bool], what: str) -> None:
    """Poll for another broker's notification to be applied (ZooKeeper's watch is asynchronous)."""
    for _ in range(500):
        if predicate():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"never: {what}")


def test_a_subscription_set_through_one_broker_reaches_the_others(
    connect_zk: Callable[[], ZooKeeperClient], raw_zk: KazooClient, zookeeper_connect: str
) -> None:
    name, chroot = "team a/producers", _chroot(zookeeper_connect)

    async def scenario() -> None:
        first, second = ClientMetricsManager(1024), ClientMetricsManager(1024)
        zk = connect_zk()
        zk.ensure_persistent_paths()  # as every broker at start
        writer = ZkClientMetricsConfigs(zk, first)
        reader = ZkClientMetricsConfigs(connect_zk(), second)
        await writer.start()
        await reader.start()
        await writer.alter(name, _set({"metrics": "*", "interval.ms": "1000"}), validate_only=False)
        assert first.subscription_configs(name) == {"metrics": "*", "interval.ms": "1000"}
        await _until(lambda: second.subscription_names() == [name], "the other broker has it")
        stored = json.loads(raw_zk.get(f"{chroot}/config/client-metrics/team%20a%2Fproducers")[0])
        assert stored == {"version": 1, "config": {"metrics": "*", "interval.ms": "1000"}}
        changes = sorted(raw_zk.get_children(f"{chroot}/config/changes"))
        notified = json.loads(raw_zk.get(f"{chroot}/config/changes/{changes[-1]}")[0])
        assert notified["entity_path"] == "client-metrics/team%20a%2Fproducers"
        # a broker started later reads it at start
        late = ClientMetricsManager(1024)
        await ZkClientMetricsConfigs(connect_zk(), late).start()
        assert late.subscription_configs(name)["interval.ms"] == "1000"
        await writer.alter(name, lambda current: {}, validate_only=False)
        await _until(lambda: second.subscription_names() == [], "the other broker dropped it")
        assert raw_zk.exists(f"{chroot}/config/client-metrics/team%20a%2Fproducers") is None

    asyncio.run(scenario())


def test_an_invalid_change_writes_nothing(
    connect_zk: Callable[[], ZooKeeperClient], raw_zk: KazooClient, zookeeper_connect: str
) -> None:
    async def scenario() -> None:
        manager = ClientMetricsManager(1024)
        store = ZkClientMetricsConfigs(connect_zk(), manager)
        await store.start()
        with pytest.raises(KafkaError) as refused:
            await store.alter("s", _set({"interval.ms": "1"}), validate_only=False)
        assert refused.value.error_code == ErrorCode.INVALID_REQUEST
        await store.alter("s", _set({"metrics": "a"}), validate_only=True)
        assert manager.subscription_names() == []

    asyncio.run(scenario())
    assert raw_zk.exists(f"{_chroot(zookeeper_connect)}/config/client-metrics/s") is None
