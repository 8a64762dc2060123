"""Inter-broker TLS and SASL (issue #18): three brokers and a real ZooKeeper whose brokers talk to each
other only on a secured INTERNAL listener, while clients use a PLAINTEXT CLIENT listener.

Two clusters (the fixture's parameter): INTERNAL is SASL_SSL with SCRAM-SHA-512 (the broker user is
written to ZooKeeper before any broker starts, as `kafka-configs --zookeeper` would), or SSL requiring
client certificates (the brokers' certificate maps to the same principal). Either way the ACL
authorizer runs with `super.users=User:broker`, so every controller request, controlled shutdown and
AlterPartition is authorized as the authenticated broker; User:ANONYMOUS (the clients) is granted the
cluster operations clients need but not CLUSTER_ACTION. A fourth broker with the wrong credentials
(a wrong password, a certificate from another CA) cannot take part: its requests are refused, it logs
why, and the three others go on serving. Every wait polls, up to 60 s.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trustme

from odradek.cluster.inter_broker_connection import inter_broker_security
from odradek.cluster.metadata import BrokerEndpoint, ClusterMetadata, LiveBroker
from odradek.cluster.metadata.scram_credentials import ZkScramCredentialStore
from odradek.cluster.replication.alter_partition import AlterPartitionManager
from odradek.cluster.zookeeper import paths as zk_paths
from odradek.cluster.zookeeper import topics as zk_topics
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.config import BrokerConfig
from odradek.handlers._common.services import FIRST_METADATA_WAIT_S
from odradek.partition.isr_updates import CommittedIsr, ProposedIsr
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.controlled_shutdown import ControlledShutdownRequest
from odradek.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic, MetadataResponse
from odradek.security.acl import AclOperation, ResourceType
from odradek.security.scram_credentials import credential_from_password
from tests.support.acls import AUTHORIZER, grant
from tests.support.broker_process import BrokerProcess, free_port
from tests.support.interop import wait_until
from tests.support.raw_client import RawClient
from tests.support.requirements import require_module
from tests.support.txn_reader import read_committed_values
from tests.support.zookeeper import ZooKeeperServer

pytestmark = pytest.mark.timeout(600)

WAIT_S = 60
BROKER_PASSWORD = "broker-secret"
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"
PRINCIPAL_RULES = "RULE:^CN=([^,]*),.*$/$1/,DEFAULT"
CLIENT_CLUSTER_OPERATIONS = (
    AclOperation.CREATE,
    AclOperation.DESCRIBE,
    AclOperation.ALTER,
    AclOperation.DESCRIBE_CONFIGS,
    AclOperation.ALTER_CONFIGS,
    AclOperation.IDEMPOTENT_WRITE,
)


class SecuredCluster:
    def __init__(self, base: Path, connect: str, internal: str) -> None:
        self.base = base
        self.connect = connect
        self.internal = internal  # SASL_SSL or SSL
        self.ca = trustme.CA()
        self.ca_file = base / "ca.pem"
        self.ca.cert_pem.write_to_path(str(self.ca_file))
        self.brokers: dict[int, BrokerProcess] = {}
        #: Each broker's INTERNAL port, by node id.
        self.internal_ports: dict[int, int] = {}
        for node in (1, 2, 3):
            self.brokers[node] = self.broker(node)

    def keystore(self, node: int, ca: trustme.CA) -> Path:
        path = self.base / f"broker-{node}.pem"
        issued = ca.issue_cert(f"127.0.0.{node + 1}", common_name="broker", organization_name="odradek")
        issued.private_key_and_cert_chain_pem.write_to_path(str(path))
        os.chmod(path, 0o600)
        return path

    def broker(
        self, node: int, password: str = BROKER_PASSWORD, ca: trustme.CA | None = None
    ) -> BrokerProcess:
        host, client, internal = f"127.0.0.{node + 1}", free_port(), free_port()
        listeners = f"CLIENT://{host}:{client},INTERNAL://{host}:{internal}"
        self.internal_ports[node] = internal
        settings = {
            "node.id": str(node),
            "zookeeper.connect": self.connect,
            "zookeeper.session.timeout.ms": "6000",
            "listeners": listeners,
            "advertised.listeners": listeners,
            "listener.security.protocol.map": f"CLIENT:PLAINTEXT,INTERNAL:{self.internal}",
            "inter.broker.listener.name": "INTERNAL",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(self.keystore(node, ca or self.ca)),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(self.ca_file),
            "authorizer.class.name": AUTHORIZER,
            "super.users": "User:broker",
            "allow.everyone.if.no.acl.found": "true",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "3",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "3",
            "num.partitions": "3",
            "group.initial.rebalance.delay.ms": "0",
            "auto.leader.rebalance.enable": "false",
            "controlled.shutdown.retry.backoff.ms": "500",
        }
        if self.internal == "SASL_SSL":
            settings |= {
                "sasl.enabled.mechanisms": "SCRAM-SHA-512",
                "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
                "listener.name.internal.scram-sha-512.sasl.jaas.config": (
                    f'{SCRAM} required username="broker" password="{password}";'
                ),
            }
        else:
            settings |= {
                "ssl.client.auth": "required",
                "ssl.principal.mapping.rules": PRINCIPAL_RULES,
            }
        return BrokerProcess(
            self.base / f"broker-{node}-{uuid.uuid4().hex[:6]}", settings, port=client, host=host
        )

    def running(self) -> list[int]:
        return [n for n, b in self.brokers.items() if b.process is not None and b.process.poll() is None]

    def bootstrap(self, *nodes: int) -> str:
        return ",".join(self.brokers[n].bootstrap for n in nodes or self.running())

    def metadata(self, node: int, topics: list[str] | None) -> MetadataResponse:
        broker = self.brokers[node]
        # a broker the controller cannot reach waits FIRST_METADATA_WAIT_S before it answers
        with RawClient(broker.port, timeout=FIRST_METADATA_WAIT_S + 5, host=broker.host) as client:
            wanted = None if topics is None else [MetadataRequestTopic(name=t) for t in topics]
            response: MetadataResponse = client.request(
                MetadataRequest(topics=wanted, allow_auto_topic_creation=False), 12
            )
            return response

    def leaders(self, topic: str, node: int) -> dict[int, int]:
        (described,) = self.metadata(node, [topic]).topics
        return {p.partition_index: p.leader_id for p in described.partitions}

    def controller(self, node: int) -> int:
        return int(self.metadata(node, []).controller_id)

    def start_all(self) -> None:
        """Every broker started, and known to every broker's Metadata (UpdateMetadata over INTERNAL)."""
        for broker in self.brokers.values():
            broker.start()
        wait_until(
            lambda: self.all_know(lambda node: len(self.metadata(node, []).brokers) == 3),
            WAIT_S,
            "three brokers in every broker's Metadata (UpdateMetadata over INTERNAL)",
            interval=0.2,
        )

    def all_know(self, check: Any) -> bool:
        try:
            return all(check(node) for node in self.running())
        except Exception:
            return False

    def create(self, topic: str, partitions: int, replication: int) -> None:
        from kafka.admin import KafkaAdminClient, NewTopic

        admin = KafkaAdminClient(bootstrap_servers=self.bootstrap(), request_timeout_ms=15_000)
        try:
            admin.create_topics([NewTopic(topic, partitions, replication)], timeout_ms=15_000)
        finally:
            admin.close()
        # the controller's LeaderAndIsr and UpdateMetadata reach every broker over INTERNAL
        wait_until(
            lambda: self.all_know(
                lambda node: (
                    len(leaders := self.leaders(topic, node)) == partitions
                    and all(leader >= 0 for leader in leaders.values())
                )
            ),
            WAIT_S,
            f"leaders of {topic} on every broker",
            interval=0.2,
        )


