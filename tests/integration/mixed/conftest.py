"""The mixed clusters' ZooKeeper: one server for the session; each cluster takes a chroot of its own."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.mixed_cluster import Kind, MixedCluster, running_mixed_cluster
from tests.support.zookeeper import ZooKeeperServer, zookeeper_server

__all__ = ["zookeeper_server"]  # the fixture, re-exported for the tests here


@pytest.fixture(scope="module")
def one_kafka_two_odradek(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[MixedCluster]:
    """Kafka broker 1, started first and so the controller, and odradek brokers 2 and 3: one cluster per
    module that asks for it."""
    with running_mixed_cluster(
        tmp_path_factory, zookeeper_server, {1: Kind.KAFKA, 2: Kind.ODRADEK, 3: Kind.ODRADEK}, 1
    ) as cluster:
        yield cluster
