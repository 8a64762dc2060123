"""ACL znodes, ACL change notifications, SCRAM values and sanitized user names against Kafka 3.9's."""

from __future__ import annotations

import base64

import pytest
import scramp

from odradek.cluster.zookeeper.acl_znodes import (
    EXTENDED_CHANGES,
    LITERAL_CHANGES,
    acl_paths,
    decode_acls,
    decode_change,
    encode_acls,
    encode_change,
    resource_path,
)
from odradek.cluster.zookeeper.sanitizer import desanitize, sanitize
from odradek.cluster.zookeeper.znode_json import MalformedZnodeError
from odradek.security.acl import (
    AccessControlEntry,
    AclOperation,
    AclPermissionType,
    InvalidAclError,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from odradek.security.scram_credentials import (
    CredentialError,
    ScramCredential,
    credential_from_string,
    credential_to_string,
)
from tests.support import znode_golden as golden
from tests.support.znode_golden import assert_same_json

ALICE_READS = AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW)


def test_acl_znode_is_what_kafka_writes_and_reads() -> None:
    assert_same_json(encode_acls([ALICE_READS]), golden.ACL_ZNODE)
    assert decode_acls(golden.ACL_ZNODE.encode(), "/kafka-acl/Topic/orders") == {ALICE_READS}
    assert decode_acls(b"", "/kafka-acl/Topic/orders") == frozenset()


def test_acl_operation_names_are_kafkas_pascal_case() -> None:
    entry = AccessControlEntry("User:bob", "10.0.0.1", AclOperation.IDEMPOTENT_WRITE, AclPermissionType.DENY)
    written = encode_acls([entry]).decode()
    assert '"operation":"IdempotentWrite"' in written and '"permissionType":"Deny"' in written


def test_resource_paths_are_kafkas_per_pattern_type() -> None:
    literal = ResourcePattern(ResourceType.TOPIC, "orders", PatternType.LITERAL)
    prefixed = ResourcePattern(ResourceType.GROUP, "team-", PatternType.PREFIXED)
    cluster = ResourcePattern(ResourceType.CLUSTER, "kafka-cluster", PatternType.LITERAL)
    txn = ResourcePattern(ResourceType.TRANSACTIONAL_ID, "tx", PatternType.PREFIXED)
    assert resource_path(literal) == "/kafka-acl/Topic/orders"
    assert resource_path(prefixed) == "/kafka-acl-extended/prefixed/Group/team-"
    assert resource_path(cluster) == "/kafka-acl/Cluster/kafka-cluster"
    assert resource_path(txn) == "/kafka-acl-extended/prefixed/TransactionalId/tx"
    assert {"/kafka-acl/DelegationToken", "/kafka-acl-changes", "/kafka-acl-extended-changes"} <= set(
        acl_paths()
    )


@pytest.mark.parametrize("name", ["a/b", "..", "."])
def test_a_name_zookeeper_cannot_hold_is_refused(name: str) -> None:
    with pytest.raises(InvalidAclError, match="cannot be stored in ZooKeeper"):
        resource_path(ResourcePattern(ResourceType.GROUP, name, PatternType.LITERAL))


def test_change_notifications_are_kafkas_per_store() -> None:
    literal = ResourcePattern(ResourceType.TOPIC, "orders", PatternType.LITERAL)
    prefixed = ResourcePattern(ResourceType.GROUP, "team-", PatternType.PREFIXED)
    assert encode_change(literal) == golden.LITERAL_ACL_CHANGE
    assert_same_json(encode_change(prefixed), golden.EXTENDED_ACL_CHANGE)
    assert decode_change(golden.LITERAL_ACL_CHANGE, LITERAL_CHANGES, "/x") == literal
    assert decode_change(golden.EXTENDED_ACL_CHANGE.encode(), EXTENDED_CHANGES, "/x") == prefixed
    # Kafka's ResourceType.fromString takes any case; a name may contain ':'
    mixed = ResourcePattern(ResourceType.TRANSACTIONAL_ID, "a:b", PatternType.LITERAL)
    assert decode_change(b"transactional_id:a:b", LITERAL_CHANGES, "/x") == mixed


@pytest.mark.parametrize(
    ("data", "root"),
    [
        (b"orders", LITERAL_CHANGES),
        (b"ANY:orders", LITERAL_CHANGES),
        (b'{"version":2,"resourceType":"TOPIC","name":"t","patternType":"PREFIXED"}', EXTENDED_CHANGES),
        (b'{"version":1,"resourceType":"TOPIC","name":"t","patternType":"MATCH"}', EXTENDED_CHANGES),
        (b"not json", EXTENDED_CHANGES),
    ],
)
def test_malformed_change_notifications_are_refused_with_the_path(data: bytes, root: str) -> None:
    with pytest.raises(MalformedZnodeError, match="/kafka-acl-changes/acl_changes_0000000001"):
        decode_change(data, root, "/kafka-acl-changes/acl_changes_0000000001")


def test_scram_credential_string_is_scram_credential_utils_form() -> None:
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    _, stored_key, server_key, _ = scramp.ScramMechanism("SCRAM-SHA-256").make_auth_info("pencil", 4096, salt)
    credential = ScramCredential(salt, stored_key, server_key, 4096)
    text = credential_to_string(credential)
    expected_config = golden.SCRAM_USER_CONFIG_TEMPLATE.format(
        salt="W22ZaJ0SNY7soEsUEjb6gQ==",
        stored_key=base64.b64encode(stored_key).decode(),
        server_key=base64.b64encode(server_key).decode(),
    )
    assert f'"SCRAM-SHA-256":"{text}"' in expected_config
    assert credential_from_string(text) == credential


@pytest.mark.parametrize(
    "text",
    [
        "salt=AA==,stored_key=AA==,server_key=AA==",
        "salt=AA==,stored_key=AA==,server_key=AA==,iterations=x",
        "x",
    ],
)
def test_bad_scram_credential_strings_are_refused(text: str) -> None:
    with pytest.raises(CredentialError):
        credential_from_string(text)


@pytest.mark.parametrize(
    ("name", "node"),
    [
        ("alice", "alice"),
        ("a b", "a%20b"),
        ("x*y", "x%2Ay"),
        ("CN=alice,O=org", "CN%3Dalice%2CO%3Dorg"),
        ("é/~", "%C3%A9%2F%7E"),
        ("a.b-c_d", "a.b-c_d"),
    ],
)
def test_user_names_are_sanitized_as_kafkas_sanitizer(name: str, node: str) -> None:
    assert sanitize(name) == node
    assert desanitize(node) == name
