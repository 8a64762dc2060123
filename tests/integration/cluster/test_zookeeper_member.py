"""A broker's membership (server/zookeeper_member.py) on a real ZooKeeper: registration, a new broker
epoch after the session expires, and the start-up errors an operator sees in one line."""

from __future__ import annotations

import asyncio
import signal
import socket
import time
from pathlib import Path

import pytest

from odradek.cluster.controller.config import controller_config
from odradek.cluster.metadata import BrokerEndpoint, ClusterMetadata
from odradek.cluster.replica_manager import ReplicaManager
from odradek.cluster.replication.alter_partition import alter_partition_manager
from odradek.cluster.zookeeper import paths
from odradek.cluster.zookeeper.broker_znode import BrokerRegistration, ListenerEndpoint
from odradek.cluster.zookeeper.brokers import broker_registration
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.cluster.zookeeper.errors import BrokerIdAlreadyRegisteredError
from odradek.config.broker import BrokerConfig
from odradek.server.broker import Broker
from odradek.server.zookeeper_member import ZooKeeperMember
from odradek.storage.log_manager import LogManager
from tests.support.broker_process import BrokerProcess, free_port
from tests.support.interop import wait_until
from tests.support.zookeeper import ZooKeeperServer, expire_session


def _config(connect: str, node: int = 1, rack: str | None = None) -> BrokerConfig:
    settings = {"node.id": str(node), "zookeeper.connect": connect, "zookeeper.session.timeout.ms": "3000"}
    if rack:
        settings["broker.rack"] = rack
    return BrokerConfig(settings)


def test_a_member_registers_again_with_a_new_epoch_after_its_session_expires(
    zookeeper_connect: str, zookeeper_server: ZooKeeperServer, tmp_path: Path
) -> None:
    async def main() -> tuple[int, int, int]:
        member = ZooKeeperMember(_config(zookeeper_connect, rack="r1"), 1)
        await member.connect()
        replicas = ReplicaManager(1, ClusterMetadata("c", -1, []), LogManager([tmp_path]))
        advertised = {"PLAINTEXT": [BrokerEndpoint(1, "127.0.0.2", 9092, "r1")]}
        sender = alter_partition_manager(member.config, 1, replicas.cluster, lambda: replicas.broker_epoch)
        await member.register(advertised, replicas, sender)
        assert member.zk is not None
        found = await asyncio.to_thread(broker_registration, member.zk, 1)
        assert found is not None and found[1] == replicas.broker_epoch
        assert (
            found[0].rack == "r1" and found[0].endpoints[0].connection_string == "PLAINTEXT://127.0.0.2:9092"
        )
        first = replicas.broker_epoch
        await asyncio.to_thread(expire_session, member.zk.kazoo, zookeeper_server.connect_string)
        for _ in range(200):
            if replicas.broker_epoch != first:
                break
            await asyncio.sleep(0.05)
        found = await asyncio.to_thread(broker_registration, member.zk, 1)
        await member.close()
        assert found is not None
        return first, replicas.broker_epoch, found[1]

    first, second, registered = asyncio.run(main())
    assert second > first and registered == second


def test_a_broker_id_registered_twice_and_a_log_dir_of_another_cluster_stop_the_start_up(
    zookeeper_connect: str, tmp_path: Path
) -> None:
    settings = {"zookeeper.connect": zookeeper_connect, "zookeeper.session.timeout.ms": "3000"}
    first = BrokerProcess(tmp_path / "a", {**settings, "node.id": "1"}, host="127.0.0.2").start()
    try:
        twin = BrokerProcess(tmp_path / "b", {**settings, "node.id": "1"}, host="127.0.0.3")
        with pytest.raises(RuntimeError, match="exited with 1"):
            twin.start()
        assert "Broker id 1 is already registered in ZooKeeper" in twin.log_text()
        # after waiting out a session timeout, one line naming the broker that still holds it
        assert f"PLAINTEXT://127.0.0.2:{first.port}" in twin.log_text()
    finally:
        first.stop()
    # broker 1's log dir belongs to this cluster: under another chroot (another cluster) it cannot start
    other = BrokerProcess(
        tmp_path / "a", {**settings, "node.id": "1", "zookeeper.connect": zookeeper_connect + "-other"}
    )
    with pytest.raises(RuntimeError, match="exited with 1"):
        other.start()
    assert "meta.properties belongs to cluster" in other.log_text()


def test_a_broker_whose_id_an_old_session_holds_registers_once_that_session_ends(
    zookeeper_connect: str, tmp_path: Path
) -> None:
    """Kafka 3.9 exits ("already registered") while a killed predecessor's session lives on, so every
    supervisor must retry; here the successor waits for the old registration to go. The old session is
    the test's own, ended once the broker says it waits (a SIGKILLed broker's raced the timeout)."""
    holder = _hold_registration(zookeeper_connect, 1, "127.0.0.9")
    settings = {"zookeeper.connect": zookeeper_connect, "zookeeper.session.timeout.ms": "10000"}
    broker = BrokerProcess(tmp_path / "a", {**settings, "node.id": "1"}, host="127.0.0.2").start(wait=False)
    try:
        wait_until(lambda: "waiting up to" in broker.log_text(), 60, "the broker waiting for the old session")
        assert "PLAINTEXT://127.0.0.9:9092" in broker.log_text()  # it names the holder
        holder.close()
        broker.wait_listening(timeout=60)
        assert "registered in ZooKeeper as broker 1" in broker.log_text()
    finally:
        holder.close()
        broker.stop()


