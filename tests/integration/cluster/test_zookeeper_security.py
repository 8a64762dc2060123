"""Issue #25 item 15: brokers on a secured ZooKeeper, as Kafka 3.9's brokers are.

Three of Debian's ZooKeeper servers, each configured for one kind of security: SASL offered
(DIGEST-MD5, unauthenticated sessions still allowed: only the znodes' ACLs protect them), SASL required
(`enforce.auth`), and a TLS-only port that authenticates client certificates. Two brokers log in as
Kafka's do (a JAAS file's `Client` section, named by `-Djava.security.auth.login.config` in
KAFKA_OPTS; or a TLS key store), with `zookeeper.set.acl=true`: every znode they create belongs to
their identity, readable by anyone except SCRAM credentials and broker configs (Kafka's sensitive
paths), writable by no one else.
"""

from __future__ import annotations

import logging
import os
import ssl
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import trustme
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.security import ACL, Id, Permissions

from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.cluster.zookeeper.errors import ZooKeeperError
from odradek.cluster.zookeeper.session import SaslLogin, ZooKeeperSecurity
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.alter_user_scram_credentials import (
    AlterUserScramCredentialsRequest,
    ScramCredentialUpsertion,
)
from odradek.protocol.messages.create_acls import AclCreation, CreateAclsRequest
from odradek.protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from odradek.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from odradek.security.acl import AclOperation, AclPermissionType, PatternType, ResourceType
from odradek.security.scram_credentials import MECHANISMS, salted_password
from tests.support.broker_process import BrokerProcess
from tests.support.interop import wait_until
from tests.support.java_stores import key_store, trust_store, written_key_store, written_trust_store
from tests.support.raw_client import RawClient
from tests.support.requirements import missing
from tests.support.zookeeper import ZooKeeperServer, ZooKeeperTls, zookeeper_command
from tests.support.zookeeper_proxy import ZooKeeperProxy

pytestmark = pytest.mark.timeout(300)

USER, PASSWORD = "kafka", "kafka-secret"
STORE_PASSWORD = "store-secret"
TOPIC = "secured"
BROKER_ACL = ACL(Permissions.ALL, Id("sasl", USER))
WORLD_READ = ACL(Permissions.READ, Id("world", "anyone"))


def _server(base: Path, **security: object) -> Iterator[ZooKeeperServer]:
    if zookeeper_command() is None:
        missing("ZooKeeper is not installed (Debian's zookeeper and java are needed)")
    server = ZooKeeperServer(base, **security).start()  # type: ignore[arg-type]
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def sasl_zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperServer]:
    """SASL offered, not required: anyone may connect, and only ACLs keep them out."""
    yield from _server(
        tmp_path_factory.mktemp("zk-sasl"), sasl_users={USER: PASSWORD, "other": "other-secret"}
    )


@pytest.fixture(scope="module")
def sasl_only_zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperServer]:
    yield from _server(
        tmp_path_factory.mktemp("zk-sasl-only"), sasl_users={USER: PASSWORD}, require_sasl=True
    )


class ZooKeeperCertificates:
    """A CA; ZooKeeper's key and trust stores (127.0.0.1); the brokers' key store and trust store of the
    CA, as keytool makes them (both at once: each keytool is a JVM start); the trust store of a stranger
    CA. All PKCS12."""

    def __init__(self, directory: Path) -> None:
        self.ca = trustme.CA()
        # ZooKeeper's stores and the stranger's are not under test: written without a JVM
        server = self.ca.issue_cert("127.0.0.1", "localhost")
        self.server_key_store = written_key_store(server, directory / "zookeeper.p12", STORE_PASSWORD)
        self.server_trust_store = written_trust_store(self.ca, directory / "zk-trust.p12", STORE_PASSWORD)
        broker = self.ca.issue_cert("broker@example.com", common_name="kafka-broker")
        with ThreadPoolExecutor(2) as keytools:
            key = keytools.submit(key_store, broker, directory / "broker.p12", "PKCS12", STORE_PASSWORD)
            trust = keytools.submit(trust_store, self.ca, directory / "trust.p12", "PKCS12", STORE_PASSWORD)
            self.broker_key_store, self.trust_store = key.result(), trust.result()
        self.stranger_trust_store = written_trust_store(
            trustme.CA(), directory / "stranger.p12", STORE_PASSWORD
        )
        self.ca_file = directory / "ca.pem"
        self.ca.cert_pem.write_to_path(str(self.ca_file))


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> ZooKeeperCertificates:
    return ZooKeeperCertificates(tmp_path_factory.mktemp("zk-certificates"))


