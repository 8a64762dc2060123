"""A malformed znode (written by a buggy tool, or by anyone while ZooKeeper is open) is logged and
skipped, as Kafka skips JSON it cannot parse: it never stops a controller from taking over nor a broker
from following the config changes that come after it (issue #25, beyond item 15)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest

from odradek.cluster.controller import zk_state
from odradek.cluster.metadata.topic_configs import TopicConfigSync
from odradek.cluster.zookeeper import paths
from odradek.cluster.zookeeper.broker_znode import BrokerRegistration, ListenerEndpoint
from odradek.cluster.zookeeper.brokers import register_broker
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.cluster.zookeeper.config_znodes import EntityConfigZnode
from odradek.cluster.zookeeper.configs import config_changes_after, create_config_change_notification
from odradek.cluster.zookeeper.topic_znodes import TopicAssignmentZnode
from odradek.cluster.zookeeper.znode_json import MalformedZnodeError
from odradek.protocol.messages.metadata import MetadataRequest
from tests.support.broker_process import BrokerProcess
from tests.support.raw_client import RawClient

MALFORMED = [b"{not json", b'{"version":2,"partitions":"none"}', b"[]", b"\xff\xfe"]


def test_the_controller_loads_its_context_past_malformed_topic_and_broker_znodes(
    zk: ZooKeeperClient, caplog: pytest.LogCaptureFixture
) -> None:
    """Before: MalformedZnodeError out of load_context, so the broker that won /controller kept it and
    controlled nothing: no leader was ever elected again in the cluster."""
    zk.create_persistent_path(paths.topic("good"), TopicAssignmentZnode({0: [1]}).serialize())
    for index, data in enumerate(MALFORMED):
        zk.create_persistent_path(paths.topic(f"bad-{index}"), data)
    endpoint = ListenerEndpoint("PLAINTEXT", "127.0.0.2", 9092, "PLAINTEXT")
    register_broker(zk, BrokerRegistration(1, (endpoint,), 1_700_000_000_000))
    zk.create_persistent_path(paths.broker(9), b'{"version":5,"endpoints":7}')
    with caplog.at_level(logging.WARNING):
        context = zk_state.load_context(zk, 1, 0)
    assert list(context.assignments) == ["good"]
    assert list(context.live_brokers) == [1]
    logged = caplog.text
    assert all(f"/brokers/topics/bad-{index}" in logged for index in range(len(MALFORMED))), logged
    assert "/brokers/ids/9" in logged


def test_a_malformed_config_change_notification_does_not_hide_the_ones_after_it(
    zk: ZooKeeperClient, caplog: pytest.LogCaptureFixture
) -> None:
    """Before: the whole read failed, and with it every later change (topic configs, SCRAM users)."""
    first = create_config_change_notification(zk, "topics/a")
    zk.write(
        zk.kazoo.create_async, f"{paths.CONFIG_CHANGES}/{paths.CONFIG_CHANGE_PREFIX}", b"junk", sequence=True
    )
    last = create_config_change_notification(zk, "topics/b")
    with caplog.at_level(logging.WARNING):
        changes = config_changes_after(zk, -1)
    assert [(number, change.entity_path) for number, change in changes] == [
        (first, "topics/a"),
        (last, "topics/b"),
    ]
    assert "junk" in caplog.text


class _NoLogs:
    """The logs of a broker that holds no replica: nothing to apply configs to."""

    def topic_log_config(self, configs: dict[str, str]) -> dict[str, str]:
        return configs

    def apply_topic_config(self, name: str, config: Any) -> None:
        pass


class _NoTopics:
    def topic(self, name: str) -> None:
        return None


def test_a_malformed_topic_config_is_skipped_and_the_changes_after_it_still_apply(
    zk: ZooKeeperClient,
) -> None:
    """Before: the read of the notifications died on it, so topic b's change was never applied. A
    config Kafka cannot parse (c: not a JSON object) is no overrides, as Kafka reads it; one it refuses
    (a: a value that is not a string) leaves the topic's configs as they were."""
    zk.create_persistent_path(paths.config_entity(paths.TOPIC_CONFIG, "a"), b'{"version":1,"config":{"x":1}}')
    zk.create_persistent_path(
        paths.config_entity(paths.TOPIC_CONFIG, "b"), EntityConfigZnode({"retention.ms": "1000"}).serialize()
    )
    zk.create_persistent_path(paths.config_entity(paths.TOPIC_CONFIG, "c"), b'{"version":1,"config":[]}')
    create_config_change_notification(zk, "topics/a")
    create_config_change_notification(zk, "brokers/<default>")
    create_config_change_notification(zk, "topics/c")
    last = create_config_change_notification(zk, "topics/b")
    sync = TopicConfigSync(zk, _NoTopics(), _NoLogs())  # type: ignore[arg-type]
    sync.known["a"] = {"retention.ms": "5"}
    sync.known["c"] = {"retention.ms": "6"}

    async def unreadable_broker_configs(name: str) -> None:
        raise MalformedZnodeError(f"/config/brokers/{name} does not hold JSON")

    sync.follow(paths.BROKER_CONFIG, unreadable_broker_configs)
    asyncio.run(sync._read_changes())
    assert sync.known == {"a": {"retention.ms": "5"}, "b": {"retention.ms": "1000"}, "c": {}}
    assert sync.sequence == last


