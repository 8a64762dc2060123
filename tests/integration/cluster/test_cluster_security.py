"""Issue #18 in cluster mode: SCRAM users and ACLs made through one broker hold on every other broker.

A real ZooKeeper and brokers on 127.0.0.2-4, each with a PLAINTEXT listener (inter-broker traffic, as
User:ANONYMOUS, a super user here) and a SASL_PLAINTEXT one (PLAIN users from the JAAS config, SCRAM
users from ZooKeeper) under the ACL authorizer. Brokers 1 and 2 run from the start; broker 3 starts
in the last test, after credentials and ACLs exist. Changes reach the other brokers through
ZooKeeper's change notifications: every check on another broker polls, up to 60 s.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.alter_user_scram_credentials import (
    AlterUserScramCredentialsRequest,
    ScramCredentialDeletion,
    ScramCredentialUpsertion,
)
from odradek.protocol.messages.create_acls import AclCreation, CreateAclsRequest
from odradek.protocol.messages.delete_acls import DeleteAclsFilter, DeleteAclsRequest
from odradek.protocol.messages.describe_acls import DescribeAclsRequest
from odradek.protocol.messages.describe_user_scram_credentials import (
    DescribeUserScramCredentialsRequest,
    UserName,
)
from odradek.protocol.messages.find_coordinator import FindCoordinatorRequest
from odradek.security.acl import AclOperation, AclPermissionType, PatternType, ResourceType
from odradek.security.scram_credentials import MECHANISMS, salted_password
from tests.compat.cli.cli_support import odradek
from tests.support.acls import AUTHORIZER, JAAS, grant, sasl_client
from tests.support.broker_process import BrokerProcess, free_port
from tests.support.interop import wait_until
from tests.support.raw_client import RawClient
from tests.support.requirements import require_module
from tests.support.znode_golden import ACL_ZNODE, assert_same_shape
from tests.support.zookeeper import ZooKeeperServer

pytestmark = pytest.mark.timeout(300)

PROPAGATION_S = 60
EVERY_ACL = DescribeAclsRequest(
    resource_type_filter=ResourceType.ANY,
    resource_name_filter=None,
    pattern_type_filter=PatternType.ANY,
    principal_filter=None,
    host_filter=None,
    operation=AclOperation.ANY,
    permission_type=AclPermissionType.ANY,
)


class SecureCluster:
    def __init__(self, base: Path, connect: str) -> None:
        self.connect = connect
        self.sasl_ports: dict[int, int] = {}
        self.brokers: dict[int, BrokerProcess] = {}
        for node in (1, 2, 3):
            host, plain, sasl = f"127.0.0.{node + 1}", free_port(), free_port()
            listeners = f"PLAINTEXT://{host}:{plain},SASL_PLAINTEXT://{host}:{sasl}"
            self.sasl_ports[node] = sasl
            self.brokers[node] = BrokerProcess(
                base / f"broker-{node}",
                {
                    "node.id": str(node),
                    "zookeeper.connect": connect,
                    "zookeeper.session.timeout.ms": "6000",
                    "listeners": listeners,
                    "advertised.listeners": listeners,
                    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
                    "inter.broker.listener.name": "PLAINTEXT",
                    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
                    "sasl.jaas.config": JAAS,
                    "authorizer.class.name": AUTHORIZER,
                    # the brokers talk to each other on PLAINTEXT, as User:ANONYMOUS
                    "super.users": "User:admin;User:ANONYMOUS",
                    "offsets.topic.replication.factor": "1",
                    "offsets.topic.num.partitions": "3",
                    "group.initial.rebalance.delay.ms": "0",
                    "connection.failed.authentication.delay.ms": "0",
                },
                port=plain,
                host=host,
            )

    def host(self, node: int) -> str:
        return self.brokers[node].host

    def plaintext(self, node: int) -> RawClient:
        return RawClient(self.brokers[node].port, host=self.host(node))

    def admin(self, node: int) -> RawClient:
        return sasl_client(self.sasl_ports[node], "admin", self.host(node))

    def scram_login(self, node: int, user: str, password: str, mechanism: str = "SCRAM-SHA-256") -> str:
        """ "authenticated" or "refused", as confluent-kafka (librdkafka) reports logging in to `node`."""
        from confluent_kafka import KafkaError, KafkaException, Producer

        errors: list[KafkaError] = []
        client = Producer(
            {
                "bootstrap.servers": f"{self.host(node)}:{self.sasl_ports[node]}",
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": mechanism,
                "sasl.username": user,
                "sasl.password": password,
                "error_cb": errors.append,
                "log_level": 0,  # a refusal is logged at every retry; the error callback has it
            }
        )
        try:
            client.list_topics(timeout=5)
            return "authenticated"
        except KafkaException:
            client.poll(1)  # serves the error callback
            if any(e.code() == KafkaError._AUTHENTICATION for e in errors):
                return "refused"
            return f"undecided: {errors}"

    def may_use_group(self, node: int, user: str, group: str) -> bool:
        with sasl_client(self.sasl_ports[node], user, self.host(node)) as client:
            answer = client.request(FindCoordinatorRequest(key=group, key_type=0), 3)
        return bool(answer.error_code != ErrorCode.GROUP_AUTHORIZATION_FAILED)


@pytest.fixture(scope="module")
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SecureCluster]:
    require_module("confluent_kafka")
    connect = f"{zookeeper_server.connect_string}/odradek-{uuid.uuid4().hex[:8]}"
    made = SecureCluster(tmp_path_factory.mktemp("secure-cluster"), connect)
    try:
        made.brokers[1].start()
        made.brokers[2].start()
        yield made
    finally:
        for broker in made.brokers.values():
            broker.stop()


def _add_scram_user(client: RawClient, user: str, password: str) -> None:
    upsertions = []
    for mechanism, (wire_type, _) in MECHANISMS.items():
        salt = os.urandom(24)
        upsertions.append(
            ScramCredentialUpsertion(
                name=user,
                mechanism=wire_type,
                iterations=4096,
                salt=salt,
                salted_password=salted_password(mechanism, password, salt, 4096),
            )
        )
    response = client.request(AlterUserScramCredentialsRequest(deletions=[], upsertions=upsertions), 0)
    assert [r.error_code for r in response.results] == [ErrorCode.NONE], response


def test_a_scram_user_made_on_one_broker_logs_in_on_another_until_deleted_there(
    cluster: SecureCluster,
) -> None:
    with cluster.plaintext(1) as broker_1:
        _add_scram_user(broker_1, "dave", "dave-secret")
    wait_until(
        lambda: cluster.scram_login(2, "dave", "dave-secret") == "authenticated",
        PROPAGATION_S,
        "dave logging in on broker 2",
        interval=0.5,
    )
    assert cluster.scram_login(2, "dave", "wrong") == "refused"
    with cluster.plaintext(2) as broker_2:  # Describe reads ZooKeeper: at once, on any broker
        described = broker_2.request(DescribeUserScramCredentialsRequest(users=[UserName(name="dave")]), 0)
        assert [(r.user, len(r.credential_infos)) for r in described.results] == [("dave", 2)]
        deletions = [ScramCredentialDeletion(name="dave", mechanism=wire) for wire, _ in MECHANISMS.values()]
        deleted = broker_2.request(AlterUserScramCredentialsRequest(deletions=deletions, upsertions=[]), 0)
        assert [r.error_code for r in deleted.results] == [ErrorCode.NONE], deleted
    wait_until(
        lambda: cluster.scram_login(1, "dave", "dave-secret") == "refused",
        PROPAGATION_S,
        "dave refused on broker 1",
        interval=0.5,
    )


def test_odradek_users_works_against_the_cluster(cluster: SecureCluster, tmp_path: Path) -> None:
    bootstrap = ",".join(b.bootstrap for node, b in cluster.brokers.items() if node != 3)
    (tmp_path / "pw").write_text("frank-secret\n")
    added = odradek(
        "users", "add", "--user", "frank", "--password-file", str(tmp_path / "pw"), bootstrap=bootstrap
    )
    assert added.code == 0, added.stderr
    for node in (1, 2):
        wait_until(
            lambda node=node: (
                cluster.scram_login(node, "frank", "frank-secret", "SCRAM-SHA-512") == "authenticated"
            ),
            PROPAGATION_S,
            f"frank logging in on broker {node}",
            interval=0.5,
        )
    listed = odradek("users", "list", bootstrap=cluster.brokers[2].bootstrap)
    assert listed.code == 0 and "frank" in listed.stdout, listed
    removed = odradek("users", "remove", "--user", "frank", bootstrap=cluster.brokers[1].bootstrap)
    assert removed.code == 0, removed.stderr
    wait_until(
        lambda: cluster.scram_login(2, "frank", "frank-secret", "SCRAM-SHA-512") == "refused",
        PROPAGATION_S,
        "frank refused on broker 2",
        interval=0.5,
    )


def test_an_acl_made_on_one_broker_decides_on_another_until_removed_there(
    cluster: SecureCluster, zookeeper_server: ZooKeeperServer
) -> None:
    assert not cluster.may_use_group(2, "alice", "team-a")
    with cluster.admin(1) as admin:
        grant(
            admin, "User:alice", ResourceType.GROUP, "team-", AclOperation.READ, pattern=PatternType.PREFIXED
        )
    wait_until(
        lambda: cluster.may_use_group(2, "alice", "team-a"), PROPAGATION_S, "alice allowed on broker 2"
    )
    assert not cluster.may_use_group(2, "bob", "team-a")
    with cluster.admin(1) as admin:  # a name ZooKeeper cannot hold as one znode
        slash = AclCreation(
            resource_type=ResourceType.GROUP,
            resource_name="a/b",
            resource_pattern_type=PatternType.LITERAL,
            principal="User:alice",
            host="*",
            operation=AclOperation.READ,
            permission_type=AclPermissionType.ALLOW,
        )
        refused = admin.request(CreateAclsRequest(creations=[slash]), 3)
        assert [r.error_code for r in refused.results] == [ErrorCode.INVALID_REQUEST]
        assert "cannot be stored in ZooKeeper" in str(refused.results[0].error_message)
    with cluster.admin(2) as admin:
        described = admin.request(EVERY_ACL, 3)
        assert [(r.resource_name, r.pattern_type) for r in described.resources] == [
            ("team-", PatternType.PREFIXED)
        ]
    # what broker 1 wrote is Kafka's znode
    zk = KazooClient(hosts=zookeeper_server.connect_string)
    zk.start(10)
    try:
        chroot = "/" + cluster.connect.split("/", 1)[1]
        data, _ = zk.get(f"{chroot}/kafka-acl-extended/prefixed/Group/team-")
        assert_same_shape(data, ACL_ZNODE)
    finally:
        zk.stop()
        zk.close()
    with cluster.admin(2) as admin:
        removed = admin.request(
            DeleteAclsRequest(
                filters=[
                    DeleteAclsFilter(
                        resource_type_filter=ResourceType.GROUP,
                        resource_name_filter="team-",
                        pattern_type_filter=PatternType.PREFIXED,
                        principal_filter="User:alice",
                        host_filter=None,
                        operation=AclOperation.ANY,
                        permission_type=AclPermissionType.ANY,
                    )
                ]
            ),
            3,
        )
        assert [len(r.matching_acls) for r in removed.filter_results] == [1], removed
    wait_until(
        lambda: not cluster.may_use_group(1, "alice", "team-a"), PROPAGATION_S, "alice refused on broker 1"
    )


def test_odradek_acls_works_against_the_cluster(cluster: SecureCluster) -> None:
    # over broker 1's PLAINTEXT listener, as User:ANONYMOUS (a super user here)
    added = odradek(
        "acls",
        "add",
        "--allow-principal",
        "User:bob",
        "--operation",
        "Read",
        "--group",
        "cli-group",
        bootstrap=cluster.brokers[1].bootstrap,
    )
    assert added.code == 0, added.stderr
    wait_until(lambda: cluster.may_use_group(2, "bob", "cli-group"), PROPAGATION_S, "bob allowed on broker 2")
    listed = odradek("acls", "list", "--group", "cli-group", bootstrap=cluster.brokers[2].bootstrap)
    assert listed.code == 0 and "User:bob" in listed.stdout, listed
    removed = odradek("acls", "remove", "--group", "cli-group", bootstrap=cluster.brokers[2].bootstrap)
    assert removed.code == 0 and "Removed 1 ACL(s)" in removed.stdout, removed
    wait_until(
        lambda: not cluster.may_use_group(1, "bob", "cli-group"), PROPAGATION_S, "bob refused on broker 1"
    )


def test_odradek_reassign_over_sasl_with_a_command_config_written_for_kafkas_tools(
    cluster: SecureCluster, tmp_path: Path
) -> None:
    """reassign speaks the protocol itself (cli/wire.py), topics through librdkafka: given the
    client.properties Kafka's tools take (a JAAS login line), librdkafka refused it ("java JAAS
    configuration is not supported") and the wire client asked for sasl.username and sasl.password."""
    properties = tmp_path / "admin.properties"
    properties.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="admin" password="admin-secret";\n'
    )
    sasl = f"{cluster.host(1)}:{cluster.sasl_ports[1]}"
    config = ("--command-config", str(properties))
    created = odradek(
        "topics", "create", "--topic", "moved", "--replication-factor", "1", *config, bootstrap=sasl
    )
    assert created.code == 0, created.stderr
    plan = tmp_path / "plan.json"
    plan.write_text('{"version":1,"partitions":[{"topic":"moved","partition":0,"replicas":[1,2]}]}')
    executed = odradek(
        "reassign", "--execute", "--reassignment-json-file", str(plan), *config, bootstrap=sasl
    )
    assert executed.code == 0, executed.stderr
    assert "Successfully started partition reassignment for moved-0" in executed.stdout

    def verified() -> bool:
        result = odradek(
            "reassign", "--verify", "--reassignment-json-file", str(plan), *config, bootstrap=sasl
        )
        assert "SASL" not in result.stderr, result.stderr
        return "Reassignment of partition moved-0 is completed." in result.stdout

    wait_until(verified, PROPAGATION_S, "the reassignment to complete")
    listed = odradek("reassign", "--list", *config, bootstrap=sasl)
    assert (listed.code, listed.stdout) == (0, "No partition reassignments found.\n"), listed.stderr