def _add_broker_user(connect: str) -> None:
    """The broker's SCRAM user, written to ZooKeeper before any broker runs."""
    zk = ZooKeeperClient.connect(connect, session_timeout_ms=6000, connection_timeout_ms=10_000)
    try:
        zk.ensure_persistent_paths()
        credentials = {
            ("broker", mechanism): credential_from_password(mechanism, BROKER_PASSWORD, 4096)
            for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512")
        }
        asyncio.run(ZkScramCredentialStore(zk).alter(credentials, set()))
    finally:
        zk.close()


@pytest.fixture(scope="module", params=["SASL_SSL", "SSL"])
def cluster(
    request: pytest.FixtureRequest,
    zookeeper_server: ZooKeeperServer,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[SecuredCluster]:
    require_module("kafka")
    internal = str(request.param)
    connect = f"{zookeeper_server.connect_string}/odradek-{uuid.uuid4().hex[:8]}"
    if internal == "SASL_SSL":
        _add_broker_user(connect)
    made = SecuredCluster(tmp_path_factory.mktemp(f"inter-broker-{internal.lower()}"), connect, internal)
    try:
        made.start_all()
        with RawClient(made.brokers[1].port, host=made.brokers[1].host) as anonymous:
            grant(
                anonymous, "User:ANONYMOUS", ResourceType.CLUSTER, "kafka-cluster", *CLIENT_CLUSTER_OPERATIONS
            )
        yield made
    finally:
        for broker in made.brokers.values():
            if broker.process is not None:
                os.kill(broker.process.pid, signal.SIGCONT)
            broker.stop()


def test_topic_creation_reaches_every_broker_over_the_secured_listener(cluster: SecuredCluster) -> None:
    cluster.create("secured-rf3", partitions=6, replication=3)
    leaders = cluster.leaders("secured-rf3", 1)
    assert set(leaders.values()) == {1, 2, 3}
    for node in (2, 3):
        assert cluster.leaders("secured-rf3", node) == leaders


def test_clients_produce_and_consume_through_any_broker(cluster: SecuredCluster) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    cluster.create("secured-data", partitions=6, replication=1)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap(1), acks="all")
    for partition in range(6):
        producer.send("secured-data", f"v-{partition}".encode(), partition=partition)
    producer.flush(30)
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap(3), consumer_timeout_ms=10_000)
    consumer.assign([TopicPartition("secured-data", p) for p in range(6)])
    consumer.seek_to_beginning()
    got = {m.partition: m.value for m in consumer}
    consumer.close()
    assert got == {p: f"v-{p}".encode() for p in range(6)}


