"""Broker registration in a real ZooKeeper: the broker epoch, a duplicate id, expiry of the session."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable

import pytest

from odradek.cluster.zookeeper import paths
from odradek.cluster.zookeeper.broker_znode import BrokerRegistration, ListenerEndpoint
from odradek.cluster.zookeeper.brokers import broker_registration, live_broker_ids, register_broker
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.cluster.zookeeper.errors import BrokerIdAlreadyRegisteredError
from tests.support.interop import wait_until
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
    with pytest.raises(BrokerIdAlreadyRegisteredError, match=r"Broker id 1 is already registered") as refused:
        register_broker(second, registration(1, port=9999), wait_s=0.5)
    # one line saying which broker holds it
    assert "PLAINTEXT://127.0.0.2:9092" in str(refused.value) and "\n" not in str(refused.value)
    assert f"0x{first.session_id:x}" in str(refused.value)
    found = broker_registration(second, 1)
    assert found is not None and found[0].endpoints[0].port == 9092  # the first one's, untouched


def test_a_registration_left_by_a_session_that_ends_is_taken_once_it_goes(
    connect_zk: Callable[[], ZooKeeperClient], caplog: pytest.LogCaptureFixture
) -> None:
    """Beyond Kafka (which exits "already registered" at once, so every supervisor must retry): a
    broker restarted while its killed predecessor's session still lives waits for the registration
    to go, up to the wait given, then registers."""
    predecessor, successor = connect_zk(), connect_zk()
    predecessor.ensure_persistent_paths()
    register_broker(predecessor, registration(1))
    result: list[int | BaseException] = []

    def register() -> None:
        try:
            result.append(register_broker(successor, registration(1, port=9999), wait_s=60))
        except BaseException as error:  # handed to the test's thread
            result.append(error)

    with caplog.at_level(logging.INFO, "odradek.cluster"):
        thread = threading.Thread(target=register)
        thread.start()
        wait_until(
            lambda: "waiting up to" in caplog.text, 10, "the successor waiting for the old registration"
        )
        assert not result
        predecessor.close()  # its session ends: the registration goes
        thread.join(30)
    assert len(result) == 1 and isinstance(result[0], int), result
    found = successor.read(paths.broker(1))
    assert found is not None and found[1].ephemeralOwner == successor.session_id
    assert found[1].czxid == result[0]
    assert "PLAINTEXT://127.0.0.2:9092" in caplog.text  # the waiting line said which broker held it


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