def test_a_broker_started_later_loads_the_credentials_and_acls(cluster: SecureCluster) -> None:
    from confluent_kafka.admin import (
        AclBinding,
        AdminClient,
        ResourcePatternType,
    )
    from confluent_kafka.admin import (
        AclOperation as Operation,
    )
    from confluent_kafka.admin import (
        AclPermissionType as Permission,
    )
    from confluent_kafka.admin import (
        ResourceType as Type,
    )

    with cluster.plaintext(1) as broker_1:
        _add_scram_user(broker_1, "erin", "erin-secret")
    # a real admin client, as the super user over SASL PLAIN
    admin = AdminClient(
        {
            "bootstrap.servers": f"{cluster.host(2)}:{cluster.sasl_ports[2]}",
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": "admin",
            "sasl.password": "admin-secret",
        }
    )
    binding = AclBinding(
        Type.GROUP,
        "late-group",
        ResourcePatternType.LITERAL,
        "User:erin",
        "*",
        Operation.READ,
        Permission.ALLOW,
    )
    for future in admin.create_acls([binding], request_timeout=30).values():
        future.result()
    cluster.brokers[3].start()
    # no waiting: what broker 3 knows it read at start-up
    assert cluster.scram_login(3, "erin", "erin-secret") == "authenticated"
    with sasl_client(cluster.sasl_ports[3], "admin", cluster.host(3)) as admin_3:
        described = admin_3.request(EVERY_ACL, 3)
    assert [(r.resource_name, [a.principal for a in r.acls]) for r in described.resources] == [
        ("late-group", ["User:erin"])
    ]
    assert not cluster.may_use_group(3, "alice", "late-group")
