"""The cluster tests' ZooKeeper: one server per session, a fresh chroot and clients per test."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from kazoo.client import KazooClient

from odradek.cluster.zookeeper.client import ZooKeeperClient
from tests.support.zookeeper import ZooKeeperServer, zookeeper_connect, zookeeper_server

__all__ = ["zookeeper_connect", "zookeeper_server"]  # fixtures, re-exported for the tests here

#: Short, so that expiry-driven tests are quick; the server's floor is 2 ticks (1 s).
SESSION_TIMEOUT_MS = 4000


@pytest.fixture
def connect_zk(zookeeper_connect: str) -> Iterator[Callable[[], ZooKeeperClient]]:
    """Makes clients (as separate brokers would have) in this test's chroot; all closed afterwards."""
    clients: list[ZooKeeperClient] = []

    def connect() -> ZooKeeperClient:
        client = ZooKeeperClient.connect(
            zookeeper_connect, session_timeout_ms=SESSION_TIMEOUT_MS, connection_timeout_ms=10_000
        )
        clients.append(client)
        return client

    yield connect
    for client in clients:
        client.close()


@pytest.fixture
def zk(connect_zk: Callable[[], ZooKeeperClient]) -> ZooKeeperClient:
    """A client in this test's chroot, with the persistent znodes a Kafka broker creates at start."""
    client = connect_zk()
    client.ensure_persistent_paths()
    return client


@pytest.fixture
def raw_zk(zookeeper_server: ZooKeeperServer) -> Iterator[KazooClient]:
    """A plain kazoo client at the server's root, to look at znodes as any other tool would."""
    client = KazooClient(hosts=zookeeper_server.connect_string)
    client.start(10)
    yield client
    client.stop()
    client.close()