def test_transaction_markers_cross_to_every_broker_over_the_secured_listener(
    cluster: SecuredCluster,
) -> None:
    # The coordinator writes COMMIT/ABORT markers on the other brokers through WriteTxnMarkers, and
    # leaders verify transactional batches with it: both over INTERNAL, as User:broker.
    from confluent_kafka import Producer

    cluster.create("secured-txn", partitions=6, replication=1)
    assert set(cluster.leaders("secured-txn", 1).values()) == {1, 2, 3}
    producer = Producer({"bootstrap.servers": cluster.bootstrap(1), "transactional.id": "secured-txn"})
    producer.init_transactions(60)
    for round_, committed in enumerate((True, False, True)):
        producer.begin_transaction()
        for partition in range(6):
            producer.produce("secured-txn", value=f"r{round_}-{partition}".encode(), partition=partition)
        producer.flush(60)
        if committed:
            producer.commit_transaction(60)
        else:
            producer.abort_transaction(60)
    values = read_committed_values(cluster.bootstrap(), "secured-txn", 6, timeout_s=60)
    assert values == {p: [f"r0-{p}".encode(), f"r2-{p}".encode()] for p in range(6)}


def test_followers_replicate_over_the_secured_listener(cluster: SecuredCluster) -> None:
    # acks=all is answered once both followers fetched the records: their fetches go over INTERNAL
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    cluster.create("secured-replicated", partitions=3, replication=3)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap(1), acks="all", request_timeout_ms=20_000)
    futures = [producer.send("secured-replicated", f"v-{i}".encode(), partition=i % 3) for i in range(30)]
    producer.flush(60)
    producer.close()
    assert all(future.get(0) for future in futures)
    # every replica in the ISR of every partition, as each broker sees it
    wait_until(
        lambda: cluster.all_know(
            lambda node: all(
                sorted(p.isr_nodes) == [1, 2, 3]
                for p in cluster.metadata(node, ["secured-replicated"]).topics[0].partitions
            )
        ),
        WAIT_S,
        "a full ISR on every broker",
        interval=0.2,
    )
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap(2), consumer_timeout_ms=10_000)
    consumer.assign([TopicPartition("secured-replicated", p) for p in range(3)])
    consumer.seek_to_beginning()
    got = sorted(m.value for m in consumer)
    consumer.close()
    assert got == sorted(f"v-{i}".encode() for i in range(30))