@pytest.fixture(scope="module")
def tls_zookeeper(
    tmp_path_factory: pytest.TempPathFactory, certificates: ZooKeeperCertificates
) -> Iterator[ZooKeeperServer]:
    tls = ZooKeeperTls(certificates.server_key_store, certificates.server_trust_store, STORE_PASSWORD)
    yield from _server(tmp_path_factory.mktemp("zk-tls"), tls=tls)


def jaas_file(directory: Path, user: str, password: str) -> Path:
    """A Kafka broker's JAAS file: its `Client` section is the login to ZooKeeper."""
    path = directory / f"jaas-{user}-{uuid.uuid4().hex[:6]}.conf"
    path.write_text(
        "KafkaServer {\n  org.apache.kafka.common.security.plain.PlainLoginModule required;\n};\n"
        "// the broker's login to ZooKeeper\n"
        "Client {\n"
        "  org.apache.zookeeper.server.auth.DigestLoginModule required\n"
        f'    username="{user}" password="{password}";\n'
        "};\n"
    )
    return path


def sasl_env(directory: Path, user: str = USER, password: str = PASSWORD) -> dict[str, str]:
    return {"KAFKA_OPTS": f"-Xmx1G -Djava.security.auth.login.config={jaas_file(directory, user, password)}"}


def tls_settings(certificates: ZooKeeperCertificates, trust: Path | None = None) -> dict[str, str]:
    return {
        "zookeeper.ssl.client.enable": "true",
        "zookeeper.clientCnxnSocket": "org.apache.zookeeper.ClientCnxnSocketNetty",
        "zookeeper.ssl.keystore.location": str(certificates.broker_key_store),
        "zookeeper.ssl.keystore.password": STORE_PASSWORD,
        "zookeeper.ssl.keystore.type": "PKCS12",
        "zookeeper.ssl.truststore.location": str(trust or certificates.trust_store),
        "zookeeper.ssl.truststore.password": STORE_PASSWORD,
        "zookeeper.ssl.truststore.type": "PKCS12",
    }