def test_a_broker_whose_cluster_id_znode_is_malformed_exits_with_one_line_naming_it(
    zookeeper_connect: str, tmp_path: Path
) -> None:
    """Before: a traceback (MalformedZnodeError was not a start-up failure). As Kafka, which cannot
    tell which cluster it joins: fatal."""
    _create(zookeeper_connect, {paths.CLUSTER_ID: b"{not json"})
    broker = BrokerProcess(tmp_path / "broker", {"zookeeper.connect": zookeeper_connect})
    broker.start(wait=False)
    assert broker.process is not None
    code = broker.process.wait(60)
    broker.process = None
    lines = broker.log_text().splitlines()
    assert code == 1, lines
    assert not any("Traceback" in line for line in lines), "\n".join(lines)
    assert lines[-1].startswith(f"odradek broker: {paths.CLUSTER_ID} "), lines[-1]


def test_a_broker_whose_broker_config_znodes_kafka_cannot_parse_starts_without_those_overrides(
    zookeeper_connect: str, tmp_path: Path
) -> None:
    """Before: it exited at start-up ("/config/brokers/<default> holds JSON but not an object: []"). Kafka's
    ConfigEntityZNode.decode reads such a znode as no overrides, and the broker starts."""
    _create(
        zookeeper_connect,
        {
            paths.config_entity(paths.BROKER_CONFIG, paths.DEFAULT_ENTITY): b"[]",
            paths.config_entity(paths.BROKER_CONFIG, "1"): b'{"version":1,"config":{"secret.key":"s3cr3t"',
        },
    )
    broker = BrokerProcess(tmp_path / "broker", {"zookeeper.connect": zookeeper_connect}).start(timeout=60)
    try:
        with RawClient(broker.port) as client:
            metadata = client.request(MetadataRequest(topics=[]), 12)
        assert [b.node_id for b in metadata.brokers] == [1]
        logged = broker.log_text()
        for node in (paths.DEFAULT_ENTITY, "1"):
            assert f"/config/brokers/{node} holds no JSON object" in logged, logged
        assert "s3cr3t" not in logged
    finally:
        broker.stop()


def _create(zookeeper_connect: str, znodes: dict[str, bytes]) -> None:
    setup = ZooKeeperClient.connect(zookeeper_connect)
    try:
        for path, data in znodes.items():
            setup.create_persistent_path(path, data)
    finally:
        setup.close()
