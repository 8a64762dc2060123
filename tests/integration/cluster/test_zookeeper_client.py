"""ZooKeeperClient against a real ZooKeeper: chroot, start-up znodes, cluster id, connection timeout,
and the JSON of every znode it writes compared with what Kafka 3.9 writes there."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from odradek.cluster.zookeeper import configs, paths, producer_ids, topics
from odradek.cluster.zookeeper.broker_znode import BrokerRegistration, ListenerEndpoint
from odradek.cluster.zookeeper.brokers import register_broker
from odradek.cluster.zookeeper.client import ZooKeeperClient, split_chroot
from odradek.cluster.zookeeper.controller_election import elect_controller
from odradek.cluster.zookeeper.errors import ZooKeeperConnectionError
from odradek.cluster.zookeeper.topic_znodes import PartitionStateZnode, TopicAssignmentZnode
from odradek.storage.partition import topic_id_from_string
from tests.support import znode_golden as golden
from tests.support.broker_process import free_port
from tests.support.znode_golden import assert_same_json
from tests.support.zookeeper import ZooKeeperServer


def test_the_chroot_is_created_when_missing(zookeeper_connect: str, raw_zk: KazooClient) -> None:
    _, chroot = split_chroot(zookeeper_connect)
    assert raw_zk.exists(chroot) is None
    client = ZooKeeperClient.connect(f"{zookeeper_connect}/nested", session_timeout_ms=4000)
    try:
        client.ensure_persistent_paths()
        assert raw_zk.exists(f"{chroot}/nested/brokers/ids") is not None
        # Kafka's createRecursive leaves the parents it makes with no data (null, not empty)
        assert raw_zk.get(chroot)[0] is None
    finally:
        client.close()


def test_persistent_paths_exist_with_no_data(zk: ZooKeeperClient) -> None:
    for path in paths.PERSISTENT_PATHS:
        found = zk.read(path)
        assert found is not None, path
        assert found[0] is None, path
    zk.ensure_persistent_paths()  # again: idempotent, as at every broker start


def test_connection_timeout_is_a_clear_error_in_time() -> None:
    nobody = f"127.0.0.1:{free_port()}/kafka"
    started = time.monotonic()
    with pytest.raises(ZooKeeperConnectionError, match=r"zookeeper.connection.timeout.ms=700"):
        ZooKeeperClient.connect(nobody, session_timeout_ms=4000, connection_timeout_ms=700)
    assert time.monotonic() - started < 5


def test_cluster_id_is_created_once_and_kept(connect_zk: Callable[[], ZooKeeperClient]) -> None:
    first, second = connect_zk(), connect_zk()
    assert first.get_or_create_cluster_id(golden.CLUSTER_ID) == golden.CLUSTER_ID
    assert second.get_or_create_cluster_id("anotherProposedId12345") == golden.CLUSTER_ID
    found = first.read(paths.CLUSTER_ID)
    assert found is not None
    assert_same_json(found[0], golden.CLUSTER_ID_ZNODE)


def test_every_znode_written_is_what_kafka_writes(zk: ZooKeeperClient) -> None:
    """The acceptance check: the same paths and JSON fields as Kafka 3.9 (golden values from its source)."""
    register_broker(
        zk,
        BrokerRegistration(
            1,
            (
                ListenerEndpoint("PLAINTEXT", "127.0.0.2", 9092, "PLAINTEXT"),
                ListenerEndpoint("REPLICATION", "127.0.0.2", 9093, "SSL"),
            ),
            1_700_000_000_000,
            rack="rack-a",
        ),
    )
    fence = elect_controller(zk, 1, timestamp_ms=1_700_000_000_000)
    topic_id = topic_id_from_string(golden.TOPIC_ID)
    topics.create_topic_assignment(zk, "orders", TopicAssignmentZnode({0: [1, 2, 3], 1: [2, 3, 1]}, topic_id))
    topics.create_partition_states(fence, "orders", {0: PartitionStateZnode(1, 0, [1, 2, 3], 5)})
    configs.change_entity_config(
        zk, "topics", "orders", {"retention.ms": "60000", "cleanup.policy": "compact"}
    )
    producer_ids.allocate_producer_id_block(zk, 1)

    def data(path: str) -> bytes | None:
        found = zk.read(path)
        assert found is not None, f"{path} was not written"
        return found[0]

    assert_same_json(data("/brokers/ids/1"), golden.BROKER_ZNODE)
    assert_same_json(data("/controller"), golden.CONTROLLER_ZNODE)
    assert data("/controller_epoch") == b"1"
    assert_same_json(data("/brokers/topics/orders"), golden.TOPIC_ZNODE)
    assert_same_json(data("/brokers/topics/orders/partitions/0/state"), golden.PARTITION_STATE_ZNODE)
    # Kafka leaves it null; kazoo's multi can only write bytes, so it is empty here (Kafka never reads it)
    assert data("/brokers/topics/orders/partitions") == b""
    assert_same_json(data("/config/topics/orders"), golden.TOPIC_CONFIG_ZNODE)
    assert_same_json(data("/config/changes/config_change_0000000000"), golden.CONFIG_CHANGE_ZNODE)
    assert_same_json(data("/latest_producer_id_block"), golden.PRODUCER_ID_BLOCK_ZNODE)


def test_watches_are_delivered_on_the_event_loop(connect_zk: Callable[[], ZooKeeperClient]) -> None:
    watcher, broker = connect_zk(), connect_zk()
    watcher.ensure_persistent_paths()

    async def main() -> list[list[str]]:
        loop = asyncio.get_running_loop()
        seen: list[list[str]] = []
        changed = asyncio.Event()

        def on_change(children: list[str]) -> None:
            assert asyncio.get_running_loop() is loop  # on the loop's thread, not kazoo's
            seen.append(children)
            changed.set()

        watcher.watch_children(paths.BROKER_IDS, on_change, loop)
        await asyncio.wait_for(changed.wait(), 10)
        changed.clear()
        endpoint = ListenerEndpoint("PLAINTEXT", "127.0.0.1", 9092, "PLAINTEXT")
        await asyncio.to_thread(register_broker, broker, BrokerRegistration(3, (endpoint,), 0))
        await asyncio.wait_for(changed.wait(), 10)
        return seen

    assert asyncio.run(main()) == [[], ["3"]]


def test_reads_wait_out_a_zookeeper_restart_and_calls_give_up_after_session_timeout(tmp_path: Path) -> None:
    """A server of its own, stopped and started again on the same port and data (sessions survive)."""
    server = ZooKeeperServer(tmp_path).start()
    patient = ZooKeeperClient.connect(server.connect_string, session_timeout_ms=6000)
    hasty = ZooKeeperClient.connect(server.connect_string, session_timeout_ms=2000)
    try:
        patient.ensure_persistent_paths()
        server.stop()
        # the read waits in a thread; the server restarts from this one (a child started by a thread
        # that ends would get its death signal: see _die_with_parent)
        with ThreadPoolExecutor(1) as pool:
            read = pool.submit(patient.children, paths.BROKER_IDS)
            time.sleep(1.0)
            assert not read.done()
            server.start()
            assert read.result(timeout=10) == []
        server.stop()
        started = time.monotonic()
        with pytest.raises(ZooKeeperConnectionError, match=r"zookeeper.session.timeout.ms=2000"):
            hasty.children(paths.BROKER_IDS)
        assert 1.5 < time.monotonic() - started < 4
        started = time.monotonic()
        with pytest.raises(ZooKeeperConnectionError, match=r"may or may not have happened"):
            register_broker(hasty, BrokerRegistration(1, (), 0))  # a multi, not asked again
        assert 1.5 < time.monotonic() - started < 4
    finally:
        patient.close()
        hasty.close()
        server.stop()
