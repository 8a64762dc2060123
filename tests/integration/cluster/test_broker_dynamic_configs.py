"""Dynamic broker configs in a ZooKeeper cluster (KIP-226 in ZooKeeper mode) on two broker processes:
/config/brokers/<default> and /config/brokers/<id> with their /config/changes notifications, applied by
every broker concerned, at once and at start, and described with Kafka's sources.

Per-broker resources go through confluent-kafka's AdminClient; the cluster default (the resource
named "") through the wire protocol itself, since confluent-kafka 2.16 refuses a ConfigResource with
an empty name ("Invalid ConfigResource")."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from odradek.protocol.messages.describe_configs import DescribeConfigsRequest, DescribeConfigsResource
from odradek.protocol.messages.incremental_alter_configs import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from odradek.protocol.messages.metadata import MetadataRequest
from tests.support.broker_process import BrokerProcess
from tests.support.interop import wait_until
from tests.support.raw_client import RawClient
from tests.support.requirements import require_module
from tests.support.zookeeper import ZooKeeperServer

RETENTION = "log.retention.ms"
BROKER_RESOURCE = 4
#: IncrementalAlterConfigs operations.
SET, DELETE = 0, 1
INVALID_REQUEST = 42
#: DescribeConfigs config sources.
SOURCES = {
    1: "DYNAMIC_TOPIC_CONFIG",
    2: "DYNAMIC_BROKER_CONFIG",
    3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
    4: "STATIC_BROKER_CONFIG",
    5: "DEFAULT_CONFIG",
}


class Pair:
    def __init__(self, base: Path, connect: str) -> None:
        self.brokers = {
            node: BrokerProcess(
                base / f"broker-{node}",
                {
                    "node.id": str(node),
                    "zookeeper.connect": connect,
                    "zookeeper.session.timeout.ms": "3000",
                    "offsets.topic.replication.factor": "1",
                    "log.segment.bytes": "1048576",
                },
                host=f"127.0.0.{node + 1}",
            )
            for node in (1, 2)
        }

    def admin(self, node: int) -> Any:
        from confluent_kafka.admin import AdminClient

        return AdminClient({"bootstrap.servers": self.brokers[node].bootstrap})


@pytest.fixture
def pair(zookeeper_server: ZooKeeperServer, tmp_path: Path) -> Iterator[tuple[Pair, KazooClient, str]]:
    require_module("confluent_kafka")
    chroot = f"/odradek-{uuid.uuid4().hex[:8]}"
    made = Pair(tmp_path, f"{zookeeper_server.connect_string}{chroot}")
    zk = KazooClient(hosts=zookeeper_server.connect_string)
    zk.start(10)
    try:
        yield made, zk, chroot
    finally:
        for broker in made.brokers.values():
            broker.stop()
        zk.stop()
        zk.close()


def alter_default(broker: BrokerProcess, operation: int, name: str, value: str | None = None) -> int:
    """IncrementalAlterConfigs on the cluster default; the resource's error code."""
    return alter_raw(broker, "", operation, name, value)[0]


def alter_raw(
    broker: BrokerProcess, resource: str, operation: int, name: str, value: str | None = None
) -> tuple[int, str | None]:
    """IncrementalAlterConfigs sent to `broker` itself: the resource's error code and message."""
    request = IncrementalAlterConfigsRequest(
        resources=[
            AlterConfigsResource(
                resource_type=BROKER_RESOURCE,
                resource_name=resource,
                configs=[AlterableConfig(name=name, config_operation=operation, value=value)],
            )
        ],
        validate_only=False,
    )
    with RawClient(broker.port, timeout=30, host=broker.host) as client:
        (answer,) = client.request(request, 1).responses
    return int(answer.error_code), answer.error_message


def describe_default(broker: BrokerProcess, name: str) -> tuple[str | None, str]:
    request = DescribeConfigsRequest(
        resources=[
            DescribeConfigsResource(
                resource_type=BROKER_RESOURCE, resource_name="", configuration_keys=[name]
            )
        ]
    )
    with RawClient(broker.port, timeout=30, host=broker.host) as client:
        (result,) = client.request(request, 4).results
    (entry,) = result.configs
    return entry.value, SOURCES[entry.config_source]


def alter(admin: Any, broker: str, operation: str, name: str, value: str | None = None) -> None:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    resource = ConfigResource(
        ResourceType.BROKER,
        broker,
        incremental_configs=[ConfigEntry(name, value, incremental_operation=AlterConfigOpType[operation])],
    )
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(30)


def describe(admin: Any, broker: str) -> dict[str, Any]:
    from confluent_kafka.admin import ConfigResource, ResourceType

    (future,) = admin.describe_configs([ConfigResource(ResourceType.BROKER, broker)]).values()
    entries: dict[str, Any] = future.result(30)
    return entries


def source(admin: Any, broker: str, name: str) -> tuple[str | None, str]:
    entry = describe(admin, broker)[name]
    return entry.value, SOURCES[int(entry.source)]  # confluent-kafka gives the source as a number