def test_anonymous_client_is_refused_cluster_action(cluster: SecuredCluster) -> None:
    # what the brokers send each other is authorized as User:broker; the clients' principal may not
    broker = cluster.brokers[2]

    def refused() -> bool:
        with RawClient(broker.port, host=broker.host) as client:
            answer = client.request(ControlledShutdownRequest(broker_id=2, broker_epoch=-1), 3)
        return bool(answer.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED)

    wait_until(refused, WAIT_S, "ControlledShutdown from User:ANONYMOUS refused", interval=0.5)


def test_controlled_shutdown_and_controller_failover_go_over_the_secured_listener(
    cluster: SecuredCluster,
) -> None:
    cluster.create("secured-failover", partitions=6, replication=3)
    controller = cluster.controller(1)
    stopping = cluster.brokers[controller]
    # SIGTERM: the controlled shutdown is a ControlledShutdown request over INTERNAL (to itself or
    # another broker, as the controller it is)
    stopping.stop()
    assert f"controlled shutdown of broker {controller} succeeded" in stopping.log_path.read_text()
    others = [n for n in (1, 2, 3) if n != controller]
    wait_until(
        lambda: cluster.all_know(
            lambda node: (
                cluster.controller(node) in others
                and set(cluster.leaders("secured-failover", node).values()) <= set(others)
            )
        ),
        WAIT_S,
        "a new controller and leaders only on the brokers left",
        interval=0.2,
    )
    stopping.start()  # the new controller reaches the restarted broker over INTERNAL too
    wait_until(
        lambda: cluster.all_know(lambda node: len(cluster.metadata(node, []).brokers) == 3),
        WAIT_S,
        "three brokers again",
        interval=0.2,
    )
    cluster.create("secured-after-failover", partitions=3, replication=3)


def _alter_partition(
    cluster: SecuredCluster, node: int, wrong_credentials: bool = False, timeout: float = WAIT_S
) -> CommittedIsr:
    """Shrink the ISR of secured-isr-0 to its leader with the AlterPartitionManager, as broker `node`
    (the leader) would send it with its inter-broker settings (or with a wrong password / a
    certificate from another CA)."""
    zk = ZooKeeperClient.connect(cluster.connect, session_timeout_ms=6000, connection_timeout_ms=10_000)
    try:
        found = zk_topics.partition_state(zk, "secured-isr", 0)
        assert found is not None
        state, partition_epoch = found
        registration = zk.read(zk_paths.broker(node))
        assert registration is not None
        broker_epoch = int(registration[1].czxid)
    finally:
        zk.close()
    assert state.leader == node
    controller = cluster.controller(node)
    endpoint = BrokerEndpoint(controller, f"127.0.0.{controller + 1}", cluster.internal_ports[controller])
    metadata = ClusterMetadata("secured", controller, [])
    metadata.set_live_brokers([LiveBroker(controller, {"INTERNAL": endpoint})])
    broker = cluster.brokers[node]
    settings = {**broker.overrides, "log.dirs": str(broker.data_dir)}
    if wrong_credentials and cluster.internal == "SASL_SSL":
        jaas = f'{SCRAM} required username="broker" password="not-the-password";'
        settings["listener.name.internal.scram-sha-512.sasl.jaas.config"] = jaas
    elif wrong_credentials:
        settings["ssl.keystore.location"] = str(cluster.keystore(node + 10, trustme.CA()))
    config = BrokerConfig(settings, warn_unknown=False)
    proposal = ProposedIsr("secured-isr", None, 0, state.leader_epoch, (node,), partition_epoch)

    async def run() -> CommittedIsr:
        manager = AlterPartitionManager(
            node, metadata, "INTERNAL", lambda: broker_epoch, security=inter_broker_security(config)
        )
        manager.start()
        try:
            return await asyncio.wait_for(manager.submit(proposal), timeout)
        finally:
            await manager.stop()

    return asyncio.run(run())


