"""The authorizer's decisions, one rule of Kafka's AclAuthorizer at a time, over an in-memory store."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

import pytest

from odradek.config import BrokerConfig
from odradek.config.types import ConfigError
from odradek.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    InvalidAclError,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from odradek.security.acl_store import AclChange, AclsByPattern
from odradek.security.authorizer import AclAuthorizer, parse_super_users

Op, Type, Pattern = AclOperation, ResourceType, PatternType
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
ALICE, BOB = "User:alice", "User:bob"
HOST = "10.0.0.1"


class MemoryStore:
    def __init__(self) -> None:
        self.acls: AclsByPattern = {}
        self.writes = 0

    def load(self) -> AclsByPattern:
        return dict(self.acls)

    def check(self, pattern: ResourcePattern) -> None:
        pass

    async def update(self, changes: Mapping[ResourcePattern, AclChange]) -> AclsByPattern:
        self.writes += 1
        changed = {
            pattern: change(self.acls.get(pattern, frozenset())) for pattern, change in changes.items()
        }
        for pattern, entries in changed.items():
            if entries:
                self.acls[pattern] = entries
            else:
                self.acls.pop(pattern, None)
        return changed


def acl(
    name: str,
    operation: AclOperation,
    permission: AclPermissionType = ALLOW,
    principal: str = ALICE,
    host: str = "*",
    resource_type: ResourceType = Type.TOPIC,
    pattern: PatternType = Pattern.LITERAL,
) -> AclBinding:
    return AclBinding(
        ResourcePattern(resource_type, name, pattern),
        AccessControlEntry(principal, host, operation, permission),
    )


def authorizer(
    *bindings: AclBinding, super_users: tuple[str, ...] = (), everyone: bool = False
) -> AclAuthorizer:
    result = AclAuthorizer(MemoryStore(), super_users, everyone)
    if bindings:
        asyncio.run(result.create_acls(list(bindings)))
    return result


def may(auth: AclAuthorizer, operation: AclOperation, name: str = "orders", principal: str = ALICE) -> bool:
    return auth.authorize(principal, HOST, operation, Type.TOPIC, name)


def test_no_acl_denies_unless_allow_everyone_if_no_acl_found() -> None:
    assert not may(authorizer(), Op.READ)
    assert may(authorizer(everyone=True), Op.READ)
    # an ACL on the resource, even for someone else, takes the "no ACL" fallback away
    assert not may(authorizer(acl("orders", Op.READ, principal=BOB), everyone=True), Op.READ)


def test_super_users_are_allowed_everything_even_against_deny() -> None:
    auth = authorizer(acl("orders", Op.ALL, DENY), super_users=(ALICE,))
    assert may(auth, Op.DELETE)
    assert not may(auth, Op.READ, principal=BOB)
    assert parse_super_users(" User:alice ;User:bob;") == [ALICE, BOB]


def test_deny_wins_over_allow() -> None:
    auth = authorizer(acl("orders", Op.READ), acl("orders", Op.READ, DENY))
    assert not may(auth, Op.READ)
    auth = authorizer(acl("orders", Op.ALL), acl("orders", Op.WRITE, DENY))
    assert may(auth, Op.READ)
    assert not may(auth, Op.WRITE)


def test_deny_of_all_denies_every_operation() -> None:
    auth = authorizer(acl("orders", Op.READ), acl("*", Op.ALL, DENY))
    assert not may(auth, Op.READ)
    assert not may(auth, Op.DESCRIBE)


@pytest.mark.parametrize("implying", [Op.READ, Op.WRITE, Op.DELETE, Op.ALTER])
def test_read_write_delete_alter_imply_describe(implying: AclOperation) -> None:
    auth = authorizer(acl("orders", implying))
    assert may(auth, Op.DESCRIBE)
    assert not may(auth, Op.DESCRIBE_CONFIGS)


def test_create_does_not_imply_describe_and_deny_does_not_imply() -> None:
    assert not may(authorizer(acl("orders", Op.CREATE)), Op.DESCRIBE)
    # a DENY of READ leaves DESCRIBE (granted by ALLOW WRITE) alone
    auth = authorizer(acl("orders", Op.WRITE), acl("orders", Op.READ, DENY))
    assert may(auth, Op.DESCRIBE)


def test_alter_configs_implies_describe_configs() -> None:
    auth = authorizer(acl("orders", Op.ALTER_CONFIGS))
    assert may(auth, Op.DESCRIBE_CONFIGS)
    assert not may(auth, Op.DESCRIBE)


def test_all_allows_every_operation() -> None:
    auth = authorizer(acl("orders", Op.ALL))
    assert all(may(auth, op) for op in (Op.READ, Op.WRITE, Op.DESCRIBE, Op.ALTER_CONFIGS, Op.CREATE))


def test_literal_prefixed_and_wildcard_patterns() -> None:
    auth = authorizer(
        acl("orders", Op.READ),
        acl("log-", Op.WRITE, pattern=Pattern.PREFIXED),
        acl("*", Op.DESCRIBE),
    )
    assert may(auth, Op.READ, "orders")
    assert not may(auth, Op.READ, "orders-eu")  # a literal name is not a prefix
    assert may(auth, Op.WRITE, "log-app")
    assert not may(auth, Op.WRITE, "lo")
    assert may(auth, Op.DESCRIBE, "anything")
    # a PREFIXED "*" is the prefix "*", not a wildcard
    assert not may(authorizer(acl("*", Op.READ, pattern=Pattern.PREFIXED)), Op.READ, "orders")


def test_wildcard_principal_and_host_matching() -> None:
    auth = authorizer(acl("orders", Op.READ, principal="User:*"), acl("orders", Op.WRITE, host=HOST))
    assert may(auth, Op.READ, principal=BOB)
    assert may(auth, Op.WRITE)
    assert not auth.authorize(ALICE, "10.0.0.2", Op.WRITE, Type.TOPIC, "orders")


def test_resource_types_are_separate() -> None:
    auth = authorizer(acl("orders", Op.READ, resource_type=Type.GROUP))
    assert auth.authorize(ALICE, HOST, Op.READ, Type.GROUP, "orders")
    assert not may(auth, Op.READ)


def test_authorized_operations_bits() -> None:
    auth = authorizer(acl("orders", Op.READ))
    bits = auth.authorized_operations(ALICE, HOST, Type.TOPIC, "orders", [Op.READ, Op.WRITE, Op.DESCRIBE])
    assert bits == (1 << Op.READ) | (1 << Op.DESCRIBE)


def test_authorize_by_resource_type() -> None:
    auth = authorizer(acl("orders", Op.WRITE))
    assert auth.authorize_by_resource_type(ALICE, HOST, Op.WRITE, Type.TOPIC)
    assert not auth.authorize_by_resource_type(BOB, HOST, Op.WRITE, Type.TOPIC)
    denied = authorizer(acl("orders", Op.WRITE), acl("ord", Op.WRITE, DENY, pattern=Pattern.PREFIXED))
    assert not denied.authorize_by_resource_type(ALICE, HOST, Op.WRITE, Type.TOPIC)


def test_filters_match_as_kafka_and_delete_removes_only_matches() -> None:
    literal = acl("orders", Op.READ)
    prefixed = acl("ord", Op.WRITE, pattern=Pattern.PREFIXED)
    other = acl("payments", Op.READ, principal=BOB)
    auth = authorizer(literal, prefixed, other)

    def select(name: str | None, pattern: PatternType, principal: str | None = None) -> set[AclBinding]:
        acl_filter = AclBindingFilter(Type.ANY, name, pattern, principal, None, Op.ANY, AclPermissionType.ANY)
        return set(auth.acls(acl_filter))

    assert select(None, Pattern.ANY) == {literal, prefixed, other}
    assert select("orders", Pattern.MATCH) == {literal, prefixed}
    assert select("ord", Pattern.LITERAL) == set()
    assert select("ord", Pattern.PREFIXED) == {prefixed}
    assert select(None, Pattern.ANY, BOB) == {other}
    bob = AclBindingFilter(Type.TOPIC, None, Pattern.ANY, BOB, None, Op.ANY, AclPermissionType.ANY)
    assert asyncio.run(auth.delete_acls([bob])) == [[other]]
    assert select(None, Pattern.ANY) == {literal, prefixed}


def test_invalid_bindings_and_filters_are_refused() -> None:
    with pytest.raises(InvalidAclError):
        acl("orders", Op.ANY).validate()
    with pytest.raises(InvalidAclError):
        acl("orders", Op.READ, pattern=Pattern.MATCH).validate()
    with pytest.raises(InvalidAclError):
        acl("orders", Op.READ, principal="alice").validate()
    with pytest.raises(InvalidAclError):
        acl("other", Op.ALTER, resource_type=Type.CLUSTER).validate()
    acl("kafka-cluster", Op.ALTER, resource_type=Type.CLUSTER).validate()
    unknown = AclBindingFilter(Type.UNKNOWN, None, Pattern.ANY, None, None, Op.ANY, AclPermissionType.ANY)
    with pytest.raises(InvalidAclError):
        unknown.validate()


@pytest.mark.parametrize(
    "name",
    ["kafka.security.authorizer.AclAuthorizer", "org.apache.kafka.metadata.authorizer.StandardAuthorizer"],
)
def test_kafka_authorizer_class_names_are_accepted(name: str) -> None:
    config = BrokerConfig({"authorizer.class.name": name, "super.users": "User:admin"})
    assert config.authorizer_class_name == name


def test_other_authorizer_class_is_refused_in_one_line() -> None:
    with pytest.raises(ConfigError) as caught:
        BrokerConfig({"authorizer.class.name": "com.example.MyAuthorizer"})
    message = str(caught.value)
    assert "\n" not in message
    assert "authorizer.class.name" in message
    assert "kafka.security.authorizer.AclAuthorizer" in message


def test_delete_acls_answers_a_binding_under_the_first_filter_matching_it_only() -> None:
    """As Kafka's AclAuthorizer.deleteAcls: one deletion, reported once (before: under every filter)."""
    reads = acl("orders", Op.READ)
    auth = authorizer(reads, acl("orders", Op.WRITE))
    by_principal = AclBindingFilter(Type.ANY, None, Pattern.ANY, ALICE, None, Op.READ, AclPermissionType.ANY)
    by_topic = AclBindingFilter(
        Type.TOPIC, "orders", Pattern.LITERAL, None, None, Op.ANY, AclPermissionType.ANY
    )
    deleted = asyncio.run(auth.delete_acls([by_principal, by_topic]))
    assert deleted == [[reads], [acl("orders", Op.WRITE)]]


def test_delete_acls_naming_a_pattern_that_cannot_exist_asks_nothing_of_the_store() -> None:
    auth = authorizer()
    store = auth.store
    assert isinstance(store, MemoryStore)
    nameless = AclBindingFilter(Type.TOPIC, "", Pattern.LITERAL, None, None, Op.ANY, AclPermissionType.ANY)
    assert asyncio.run(auth.delete_acls([nameless])) == [[]]
    assert store.writes == 0