class Cluster:
    """Brokers 1 and 2 on 127.0.0.2-3 in a fresh chroot of `server`, each with `settings` and `env`."""

    def __init__(
        self, base: Path, server: ZooKeeperServer, settings: dict[str, str], env: dict[str, str]
    ) -> None:
        self.chroot = f"/odradek-{uuid.uuid4().hex[:8]}"
        self.brokers = {
            node: BrokerProcess(
                base / f"broker-{node}",
                {
                    "node.id": str(node),
                    "zookeeper.connect": server.connect_string + self.chroot,
                    "zookeeper.session.timeout.ms": "6000",
                    "zookeeper.set.acl": "true",
                    # ACL and SCRAM administration over PLAINTEXT, as User:ANONYMOUS
                    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
                    "super.users": "User:ANONYMOUS",
                    "offsets.topic.replication.factor": "1",
                    **settings,
                },
                host=f"127.0.0.{node + 1}",
                env=env,
            )
            for node in (1, 2)
        }

    def start(self) -> Cluster:
        for broker in self.brokers.values():  # both at once (each start is seconds of imports)
            broker.start(wait=False)
        wait_until(self._both_registered_with_a_controller, 90, "both brokers and a controller", interval=0.2)
        return self

    def stop(self) -> None:
        for broker in self.brokers.values():
            broker.stop()

    def client(self, node: int = 1) -> RawClient:
        broker = self.brokers[node]
        return RawClient(broker.port, timeout=10, host=broker.host)

    def _both_registered_with_a_controller(self) -> bool:
        for node, broker in self.brokers.items():
            if broker.process is None or broker.process.poll() is not None:
                raise AssertionError(f"broker {node} exited:\n{broker.log_text()}")
        try:
            with self.client(1) as client:
                metadata = client.request(MetadataRequest(topics=[]), 12)
        except OSError:
            return False
        return sorted(b.node_id for b in metadata.brokers) == [1, 2] and metadata.controller_id in (1, 2)

    def create_topic(self) -> None:
        topic = CreatableTopic(name=TOPIC, num_partitions=2, replication_factor=2, assignments=[], configs=[])
        with self.client(1) as client:
            response = client.request(CreateTopicsRequest(topics=[topic], timeout_ms=15_000), 5)
        assert [(t.name, t.error_code) for t in response.topics] == [(TOPIC, ErrorCode.NONE)], response
        wait_until(self._topic_led, 30, f"leaders of {TOPIC}", interval=0.2)

    def _topic_led(self) -> bool:
        with self.client(2) as client:
            metadata = client.request(MetadataRequest(topics=[MetadataRequestTopic(name=TOPIC)]), 12)
        (topic,) = metadata.topics
        return topic.error_code == ErrorCode.NONE and all(p.leader_id in (1, 2) for p in topic.partitions)

    def add_scram_user(self, user: str) -> None:
        salt = os.urandom(24)
        upsertion = ScramCredentialUpsertion(
            name=user,
            mechanism=MECHANISMS["SCRAM-SHA-256"][0],
            iterations=4096,
            salt=salt,
            salted_password=salted_password("SCRAM-SHA-256", "secret", salt, 4096),
        )
        with self.client(1) as client:
            response = client.request(
                AlterUserScramCredentialsRequest(deletions=[], upsertions=[upsertion]), 0
            )
        assert [r.error_code for r in response.results] == [ErrorCode.NONE], response

    def add_acl(self) -> None:
        creation = AclCreation(
            resource_type=ResourceType.TOPIC,
            resource_name=TOPIC,
            resource_pattern_type=PatternType.LITERAL,
            principal="User:alice",
            host="*",
            operation=AclOperation.READ,
            permission_type=AclPermissionType.ALLOW,
        )
        with self.client(1) as client:
            response = client.request(CreateAclsRequest(creations=[creation]), 1)
        assert [r.error_code for r in response.results] == [ErrorCode.NONE], response


def failed_start(broker: BrokerProcess, timeout: float = 60) -> tuple[int, list[str]]:
    """Start `broker`, which must exit by itself: its exit code and its log's lines."""
    broker.start(wait=False)
    return exit_of(broker, timeout)


def exit_of(broker: BrokerProcess, timeout: float = 60) -> tuple[int, list[str]]:
    """The exit code and log lines of `broker`, started, which must exit by itself."""
    assert broker.process is not None
    code = broker.process.wait(timeout)
    broker.process = None
    return code, broker.log_text().splitlines()


@pytest.fixture
def kazoo_clients() -> Iterator[list[KazooClient]]:
    clients: list[KazooClient] = []
    yield clients
    for client in clients:
        client.stop()
        client.close()


def _kazoo(clients: list[KazooClient], hosts: str, **options: object) -> KazooClient:
    client = KazooClient(hosts=hosts, **options)
    client.start(10)
    clients.append(client)
    return client


def test_brokers_on_a_zookeeper_that_requires_sasl_log_in_register_and_elect_a_controller(
    sasl_only_zookeeper: ZooKeeperServer, tmp_path: Path
) -> None:
    cluster = Cluster(tmp_path, sasl_only_zookeeper, {}, sasl_env(tmp_path))
    try:
        cluster.start()
        cluster.create_topic()  # the controller wrote the assignment and the partition states
    finally:
        cluster.stop()


