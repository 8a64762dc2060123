"""Inter-broker TLS with PKCS12 key and trust stores made by keytool (issue #18): three brokers whose
INTERNAL listener is SSL with required client certificates, each broker's key in a PKCS12 key store and
the CA in a PKCS12 trust store, as a Kafka operator sets them up. The controller's requests, replication
and clients' data cross brokers over it. Every wait polls, up to 60 s."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import trustme

from tests.integration.cluster.test_inter_broker_security import SecuredCluster
from tests.support.broker_process import BrokerProcess
from tests.support.java_stores import key_store, trust_store
from tests.support.requirements import require_module
from tests.support.zookeeper import ZooKeeperServer

pytestmark = pytest.mark.timeout(600)


class Pkcs12Cluster(SecuredCluster):
    def broker(self, node: int, password: str = "", ca: trustme.CA | None = None) -> BrokerProcess:
        process = super().broker(node, ca=ca)
        issued = (ca or self.ca).issue_cert(
            f"127.0.0.{node + 1}", common_name="broker", organization_name="odradek"
        )
        folder = self.base / f"stores-{node}"
        folder.mkdir(exist_ok=True)
        process.overrides |= {
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.location": str(key_store(issued, folder / "broker.p12", "PKCS12", "keystore-pw")),
            "ssl.keystore.password": "keystore-pw",
            "ssl.truststore.type": "PKCS12",
            "ssl.truststore.location": str(
                trust_store(self.ca, folder / "trust.p12", "PKCS12", "truststore-pw")
            ),
            "ssl.truststore.password": "truststore-pw",
        }
        return process


@pytest.fixture(scope="module")
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Pkcs12Cluster]:
    require_module("kafka")
    connect = f"{zookeeper_server.connect_string}/odradek-{uuid.uuid4().hex[:8]}"
    made = Pkcs12Cluster(tmp_path_factory.mktemp("inter-broker-pkcs12"), connect, "SSL")
    try:
        made.start_all()
        yield made
    finally:
        for broker in made.brokers.values():
            broker.stop()


def test_topics_and_data_cross_brokers_over_a_pkcs12_inter_broker_listener(cluster: Pkcs12Cluster) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    # LeaderAndIsr and UpdateMetadata from the controller reach every broker over INTERNAL
    cluster.create("pkcs12-rf3", partitions=3, replication=3)
    assert set(cluster.leaders("pkcs12-rf3", 1).values()) == {1, 2, 3}
    cluster.create("pkcs12-data", partitions=3, replication=1)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap(1), acks="all")
    for partition in range(3):
        producer.send("pkcs12-data", f"v-{partition}".encode(), partition=partition).get(timeout=30)
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap(3), consumer_timeout_ms=10_000)
    consumer.assign([TopicPartition("pkcs12-data", p) for p in range(3)])
    consumer.seek_to_beginning()
    got = {m.partition: m.value for m in consumer}
    consumer.close()
    assert got == {p: f"v-{p}".encode() for p in range(3)}


def test_pkcs12_stores_with_a_wrong_password_stop_the_broker_in_one_line(cluster: Pkcs12Cluster) -> None:
    process = cluster.broker(4)
    process.overrides["ssl.truststore.password"] = "wrong-password"
    try:
        with pytest.raises(RuntimeError, match="broker exited"):
            process.start()
    finally:
        process.stop()
    lines = [
        line for line in process.log_path.read_text().splitlines() if "trust store cannot be loaded" in line
    ]
    assert len(lines) == 1 and "ssl.truststore.location" in lines[0]
    assert "wrong-password" not in process.log_path.read_text()
    assert cluster.running() == [1, 2, 3]
