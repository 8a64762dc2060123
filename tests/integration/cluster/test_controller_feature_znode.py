"""The /feature znode a controller keeps (KIP-584), as Kafka 3.9's ZooKeeper-mode controller does on
taking over (KafkaController.enableFeatureVersioning): Kafka's brokers read their finalized features
and the features epoch (its zkVersion) from it, so a cluster whose first controller is an odradek broker
must have it too."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

import pytest

from odradek.cluster.controller.config import ControllerConfig
from odradek.cluster.controller.controller import KafkaController
from odradek.cluster.inter_broker_versions import InterBrokerVersions
from odradek.cluster.zookeeper.client import ZooKeeperClient

FEATURE = "/feature"


def take_over(
    connect_zk: Callable[[], ZooKeeperClient], before: bytes | None, ibp: str = "3.9"
) -> tuple[dict[str, object], int]:
    """/feature as `before` (absent when None), then a controller elected: what /feature holds after,
    and its version."""

    async def main() -> tuple[dict[str, object], int]:
        zk = connect_zk()
        zk.ensure_persistent_paths()
        if before is not None:
            zk.kazoo.create(FEATURE, before)
        config = ControllerConfig(broker_id=1, inter_broker_versions=InterBrokerVersions.at(ibp))
        controller = KafkaController(connect_zk(), config)
        try:
            await controller.start()
            await controller.wait_idle()
            assert controller.is_active
        finally:
            await controller.stop()
        data, stat = await asyncio.to_thread(zk.kazoo.get, FEATURE)
        return json.loads(data), stat.version

    return asyncio.run(main())


def test_a_controller_of_a_new_cluster_creates_the_feature_znode_enabled_with_no_features(
    connect_zk: Callable[[], ZooKeeperClient],
) -> None:
    # byte for byte what Kafka 3.9's controller writes at inter.broker.protocol.version 3.9
    assert take_over(connect_zk, None) == ({"features": {}, "version": 2, "status": 1}, 0)


def test_before_3_3_the_feature_znode_is_written_at_its_first_version(
    connect_zk: Callable[[], ZooKeeperClient],
) -> None:
    assert take_over(connect_zk, None, ibp="3.2") == ({"features": {}, "version": 1, "status": 1}, 0)


@pytest.mark.parametrize(
    ("before", "after", "version"),
    [
        # disabled: enabled, its features dropped (Kafka warns of them)
        (
            {"version": 2, "status": 0, "features": {"f": {"max_version_level": 3}}},
            {"version": 2, "status": 1, "features": {}},
            1,
        ),
        # enabled, as the controller would write it: left as it is
        (
            {"version": 2, "status": 1, "features": {"f": {"max_version_level": 3}}},
            {"version": 2, "status": 1, "features": {"f": {"max_version_level": 3}}},
            0,
        ),
        # enabled at the first version: rewritten at the second, the features kept
        (
            {"version": 1, "status": 1, "features": {"f": {"min_version_level": 1, "max_version_level": 3}}},
            {"version": 2, "status": 1, "features": {"f": {"max_version_level": 3}}},
            1,
        ),
    ],
)
def test_an_existing_feature_znode_is_enabled_keeping_its_features(
    connect_zk: Callable[[], ZooKeeperClient], before: object, after: object, version: int
) -> None:
    assert take_over(connect_zk, json.dumps(before).encode()) == (after, version)