def test_a_broker_with_a_wrong_zookeeper_password_exits_with_one_line_naming_its_login(
    sasl_only_zookeeper: ZooKeeperServer, sasl_zookeeper: ZooKeeperServer, tmp_path: Path
) -> None:
    brokers = [
        BrokerProcess(
            tmp_path / f"broker-{server.port}",
            {"zookeeper.connect": server.connect_string + "/wrong", "zookeeper.set.acl": "true"},
            env=sasl_env(tmp_path, USER, "not-the-password"),
        )
        for server in (sasl_only_zookeeper, sasl_zookeeper)  # refused at login, or its session closed
    ]
    for broker in brokers:  # both at once
        broker.start(wait=False)
    for broker in brokers:
        code, lines = exit_of(broker)
        assert code == 1, lines
        assert not any("Traceback" in line for line in lines), "\n".join(lines)
        assert lines[-1].startswith("odradek broker: ZooKeeper at 127.0.0.1:"), lines[-1]
        assert "refused the SASL login of user 'kafka'" in lines[-1], lines[-1]


def test_a_broker_logged_in_as_another_identity_gets_one_line_naming_the_refused_znode(
    sasl_zookeeper: ZooKeeperServer,
) -> None:
    """All brokers must log in as the identity that owns the znodes; kazoo's NoAuthError went up as an
    unexpected exception (a traceback at start-up)."""
    connect = f"{sasl_zookeeper.connect_string}/owned-{uuid.uuid4().hex[:8]}"
    owner = ZooKeeperClient.connect(
        connect, security=ZooKeeperSecurity(sasl=SaslLogin(USER, PASSWORD), secure_acls=True)
    )
    other = ZooKeeperClient.connect(
        connect, security=ZooKeeperSecurity(sasl=SaslLogin("other", "other-secret"), secure_acls=True)
    )
    try:
        owner.ensure_persistent_paths()
        with pytest.raises(ZooKeeperError) as caught:
            other.ensure_persistent_paths()
        message = str(caught.value)
        assert "\n" not in message
        # the first of them: creating even an existing znode needs CREATE on its parent, the chroot
        assert message.startswith(f"ZooKeeper at {connect} refused to create /consumers: "), message
    finally:
        owner.close()
        other.close()


def test_with_zookeeper_set_acl_znodes_belong_to_the_brokers_and_strangers_read_only_what_kafka_leaves_open(
    sasl_zookeeper: ZooKeeperServer, tmp_path: Path, kazoo_clients: list[KazooClient]
) -> None:
    cluster = Cluster(tmp_path, sasl_zookeeper, {}, sasl_env(tmp_path))
    try:
        cluster.start()
        cluster.create_topic()
        cluster.add_scram_user("carol")
        cluster.add_acl()
        hosts = sasl_zookeeper.connect_string + cluster.chroot
        sasl = {"mechanism": "DIGEST-MD5", "username": USER, "password": PASSWORD}
        broker_identity = _kazoo(kazoo_clients, hosts, sasl_options=sasl)
        wait_until(
            lambda: broker_identity.exists("/kafka-acl/Topic/secured") is not None, 30, "the ACL znode"
        )
        readable = [
            "/",
            "/brokers/ids/1",
            "/brokers/topics/secured",
            "/brokers/topics/secured/partitions/0/state",
            "/controller",
            "/controller_epoch",
            "/cluster/id",
            "/config/topics",
            "/config/changes",
            "/kafka-acl/Topic/secured",
            "/latest_producer_id_block",
        ]
        sensitive = ["/config/users", "/config/users/carol", "/config/brokers"]
        for path in readable:
            assert broker_identity.get_acls(path)[0] == [BROKER_ACL, WORLD_READ], path
        for path in sensitive:
            assert broker_identity.get_acls(path)[0] == [BROKER_ACL], path
        # Kafka leaves the old consumers' root open: clients of the old API wrote under it
        assert broker_identity.get_acls("/consumers")[0] == [ACL(Permissions.ALL, Id("world", "anyone"))]

        stranger = _kazoo(kazoo_clients, hosts)
        assert stranger.get("/brokers/ids/1")[0]  # what Kafka leaves readable
        with pytest.raises(NoAuthError):
            stranger.get("/config/users/carol")  # the SCRAM credential's salted hashes
        with pytest.raises(NoAuthError):
            stranger.get_children("/config/users")
        writes = [
            lambda: stranger.set("/brokers/topics/secured", b"{}"),
            lambda: stranger.set("/brokers/topics/secured/partitions/0/state", b"{}"),
            lambda: stranger.set("/kafka-acl/Topic/secured", b"{}"),
            lambda: stranger.set("/controller_epoch", b"999"),
            lambda: stranger.delete("/controller"),
            lambda: stranger.create("/controller", b'{"brokerid":7}', ephemeral=True),
            lambda: stranger.create("/brokers/topics/planted", b"{}"),
            lambda: stranger.create("/config/users/mallory", b"{}"),
            lambda: stranger.create("/admin/delete_topics/secured"),
        ]
        for index, write in enumerate(writes):
            with pytest.raises(NoAuthError):
                write()
                pytest.fail(f"write {index} was allowed")
    finally:
        cluster.stop()