def test_broker_configs_go_through_zookeeper_to_every_broker_concerned(
    pair: tuple[Pair, KazooClient, str],
) -> None:
    from confluent_kafka import KafkaException

    cluster, zk, chroot = pair
    one = cluster.brokers[1].start()
    # a client made before the controller's first UpdateMetadata would not find broker 1 by its id
    # (librdkafka waits for its next metadata refresh)
    wait_until(lambda: _knows(one, 1), 60, "broker 1 in its own metadata", interval=0.1)
    admin_one = cluster.admin(1)

    # the cluster-wide default: written to ZooKeeper with a notification, applied by broker 1
    assert alter_default(one, SET, RETENTION, "3600000") == 0
    data, _ = zk.get(f"{chroot}/config/brokers/<default>")
    assert json.loads(data) == {"version": 1, "config": {RETENTION: "3600000"}}
    changes = [
        json.loads(zk.get(f"{chroot}/config/changes/{c}")[0])
        for c in zk.get_children(f"{chroot}/config/changes")
    ]
    assert {"version": 2, "entity_path": "brokers/<default>"} in changes
    wait_until(
        lambda: source(admin_one, "1", RETENTION) == ("3600000", "DYNAMIC_DEFAULT_BROKER_CONFIG"),
        60,
        "the default applied on broker 1",
        interval=0.2,
    )
    assert not (one.data_dir / "__odradek_broker_configs.json").exists()  # ZooKeeper holds them

    # a broker started later takes them at start
    two = cluster.brokers[2].start()
    wait_until(lambda: _knows(two, 2) and _knows(one, 2), 60, "both brokers in metadata", interval=0.1)
    admin_two = cluster.admin(2)
    assert source(admin_two, "2", RETENTION) == ("3600000", "DYNAMIC_DEFAULT_BROKER_CONFIG")

    # a per-broker config: broker 2 only, over the default
    alter(admin_two, "2", "SET", RETENTION, "7200000")
    data, _ = zk.get(f"{chroot}/config/brokers/2")
    assert json.loads(data) == {"version": 1, "config": {RETENTION: "7200000"}}
    wait_until(
        lambda: source(admin_two, "2", RETENTION) == ("7200000", "DYNAMIC_BROKER_CONFIG"),
        60,
        "the per-broker config applied on broker 2",
        interval=0.2,
    )
    assert source(admin_one, "1", RETENTION) == ("3600000", "DYNAMIC_DEFAULT_BROKER_CONFIG")
    # the other sources, as Kafka's: set in server.properties, or left at Kafka's default
    assert source(admin_one, "1", "log.segment.bytes") == ("1048576", "STATIC_BROKER_CONFIG")
    assert source(admin_one, "1", "log.cleaner.threads")[1] == "DEFAULT_CONFIG"
    assert describe_default(one, RETENTION) == ("3600000", "DYNAMIC_DEFAULT_BROKER_CONFIG")

    # the default applies to every log: a topic without overrides shows (and uses) it
    from confluent_kafka.admin import ConfigResource, NewTopic, ResourceType

    for future in admin_one.create_topics([NewTopic("kept", 2, 1)]).values():
        future.result(30)

    def topic_retention() -> str | None:
        (future,) = admin_one.describe_configs([ConfigResource(ResourceType.TOPIC, "kept")]).values()
        return str(future.result(30)["retention.ms"].value)

    wait_until(lambda: topic_retention() == "3600000", 60, "the topic default", interval=0.2)

    # deleting the default: broker 1 is back to its static configuration, broker 2 keeps its own
    assert alter_default(one, DELETE, RETENTION) == 0
    wait_until(
        lambda: source(admin_one, "1", RETENTION)[1] != "DYNAMIC_DEFAULT_BROKER_CONFIG",
        60,
        "the default removed on broker 1",
        interval=0.2,
    )
    assert source(admin_two, "2", RETENTION) == ("7200000", "DYNAMIC_BROKER_CONFIG")

    # refusals as Kafka's: another broker's id, a bad value; nothing is written
    code, message = alter_raw(one, "2", SET, RETENTION, "1000")
    assert (code, message) == (INVALID_REQUEST, "Unexpected broker id, expected 1, but received 2")
    with pytest.raises(KafkaException):
        alter(admin_one, "1", "SET", RETENTION, "soon")
    # Kafka stores a password only encrypted (password.encoder.secret), odradek has no encoder
    code, message = alter_raw(one, "1", SET, "listener.name.plaintext.ssl.key.password", "secret")
    assert code == INVALID_REQUEST and "Password encoder secret not configured" in (message or "")
    assert not zk.exists(f"{chroot}/config/brokers/1")


def _knows(broker: BrokerProcess, count: int) -> bool:
    """Whether `broker`'s Metadata lists `count` brokers."""
    try:
        with RawClient(broker.port, timeout=5, host=broker.host) as client:
            response = client.request(MetadataRequest(topics=[], allow_auto_topic_creation=False), 12)
    except OSError:
        return False
    return len(response.brokers) == count
