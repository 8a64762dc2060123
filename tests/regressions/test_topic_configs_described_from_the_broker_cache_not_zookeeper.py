"""In a ZooKeeper cluster, DescribeConfigs answered a topic's configs from the broker's metadata cache,
which changes only once the broker has read the /config/changes notification: right after an
IncrementalAlterConfigs a client could read the old value back (Kafka's Java AdminClient did, on the
3-broker cluster, in tests/compat/java's AdminTest). Kafka 3.9 reads a topic's overrides from
ZooKeeper for every DescribeConfigs (ZkConfigRepository), so what was written is what is described.
Here the override is written to /config/topics/<t> with no notification at all: the window between
the write and its notification, held open.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from odradek.protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from odradek.protocol.messages.describe_configs import DescribeConfigsRequest, DescribeConfigsResource
from tests.support.broker_process import BrokerProcess
from tests.support.interop import wait_until
from tests.support.raw_client import RawClient
from tests.support.zookeeper import ZooKeeperServer, zookeeper_server

__all__ = ["zookeeper_server"]  # the fixture
pytestmark = pytest.mark.timeout(120)
TOPIC_RESOURCE = 2
DYNAMIC_TOPIC_CONFIG = 1


@pytest.fixture
def cluster_member(zookeeper_server: ZooKeeperServer, tmp_path: Path) -> Iterator[tuple[BrokerProcess, str]]:
    chroot = f"/odradek-{uuid.uuid4().hex[:8]}"
    broker = BrokerProcess(
        tmp_path / "broker",
        {
            "zookeeper.connect": zookeeper_server.connect_string + chroot,
            "offsets.topic.replication.factor": "1",
        },
    ).start()
    try:
        yield broker, chroot
    finally:
        broker.stop()


def test_describe_configs_reads_a_topics_overrides_written_to_zookeeper_before_their_notification(
    cluster_member: tuple[BrokerProcess, str], zookeeper_server: ZooKeeperServer
) -> None:
    broker, chroot = cluster_member
    topic = "described"
    with RawClient(broker.port, timeout=10) as client:
        create = CreateTopicsRequest(
            topics=[CreatableTopic(name=topic, num_partitions=1, replication_factor=1)], timeout_ms=10_000
        )
        # refused (INVALID_REPLICATION_FACTOR) until the broker knows of itself as a live broker
        wait_until(lambda: client.request(create, 5).topics[0].error_code == 0, 30, "the topic created")
        zk = KazooClient(hosts=zookeeper_server.connect_string)
        zk.start(10)
        try:
            path = f"{chroot}/config/topics/{topic}"
            wait_until(lambda: zk.exists(path) is not None, 30, "the topic's config znode")
            zk.set(path, json.dumps({"version": 1, "config": {"retention.ms": "3600000"}}).encode())
        finally:
            zk.stop()
            zk.close()
        described = client.request(
            DescribeConfigsRequest(
                resources=[
                    DescribeConfigsResource(
                        resource_type=TOPIC_RESOURCE, resource_name=topic, configuration_keys=["retention.ms"]
                    )
                ]
            ),
            4,
        )
    [result] = described.results
    assert result.error_code == 0, result.error_message
    [entry] = result.configs
    assert (entry.name, entry.value, entry.config_source) == ("retention.ms", "3600000", DYNAMIC_TOPIC_CONFIG)