def test_brokers_on_a_tls_only_zookeeper_register_and_their_znodes_belong_to_their_certificate(
    tls_zookeeper: ZooKeeperServer,
    certificates: ZooKeeperCertificates,
    tmp_path: Path,
    kazoo_clients: list[KazooClient],
) -> None:
    cluster = Cluster(tmp_path, tls_zookeeper, tls_settings(certificates), {})
    try:
        cluster.start()
        cluster.create_topic()
        hosts = tls_zookeeper.connect_string + cluster.chroot
        stranger = _kazoo(kazoo_clients, hosts, use_ssl=True, ca=str(certificates.ca_file))
        acls, _ = stranger.get_acls("/brokers/topics/secured")
        assert [(acl.perms, acl.id.scheme) for acl in acls] == [
            (Permissions.ALL, "x509"),
            (Permissions.READ, "world"),
        ]
        assert "CN=kafka-broker" in acls[0].id.id
        with pytest.raises(NoAuthError):
            stranger.set("/brokers/topics/secured", b"{}")
    finally:
        cluster.stop()


def test_a_broker_that_does_not_trust_zookeepers_certificate_exits_with_one_line_saying_so(
    tls_zookeeper: ZooKeeperServer, certificates: ZooKeeperCertificates, tmp_path: Path
) -> None:
    broker = BrokerProcess(
        tmp_path / "broker",
        {
            "zookeeper.connect": tls_zookeeper.connect_string,
            "zookeeper.connection.timeout.ms": "3000",
            **tls_settings(certificates, certificates.stranger_trust_store),
        },
    )
    code, lines = failed_start(broker)
    assert code == 1, lines
    assert not any("Traceback" in line for line in lines), "\n".join(lines)
    assert lines[-1].startswith("odradek broker: Could not connect to ZooKeeper at 127.0.0.1:"), lines[-1]
    assert "certificate verify failed" in lines[-1], lines[-1]


def test_a_session_whose_login_is_refused_on_a_reconnection_logs_in_again_once_zookeeper_takes_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """kazoo gives up for good on a login refused after the first (a password changed on ZooKeeper,
    then changed back): the broker's session would never come back. Kafka's client starts again."""
    if zookeeper_command() is None:
        missing("ZooKeeper is not installed (Debian's zookeeper and java are needed)")
    server = ZooKeeperServer(tmp_path / "zk", sasl_users={USER: PASSWORD}).start()
    security = ZooKeeperSecurity(sasl=SaslLogin(USER, PASSWORD), secure_acls=True)
    client = ZooKeeperClient.connect(
        f"{server.connect_string}/relogin",
        session_timeout_ms=4000,
        connection_timeout_ms=10_000,
        security=security,
    )
    try:
        first_session = client.session_id
        with caplog.at_level(logging.WARNING, logger="odradek"):
            server.stop()
            server.sasl_users = {USER: "changed-on-the-server"}
            server.start()
            wait_until(lambda: "refused the SASL login" in caplog.text, 30, "the refused login", interval=0.1)
            server.stop()
            server.sasl_users = {USER: PASSWORD}
            server.start()
            wait_until(lambda: _reads(client), 30, "a session again", interval=0.1)
        assert client.session_id != first_session  # a new session: its owner registers again
        client.create_persistent_path("/written-again", b"x")
        assert client.kazoo.get_acls("/written-again")[0] == [BROKER_ACL, WORLD_READ]
    finally:
        client.close()
        server.stop()


