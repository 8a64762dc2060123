"""Broker registration in a real ZooKeeper: the broker epoch, a duplicate id, expiry of the session."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from odradek.cluster.zookeeper import paths
from odradek.cluster.zookeeper.broker_znode import BrokerRegistration, ListenerEndpoint
from odradek.cluster.zookeeper.brokers import broker_registration, live_broker_ids, register_broker
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.cluster.zookeeper.errors import BrokerIdAlreadyRegisteredError
from tests.support.zookeeper import ZooKeeperServer, expire_session


def registration(broker_id: int, port: int = 9092) -> BrokerRegistration:
    endpoint = ListenerEndpoint("PLAINTEXT", f"127.0.0.{broker_id + 1}", port, "PLAINTEXT")
    return BrokerRegistration(broker_id, (endpoint,), 1_700_000_000_000)


def test_broker_epoch_is_the_registrations_czxid(zk: ZooKeeperClient) -> None:
    broker_epoch = register_broker(zk, registration(1))
    found = zk.read(paths.broker(1))
    assert found is not None
    _, stat = found
    assert broker_epoch == stat.czxid > 0
    assert stat.ephemeralOwner == zk.session_id  # ephemeral, this session's
    assert broker_registration(zk, 1) == (registration(1), broker_epoch)
    # registering again in the same session (a retry) is harmless and keeps the epoch
    assert register_broker(zk, registration(1)) == broker_epoch


def test_a_second_broker_with_the_same_id_is_refused(connect_zk: Callable[[], ZooKeeperClient]) -> None:
    first, second = connect_zk(), connect_zk()
    first.ensure_persistent_paths()
    register_broker(first, registration(1))
    with pytest.raises(BrokerIdAlreadyRegisteredError, match=r"Broker id 1 is already registered"):
        register_broker(second, registration(1, port=9999))
    found = broker_registration(second, 1)
    assert found is not None and found[0].endpoints[0].port == 9092  # the first one's, untouched


def test_session_changes_are_delivered_on_the_event_loop(
    zk: ZooKeeperClient, zookeeper_server: ZooKeeperServer
) -> None:
    """What a broker learns when its session expires (re-register, resign as controller), on its loop."""

    async def main() -> list[str]:
        loop = asyncio.get_running_loop()
        states: list[str] = []
        reconnected = asyncio.Event()

        def on_state(state: str) -> None:
            assert asyncio.get_running_loop() is loop
            states.append(state)
            if state == "CONNECTED":
                reconnected.set()

        zk.watch_session(on_state, loop)
        await asyncio.to_thread(expire_session, zk.kazoo, zookeeper_server.connect_string)
        await asyncio.wait_for(reconnected.wait(), 10)
        return states

    states = asyncio.run(main())
    assert "LOST" in states and states[-1] == "CONNECTED"


def test_registration_vanishes_when_the_session_expires(
    connect_zk: Callable[[], ZooKeeperClient], zookeeper_server: ZooKeeperServer
) -> None:
    observer, broker = connect_zk(), connect_zk()
    observer.ensure_persistent_paths()
    first_epoch = register_broker(broker, registration(2))
    register_broker(observer, registration(1))
    assert live_broker_ids(observer) == [1, 2]
    expire_session(broker.kazoo, zookeeper_server.connect_string)
    assert live_broker_ids(observer) == [1]  # gone at once, and not re-created behind our back
    # the broker registers again in its new session: a new broker epoch
    assert register_broker(broker, registration(2)) > first_epoch
    assert live_broker_ids(observer) == [1, 2]
