"""confluent-kafka's AdminClient ACL calls (CreateAcls, DescribeAcls, DeleteAcls) over SASL_PLAINTEXT,
the refusals a principal without ALTER/DESCRIBE on the cluster gets, and `odradek acls` on top of them; a
transactional producer with and without WRITE on its transactional id."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._acl import AclBinding, AclBindingFilter, AclOperation, AclPermissionType
from confluent_kafka.admin._resource import ResourcePatternType, ResourceType

from tests.compat.cli.cli_support import odradek
from tests.support.acls import USERS, start_acl_broker

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def sasl_port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    broker, port = start_acl_broker(Path(tmp_path_factory.mktemp("acls-confluent")) / "data")
    try:
        yield port
    finally:
        broker.stop()


def _settings(port: int, user: str) -> dict[str, str]:
    return {
        "bootstrap.servers": f"127.0.0.1:{port}",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": user,
        "sasl.password": USERS[user],
    }


def _everything() -> AclBindingFilter:
    return AclBindingFilter(
        ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY, AclPermissionType.ANY
    )


def test_create_describe_delete_acls(sasl_port: int) -> None:
    admin = AdminClient(_settings(sasl_port, "admin"))
    read = AclBinding(
        ResourceType.TOPIC,
        "payments",
        ResourcePatternType.LITERAL,
        "User:alice",
        "*",
        AclOperation.READ,
        AclPermissionType.ALLOW,
    )
    deny = AclBinding(
        ResourceType.GROUP,
        "ops-",
        ResourcePatternType.PREFIXED,
        "User:bob",
        "10.1.1.1",
        AclOperation.ALL,
        AclPermissionType.DENY,
    )
    for future in admin.create_acls([read, deny], request_timeout=10).values():
        assert future.result(timeout=15) is None
    assert set(admin.describe_acls(_everything(), request_timeout=10).result(timeout=15)) >= {read, deny}
    match = AclBindingFilter(
        ResourceType.GROUP,
        "ops-team",
        ResourcePatternType.MATCH,
        None,
        None,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    assert admin.describe_acls(match, request_timeout=10).result(timeout=15) == [deny]
    bob = AclBindingFilter(
        ResourceType.ANY,
        None,
        ResourcePatternType.ANY,
        "User:bob",
        None,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    deleted = admin.delete_acls([bob], request_timeout=10)[bob].result(timeout=15)
    assert deleted == [deny]
    assert deny not in admin.describe_acls(_everything(), request_timeout=10).result(timeout=15)


def test_acl_calls_without_cluster_rights_are_refused(sasl_port: int) -> None:
    admin = AdminClient(_settings(sasl_port, "bob"))
    # librdkafka does not surface DescribeAcls' top-level error (the raw ACL matrix test checks the
    # broker answers CLUSTER_AUTHORIZATION_FAILED): bob sees no ACL at all
    assert admin.describe_acls(_everything(), request_timeout=10).result(timeout=15) == []
    binding = AclBinding(
        ResourceType.TOPIC,
        "x",
        ResourcePatternType.LITERAL,
        "User:bob",
        "*",
        AclOperation.ALL,
        AclPermissionType.ALLOW,
    )
    with pytest.raises(KafkaException) as caught:
        admin.create_acls([binding], request_timeout=10)[binding].result(timeout=15)
    assert caught.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    with pytest.raises(KafkaException) as caught:
        admin.delete_acls([_everything()], request_timeout=10)[_everything()].result(timeout=15)
    assert caught.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED


def test_odradek_acls_command(sasl_port: int, tmp_path: Path) -> None:
    properties = tmp_path / "admin.properties"
    properties.write_text(
        "".join(f"{k}={v}\n" for k, v in _settings(sasl_port, "admin").items() if k != "bootstrap.servers")
    )
    common = ["--bootstrap-server", f"127.0.0.1:{sasl_port}", "--command-config", str(properties)]
    added = odradek(
        "acls",
        "add",
        "--allow-principal",
        "User:carol",
        "--operation",
        "Write",
        "--operation",
        "Describe",
        "--topic",
        "audit-",
        "--resource-pattern-type",
        "prefixed",
        *common,
    )
    assert added.code == 0, added.stderr
    assert "Added 2 ACL(s)" in added.stdout
    listed = odradek("acls", "list", "--principal", "User:carol", *common)
    assert listed.code == 0, listed.stderr
    rows = [line.split() for line in listed.lines()[1:]]
    assert sorted(row[5] for row in rows) == ["DESCRIBE", "WRITE"]
    assert all(row[:3] == ["TOPIC", "audit-", "PREFIXED"] for row in rows)
    removed = odradek(
        "acls",
        "remove",
        "--allow-principal",
        "User:carol",
        "--topic",
        "audit-",
        "--resource-pattern-type",
        "prefixed",
        *common,
    )
    assert removed.code == 0, removed.stderr
    assert "Removed 2 ACL(s)" in removed.stdout
    refused = odradek("acls", "remove", *common)
    assert refused.code == 2
    bob = tmp_path / "bob.properties"
    bob.write_text(
        "".join(f"{k}={v}\n" for k, v in _settings(sasl_port, "bob").items() if k != "bootstrap.servers")
    )
    denied = odradek(
        "acls",
        "add",
        "--allow-principal",
        "User:bob",
        "--operation",
        "All",
        "--cluster",
        "--bootstrap-server",
        f"127.0.0.1:{sasl_port}",
        "--command-config",
        str(bob),
    )
    assert denied.code != 0
    assert len(denied.stderr.splitlines()) == 1, denied.stderr
    assert "authoriz" in denied.stderr.lower(), denied.stderr


def test_producer_and_consumer_with_and_without_acls(sasl_port: int) -> None:
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import NewTopic

    admin = AdminClient(_settings(sasl_port, "admin"))
    admin.create_topics([NewTopic("clicks", 1, 1)], request_timeout=10)["clicks"].result(timeout=15)
    grants = [
        AclBinding(
            ResourceType.TOPIC,
            "clicks",
            ResourcePatternType.LITERAL,
            "User:alice",
            "*",
            op,
            AclPermissionType.ALLOW,
        )
        for op in (AclOperation.WRITE, AclOperation.READ)
    ] + [
        AclBinding(
            ResourceType.GROUP,
            "clicks-",
            ResourcePatternType.PREFIXED,
            "User:alice",
            "*",
            AclOperation.READ,
            AclPermissionType.ALLOW,
        ),
        AclBinding(
            ResourceType.BROKER,  # librdkafka names the cluster resource BROKER
            "kafka-cluster",
            ResourcePatternType.LITERAL,
            "User:alice",
            "*",
            AclOperation.IDEMPOTENT_WRITE,
            AclPermissionType.ALLOW,
        ),
    ]
    for future in admin.create_acls(grants, request_timeout=10).values():
        future.result(timeout=15)

    delivered: list[int] = []
    producer = Producer({**_settings(sasl_port, "alice"), "enable.idempotence": True})
    producer.produce(
        "clicks", b"page-1", on_delivery=lambda err, msg: delivered.append(err.code() if err else 0)
    )
    assert producer.flush(15) == 0
    assert delivered == [0]

    consumer = Consumer(
        {**_settings(sasl_port, "alice"), "group.id": "clicks-reader", "auto.offset.reset": "earliest"}
    )
    try:
        consumer.subscribe(["clicks"])
        message = None
        for _ in range(60):
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                break
        assert message is not None and message.error() is None, message and message.error()
        assert message.value() == b"page-1"
        consumer.commit(message, asynchronous=False)
    finally:
        consumer.close()

    refused: list[int] = []
    bob = Producer({**_settings(sasl_port, "bob"), "message.timeout.ms": 5000})
    bob.produce("clicks", b"x", on_delivery=lambda err, msg: refused.append(err.code() if err else 0))
    bob.flush(15)
    assert refused == [KafkaError.TOPIC_AUTHORIZATION_FAILED]


def test_transactional_producer_with_and_without_write_on_its_id(sasl_port: int) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import NewTopic

    admin = AdminClient(_settings(sasl_port, "admin"))
    admin.create_topics([NewTopic("ledger", 1, 1)], request_timeout=10)["ledger"].result(timeout=15)
    grants = [
        AclBinding(
            ResourceType.TOPIC,
            "ledger",
            ResourcePatternType.LITERAL,
            "User:alice",
            "*",
            AclOperation.WRITE,
            AclPermissionType.ALLOW,
        ),
        AclBinding(
            ResourceType.TRANSACTIONAL_ID,
            "ledger-writer",
            ResourcePatternType.LITERAL,
            "User:alice",
            "*",
            AclOperation.WRITE,
            AclPermissionType.ALLOW,
        ),
    ]
    for future in admin.create_acls(grants, request_timeout=10).values():
        future.result(timeout=15)

    producer = Producer({**_settings(sasl_port, "alice"), "transactional.id": "ledger-writer"})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce("ledger", b"entry-1")
    producer.commit_transaction(30)

    # WRITE on the topic alone is not enough: the id is someone else's
    other = Producer({**_settings(sasl_port, "alice"), "transactional.id": "ledger-other"})
    with pytest.raises(KafkaException) as caught:
        other.init_transactions(30)
    assert caught.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    bob = Producer({**_settings(sasl_port, "bob"), "transactional.id": "ledger-writer"})
    with pytest.raises(KafkaException) as caught:
        bob.init_transactions(30)
    assert caught.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