def test_alter_partition_reaches_the_controller_over_the_secured_listener(cluster: SecuredCluster) -> None:
    cluster.create("secured-isr", partitions=1, replication=3)
    leader = cluster.leaders("secured-isr", 1)[0]
    committed = _alter_partition(cluster, leader)
    assert committed.isr == (leader,)
    wait_until(
        lambda: cluster.all_know(
            lambda node: (
                [p.isr_nodes for p in cluster.metadata(node, ["secured-isr"]).topics[0].partitions]
                == [[leader]]
            )
        ),
        WAIT_S,
        "the shrunk ISR on every broker",
        interval=0.2,
    )


def test_alter_partition_with_wrong_credentials_is_refused_and_logged(
    cluster: SecuredCluster, caplog: pytest.LogCaptureFixture
) -> None:
    leader = cluster.leaders("secured-isr", 1)[0]
    with caplog.at_level(logging.INFO, "odradek.cluster.alter_partition"), pytest.raises(TimeoutError):
        _alter_partition(cluster, leader, wrong_credentials=True, timeout=5)
    # a certificate the controller refuses ends the TLS 1.3 connection after the handshake, at the
    # first answer
    expected = "SASL_AUTHENTICATION_FAILED" if cluster.internal == "SASL_SSL" else "certificate"
    assert "AlterPartition to controller" in caplog.text
    assert expected in caplog.text, caplog.text


def test_broker_with_wrong_credentials_cannot_take_part(cluster: SecuredCluster) -> None:
    if cluster.internal == "SASL_SSL":
        intruder = cluster.broker(4, password="not-the-password")
    else:
        intruder = cluster.broker(4, ca=trustme.CA())
    cluster.brokers[4] = intruder
    intruder.overrides["controlled.shutdown.max.retries"] = "1"
    try:
        intruder.start()
        if cluster.internal == "SASL_SSL":
            # the controller's own login is right, so it tells the intruder the cluster's state;
            # what the intruder sends is refused: on SIGTERM its controlled shutdown cannot reach
            # the controller, and it says why
            wait_until(
                lambda: cluster.controller(4) in (1, 2, 3), WAIT_S, "the intruder knowing the controller"
            )
            intruder.stop()
            log = intruder.log_path.read_text()
            assert "controlled shutdown of broker 4 did not complete" in log
            assert "SASL SCRAM-SHA-512 login as broker to broker at" in log, log[-3000:]
            assert "SASL_AUTHENTICATION_FAILED" in log
        else:
            # its certificate is from a CA the others do not trust: the controller cannot open a
            # channel to it (and logs why), and it learns nothing of the cluster
            controller = cluster.brokers[cluster.controller(1)]
            wait_until(
                lambda: "Controller's connection to broker 4" in controller.log_path.read_text(),
                WAIT_S,
                "the controller reporting its failed connection to the intruder",
            )
            assert "CERTIFICATE_VERIFY_FAILED" in controller.log_path.read_text()
            assert cluster.controller(4) == -1
            intruder.stop()
    finally:
        intruder.stop()
        del cluster.brokers[4]
    # the three others stay healthy: the controller still serves them
    wait_until(
        lambda: cluster.all_know(
            lambda node: {b.node_id for b in cluster.metadata(node, []).brokers} == {1, 2, 3}
        ),
        WAIT_S,
        "the intruder gone from every broker's Metadata",
        interval=0.2,
    )
    cluster.create("secured-after-intruder", partitions=3, replication=3)