def _reads(client: ZooKeeperClient) -> bool:
    try:
        return client.read("/") is not None
    except ZooKeeperError:  # not yet: the read waited out its session timeout
        return False


@pytest.fixture
def sasl_proxy(sasl_zookeeper: ZooKeeperServer) -> Iterator[ZooKeeperProxy]:
    proxy = ZooKeeperProxy(sasl_zookeeper.port).start()
    yield proxy
    proxy.stop()


def _sasl_client(proxy: ZooKeeperProxy, chroot: str) -> ZooKeeperClient:
    return ZooKeeperClient.connect(
        f"{proxy.connect_string}/{chroot}-{uuid.uuid4().hex[:8]}",
        session_timeout_ms=6000,
        connection_timeout_ms=15_000,
        security=ZooKeeperSecurity(sasl=SaslLogin(USER, PASSWORD), secure_acls=True),
    )


def test_a_connection_dropped_during_the_sasl_login_at_start_up_is_retried_not_a_refused_login(
    sasl_proxy: ZooKeeperProxy,
) -> None:
    """Before: kazoo reports any drop during SASL as AuthFailedError ("Connection dropped in SASL"),
    and the broker exited with "wrong user name or password"."""
    sasl_proxy.drop_during_sasl(2)  # (once on the chroot's session, once on the broker's own)
    client = _sasl_client(sasl_proxy, "dropped-at-start")
    try:
        assert sasl_proxy.dropped == 2
        client.create_persistent_path("/written", b"x")
        assert client.kazoo.get_acls("/written")[0] == [BROKER_ACL, WORLD_READ]  # logged in after all
    finally:
        client.close()


def test_a_connection_dropped_during_the_sasl_login_of_a_reconnection_keeps_the_session(
    sasl_proxy: ZooKeeperProxy,
) -> None:
    """Before: the drop was taken for a refused login and the session thrown away while ZooKeeper still
    held it: its ephemeral registration stayed, owned by the old session, until that expired, and
    registering again under the new session failed meanwhile."""
    client = _sasl_client(sasl_proxy, "dropped-on-reconnect")
    try:
        session = client.session_id
        client.write(client.kazoo.create_async, "/registration", b"1", ephemeral=True)
        sasl_proxy.drop_during_sasl(1)
        sasl_proxy.drop_all()
        wait_until(lambda: sasl_proxy.dropped == 1, 15, "the login dropped", interval=0.05)
        found = client.read("/registration")  # read again once connected, within the session timeout
        assert found is not None
        assert client.session_id == session
        assert found[1].ephemeralOwner == session
    finally:
        client.close()


def test_with_zookeeper_set_acl_a_session_zookeeper_gave_no_identity_gets_one_line_not_invalid_acl(
    tls_zookeeper: ZooKeeperServer, certificates: ZooKeeperCertificates
) -> None:
    """A client certificate ZooKeeper does not authenticate (its ssl.clientAuth=none never asks for
    it; here none is presented) leaves the session without identity, so every create with the creator's
    ACL is refused with InvalidACL: kazoo's InvalidACLError went up as a traceback at start-up."""
    context = ssl.create_default_context(cafile=str(certificates.ca_file))
    chroot = f"/no-identity-{uuid.uuid4().hex[:8]}"
    with pytest.raises(ZooKeeperError) as caught:
        ZooKeeperClient.connect(
            tls_zookeeper.connect_string + chroot, security=ZooKeeperSecurity(tls=context, secure_acls=True)
        )
    message = str(caught.value)
    assert "\n" not in message
    assert f"refused the ACL of {chroot}: " in message, message
    assert "no identity" in message, message
