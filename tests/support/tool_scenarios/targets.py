"""The brokers Kafka's tools run against: odradek (one broker, or the 3-broker ZooKeeper cluster of
tests/support/txn_cluster.py) and Apache Kafka 3.9 with the same settings (the golden transcripts).

Every target has an ACL authorizer with the anonymous PLAINTEXT principal a super user, so that
kafka-acls has ACLs to manage while every other tool is allowed everything.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from odradek.protocol.messages.metadata import MetadataRequest, MetadataResponse
from tests.support import java_suite
from tests.support.broker_process import BrokerProcess
from tests.support.interop import wait_until
from tests.support.kafka_reference import KafkaBrokers
from tests.support.raw_client import RawClient
from tests.support.txn_cluster import Cluster
from tests.support.zookeeper import ZooKeeperServer

#: Both brokers' settings on top of java_suite.SINGLE_NODE_SETTINGS (one broker) or txn_cluster's (three).
TOOL_SETTINGS = {
    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
    "super.users": "User:ANONYMOUS",
}


class OdradekSingleNode:
    kind = "single-node"
    broker = "odradek"

    def __init__(self, work: Path) -> None:
        work.mkdir(parents=True, exist_ok=True)
        self.process = BrokerProcess(work / "data", {**java_suite.SINGLE_NODE_SETTINGS, **TOOL_SETTINGS})

    @property
    def addresses(self) -> Mapping[int, tuple[str, int]]:
        return {1: (self.process.host, self.process.port)}

    def log_dir(self, node: int) -> Path:
        return self.process.data_dir

    def start(self) -> OdradekSingleNode:
        self.process.start()
        return self

    def stop(self) -> None:
        self.process.stop()

    def stop_broker(self, node: int) -> None:
        self.process.stop()

    def start_broker(self, node: int) -> None:
        self.process.start()


class OdradekCluster:
    kind = "cluster"
    broker = "odradek"

    def __init__(self, work: Path, zookeeper_connect: str) -> None:
        work.mkdir(parents=True, exist_ok=True)
        self.cluster = Cluster(work, zookeeper_connect, replication=3, min_isr=2, extra=TOOL_SETTINGS)

    @property
    def addresses(self) -> Mapping[int, tuple[str, int]]:
        return {node: (b.host, b.port) for node, b in self.cluster.brokers.items()}

    def log_dir(self, node: int) -> Path:
        return self.cluster.brokers[node].data_dir

    def start(self) -> OdradekCluster:
        for broker in self.cluster.brokers.values():
            broker.start(wait=False)
        for broker in self.cluster.brokers.values():
            broker.wait_listening(60)
        wait_until(lambda: every_broker_known(self.addresses), 60, "three brokers in every Metadata", 0.2)
        return self

    def stop(self) -> None:
        for broker in self.cluster.brokers.values():
            broker.stop()

    def stop_broker(self, node: int) -> None:
        self.cluster.brokers[node].stop()

    def start_broker(self, node: int) -> None:
        self.cluster.brokers[node].start(timeout=60)


class KafkaTarget:
    """Apache Kafka 3.9 (ZooKeeper mode), one broker or three."""

    broker = "kafka-3.9"

    def __init__(self, brokers: int, work: Path, zookeeper: ZooKeeperServer) -> None:
        self.kind = "single-node" if brokers == 1 else "cluster"
        self.kafka = KafkaBrokers(brokers, work, zookeeper, TOOL_SETTINGS)

    @property
    def addresses(self) -> Mapping[int, tuple[str, int]]:
        return self.kafka.addresses

    def log_dir(self, node: int) -> Path:
        return self.kafka.log_dir(node)

    def start(self) -> KafkaTarget:
        self.kafka.start()
        if len(self.addresses) > 1:
            wait_until(lambda: every_broker_known(self.addresses), 60, "every broker in every Metadata", 0.2)
        return self

    def stop(self) -> None:
        self.kafka.stop()

    def stop_broker(self, node: int) -> None:
        self.kafka.stop_broker(node)

    def start_broker(self, node: int) -> None:
        self.kafka.start_broker(node)


def every_broker_known(addresses: Mapping[int, tuple[str, int]]) -> bool:
    try:
        for host, port in addresses.values():
            with RawClient(port, timeout=2, host=host) as client:
                response: MetadataResponse = client.request(
                    MetadataRequest(topics=[], allow_auto_topic_creation=False), 12
                )
            if len(response.brokers) != len(addresses):
                return False
        return True
    except OSError:
        return False