def test_a_running_broker_whose_id_a_twin_took_while_its_session_was_lost_stops_in_one_line(
    zookeeper_connect: str, tmp_path: Path
) -> None:
    """A twin with the same id, waiting for the registration, takes it when the running broker's session
    expires once (a pause, a network cut). The running broker tried to register again every second,
    for ever, and served on unregistered as a broker the cluster knows as the twin. It now waits as a
    starting broker does, then stops as a refused start does: one line naming the holder, status 1."""
    running = BrokerProcess(
        tmp_path / "a",
        {"zookeeper.connect": zookeeper_connect, "zookeeper.session.timeout.ms": "3000", "node.id": "1"},
        host="127.0.0.2",
    ).start()
    # the twin waits up to 1.5 x its own (longer) session timeout: longer than the pause below
    twin = BrokerProcess(
        tmp_path / "b",
        {"zookeeper.connect": zookeeper_connect, "zookeeper.session.timeout.ms": "10000", "node.id": "1"},
        host="127.0.0.3",
    ).start(wait=False)
    try:
        wait_until(lambda: "waiting up to" in twin.log_text(), 60, "the twin waiting for the registration")
        assert running.process is not None
        running.process.send_signal(signal.SIGSTOP)  # past its session timeout: the session expires
        try:
            wait_until(lambda: "registered in ZooKeeper as broker 1" in twin.log_text(), 60, "the twin in")
        finally:
            running.process.send_signal(signal.SIGCONT)
        assert running.process.wait(60) == 1
        text = running.log_text()
        assert (
            f"Broker id 1 is already registered in ZooKeeper (/brokers/ids/1) by PLAINTEXT://127.0.0.3:{twin.port}"
            in text
        )
        assert "controlled shutdown" not in text.lower()
        twin.wait_listening(timeout=60)  # the twin is broker 1, and serves
    finally:
        running.kill()
        twin.stop()


def test_a_member_speaks_and_waits_as_its_inter_broker_settings_say(
    zookeeper_connect: str, tmp_path: Path
) -> None:
    """inter.broker.protocol.version reaches the controller's requests and the AlterPartition sender;
    controller.socket.timeout.ms and request.timeout.ms reach the controller's channel."""

    async def main() -> None:
        config = BrokerConfig(
            {
                "node.id": "1",
                "zookeeper.connect": zookeeper_connect,
                "zookeeper.session.timeout.ms": "3000",
                "inter.broker.protocol.version": "3.2",
                "controller.socket.timeout.ms": "1500",
                "request.timeout.ms": "2500",
            }
        )
        member = ZooKeeperMember(config, 1)
        await member.connect()
        try:
            replicas = ReplicaManager(1, ClusterMetadata("c", -1, []), LogManager([tmp_path]))
            sender = alter_partition_manager(config, 1, replicas.cluster, lambda: replicas.broker_epoch)
            await member.register(
                {"PLAINTEXT": [BrokerEndpoint(1, "127.0.0.2", 9092, None)]}, replicas, sender
            )
            assert member.alter_partition is sender
            assert (member.alter_partition.max_version, member.alter_partition.request_timeout_s) == (1, 1.5)
            controller = controller_config(config, 1, member.inter_broker_security)
            assert controller.inter_broker_versions.leader_and_isr == 6
            assert (controller.connect_timeout_s, controller.request_timeout_s) == (1.5, 2.5)
        finally:
            await member.close()

    asyncio.run(main())


def test_a_broker_whose_id_a_live_broker_holds_never_accepts_a_connection(
    zookeeper_connect: str, tmp_path: Path
) -> None:
    """Kafka registers /brokers/ids/<id> before it processes requests; a twin used to serve clients
    (and let the test support's start() return) until its registration failed."""
    settings = {"zookeeper.connect": zookeeper_connect, "zookeeper.session.timeout.ms": "3000"}
    first = BrokerProcess(tmp_path / "a", {**settings, "node.id": "1"}, host="127.0.0.2").start()
    port = free_port()
    twin = Broker(
        BrokerConfig(
            {
                **settings,
                "node.id": "1",
                "listeners": f"PLAINTEXT://127.0.0.3:{port}",
                "log.dirs": str(tmp_path / "b"),
            }
        )
    )
    reached_while_registering: list[bool] = []

    async def main() -> None:
        member = twin.member
        assert member is not None
        register = member.register

        async def register_after_probing(*args: object) -> None:
            reached_while_registering.append(await asyncio.to_thread(_accepts, "127.0.0.3", port))
            await register(*args)  # type: ignore[arg-type]

        member.register = register_after_probing  # type: ignore[method-assign]
        try:
            with pytest.raises(BrokerIdAlreadyRegisteredError):
                await twin.start()
        finally:
            await twin.close()

    try:
        asyncio.run(main())
    finally:
        first.stop()
    assert reached_while_registering == [False]


def _hold_registration(connect: str, broker_id: int, host: str) -> ZooKeeperClient:
    """A session of the test's holding /brokers/ids/<id> as a broker at ``host`` would."""
    client = ZooKeeperClient.connect(connect, session_timeout_ms=10_000, connection_timeout_ms=10_000)
    client.ensure_persistent_paths()
    endpoint = ListenerEndpoint("PLAINTEXT", host, 9092, "PLAINTEXT")
    registration = BrokerRegistration(broker_id, (endpoint,), int(time.time() * 1000))
    client.kazoo.create(paths.broker(broker_id), registration.serialize(), ephemeral=True)
    return client


def _accepts(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=2):
            return True
    except OSError:
        return False
