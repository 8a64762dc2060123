"""The brokers Kafka's tools run against: odradek (one broker, or the 3-broker ZooKeeper cluster of
tests/support/txn_cluster.py) and Apache Kafka with the same settings (the golden transcripts): 3.9 in
ZooKeeper mode, or 4.x in KRaft mode for what only a 4.x broker serves.

Every target has an ACL authorizer with the anonymous PLAINTEXT principal a super user, so that
kafka-acls has ACLs to manage while every other tool is allowed everything; and beside each broker's
PLAINTEXT listener a SASL_PLAINTEXT one (SCRAM-SHA-512) with a delegation token secret key, for
kafka-delegation-tokens, which needs an authenticated connection (`{sasl_bootstrap}` in a tool's
arguments).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from odradek.protocol.messages.metadata import MetadataRequest, MetadataResponse
from tests.support import java_suite
from tests.support.broker_process import BrokerProcess
from tests.support.interop import wait_until
from tests.support.kafka_kraft_reference import KafkaKRaftBrokers
from tests.support.kafka_reference import KafkaBrokers, broker_host
from tests.support.ports import free_port
from tests.support.raw_client import RawClient
from tests.support.txn_cluster import Cluster, host
from tests.support.zookeeper import ZooKeeperServer

#: Both brokers' settings on top of java_suite.SINGLE_NODE_SETTINGS (one broker) or txn_cluster's (three).
TOOL_SETTINGS = {
    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
    "super.users": "User:ANONYMOUS",
}
#: The same for Kafka 4.x in KRaft mode, whose ACLs live in its metadata log (AclAuthorizer is
#: ZooKeeper's and gone from 4.0).
KRAFT_TOOL_SETTINGS = TOOL_SETTINGS | {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
}


#: odradek serves share groups by default, as Kafka 4.4 does: nothing to add.
ODRADEK_TOOL_SETTINGS = TOOL_SETTINGS


#: The delegation token secret key every broker of a target has.
TOKEN_SECRET_KEY = "tools-token-secret-key"


class ToolSasl:
    """A SASL_PLAINTEXT listener (SCRAM-SHA-512) on each broker, at `hosts` (node -> host)."""

    def __init__(self, hosts: Mapping[int, str]) -> None:
        self.addresses = {node: (address, free_port()) for node, address in hosts.items()}

    def settings(self, node: int, plaintext_port: int) -> dict[str, str]:
        address, port = self.addresses[node]
        listeners = f"PLAINTEXT://{address}:{plaintext_port},SASL_PLAINTEXT://{address}:{port}"
        return {
            "listeners": listeners,
            "advertised.listeners": listeners,
            "inter.broker.listener.name": "PLAINTEXT",
            "sasl.enabled.mechanisms": "SCRAM-SHA-512",
            "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": (
                "org.apache.kafka.common.security.scram.ScramLoginModule required;"
            ),
            "delegation.token.secret.key": TOKEN_SECRET_KEY,
        }


class OdradekSingleNode:
    kind = "single-node"
    broker = "odradek"

    def __init__(self, work: Path) -> None:
        work.mkdir(parents=True, exist_ok=True)
        port = free_port()
        self.sasl = ToolSasl({1: "127.0.0.1"})
        settings = {**java_suite.SINGLE_NODE_SETTINGS, **ODRADEK_TOOL_SETTINGS, **self.sasl.settings(1, port)}
        self.process = BrokerProcess(work / "data", settings, port=port)

    @property
    def addresses(self) -> Mapping[int, tuple[str, int]]:
        return {1: (self.process.host, self.process.port)}

    @property
    def sasl_addresses(self) -> Mapping[int, tuple[str, int]]:
        return self.sasl.addresses

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
        self.sasl = ToolSasl({node: host(node) for node in (1, 2, 3)})
        self.cluster = Cluster(
            work,
            zookeeper_connect,
            replication=3,
            min_isr=2,
            extra=ODRADEK_TOOL_SETTINGS,
            node_settings=self.sasl.settings,
        )

    @property
    def addresses(self) -> Mapping[int, tuple[str, int]]:
        return {node: (b.host, b.port) for node, b in self.cluster.brokers.items()}

    @property
    def sasl_addresses(self) -> Mapping[int, tuple[str, int]]:
        return self.sasl.addresses

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


class ReferenceBrokers(Protocol):
    """Apache Kafka's brokers of either reference (kafka_reference.py, kafka_kraft_reference.py)."""

    @property
    def addresses(self) -> Mapping[int, tuple[str, int]]: ...

    def log_dir(self, node: int) -> Path: ...

    def start(self) -> object: ...

    def stop(self) -> None: ...

    def stop_broker(self, node: int, timeout: float = ...) -> None: ...

    def start_broker(self, node: int, wait: bool = ...) -> None: ...


class KafkaTarget:
    """Apache Kafka, one broker or three: 3.9 in ZooKeeper mode (`zookeeper`), or 4.x in KRaft mode."""

    def __init__(self, kafka: ReferenceBrokers, broker: str, sasl: ToolSasl) -> None:
        self.kind = "single-node" if len(kafka.addresses) == 1 else "cluster"
        self.kafka = kafka
        self.broker = broker
        self.sasl = sasl

    @classmethod
    def zookeeper_mode(cls, brokers: int, work: Path, zookeeper: ZooKeeperServer) -> KafkaTarget:
        sasl = ToolSasl({node: broker_host(node, brokers) for node in range(1, brokers + 1)})
        kafka = KafkaBrokers(brokers, work, zookeeper, TOOL_SETTINGS, node_settings=sasl.settings)
        return cls(kafka, "kafka-3.9", sasl)

    @classmethod
    def kraft(cls, brokers: int, work: Path) -> KafkaTarget:
        sasl = ToolSasl({node: broker_host(node, brokers) for node in range(1, brokers + 1)})
        return cls(KafkaKRaftBrokers(brokers, work, KRAFT_TOOL_SETTINGS, sasl.settings), "kafka-4", sasl)

    @property
    def addresses(self) -> Mapping[int, tuple[str, int]]:
        return self.kafka.addresses

    @property
    def sasl_addresses(self) -> Mapping[int, tuple[str, int]]:
        return self.sasl.addresses

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
