"""When the store of ACLs or SCRAM credentials cannot be reached (a cluster's ZooKeeper), the admin APIs
answer UNKNOWN_SERVER_ERROR without the reason, which names hosts, znodes or stored data and goes to the
broker's log: no message for ACLs (AclApis sends ApiError.fromThrowable's message, null for that code)
and the code's own message for SCRAM credentials (ZkAdminManager), as Kafka; the broker serves on."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path

import pytest

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.alter_user_scram_credentials import (
    AlterUserScramCredentialsRequest,
    ScramCredentialDeletion,
    ScramCredentialUpsertion,
)
from odradek.protocol.messages.create_acls import AclCreation, CreateAclsRequest
from odradek.protocol.messages.delete_acls import DeleteAclsFilter, DeleteAclsRequest
from odradek.protocol.messages.describe_user_scram_credentials import DescribeUserScramCredentialsRequest
from odradek.security.acl import (
    AccessControlEntry,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from odradek.security.acl_store import AclChange, AclsByPattern, AclStoreError
from odradek.security.authorizer import AclAuthorizer
from odradek.security.scram_credentials import CredentialError, ScramCredential, UserCredentials
from tests.support.handler_services import HandlerBroker

ORDERS = ResourcePattern(ResourceType.TOPIC, "orders", PatternType.LITERAL)
BOB_READS = AccessControlEntry("User:bob", "*", AclOperation.READ, AclPermissionType.ALLOW)
UNREACHABLE = "No answer from ZooKeeper at 127.0.0.1:2181 to a write within zookeeper.session.timeout.ms"


class UnreachableAcls:
    def load(self) -> AclsByPattern:
        return {ORDERS: frozenset({BOB_READS})}

    def check(self, pattern: ResourcePattern) -> None:
        pass

    async def update(self, changes: Mapping[ResourcePattern, AclChange]) -> AclsByPattern:
        raise AclStoreError(UNREACHABLE)


class UnreachableCredentials:
    def get(self, user: str, mechanism: str) -> ScramCredential | None:
        return None

    async def describe(self, users: Collection[str] | None) -> UserCredentials:
        raise CredentialError(UNREACHABLE)

    async def alter(
        self, upserts: dict[tuple[str, str], ScramCredential], deletions: set[tuple[str, str]]
    ) -> None:
        raise CredentialError(UNREACHABLE)


def _broker(log_dir: Path) -> HandlerBroker:
    broker = HandlerBroker(log_dir)
    broker.services.authorizer = AclAuthorizer(UnreachableAcls(), ["User:ANONYMOUS"], False)
    broker.services.scram_credentials = UnreachableCredentials()
    return broker


async def test_acl_changes_answer_the_unreachable_store_per_creation_and_filter_without_its_reason(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Before: each creation and filter carried the store's error text (ZooKeeper's host and port,
    znode paths) to the client."""
    broker = _broker(tmp_path)
    try:
        good = AclCreation(
            resource_type=ResourceType.TOPIC,
            resource_name="orders",
            resource_pattern_type=PatternType.LITERAL,
            principal="User:alice",
            host="*",
            operation=AclOperation.READ,
            permission_type=AclPermissionType.ALLOW,
        )
        created = await broker.call(CreateAclsRequest(creations=[good]), 3)
        assert [(r.error_code, r.error_message) for r in created.results] == [
            (ErrorCode.UNKNOWN_SERVER_ERROR, None)
        ]
        every, unknown_type = (
            DeleteAclsFilter(
                resource_type_filter=resource_type,
                resource_name_filter=None,
                pattern_type_filter=PatternType.ANY,
                principal_filter=None,
                host_filter=None,
                operation=AclOperation.ANY,
                permission_type=AclPermissionType.ANY,
            )
            for resource_type in (ResourceType.ANY, ResourceType.UNKNOWN)
        )
        deleted = await broker.call(DeleteAclsRequest(filters=[every, unknown_type]), 3)
        assert [(r.error_code, r.error_message, r.matching_acls) for r in deleted.filter_results] == [
            (ErrorCode.UNKNOWN_SERVER_ERROR, None, []),
            # a reason about the client's own filter is still given, as Kafka gives it
            (ErrorCode.INVALID_REQUEST, "Filter contains UNKNOWN elements", []),
        ]
        # the reason is in the broker's log, once per request
        logged = [r.getMessage() for r in caplog.records if UNREACHABLE in r.getMessage()]
        assert len(logged) == 2, logged
        # the broker's copy is unchanged: bob still reads
        assert broker.services.authorizer is not None
        assert broker.services.authorizer.authorize(
            "User:bob", "h", AclOperation.READ, ResourceType.TOPIC, "orders"
        )
    finally:
        broker.close()


async def test_scram_admin_answers_the_unreachable_store(tmp_path: Path) -> None:
    broker = _broker(tmp_path)
    try:
        described = await broker.call(DescribeUserScramCredentialsRequest(users=None), 0)
        # the reason is the broker's log line, not the client's (it names hosts, znodes, stored data)
        generic = ErrorCode.UNKNOWN_SERVER_ERROR.message
        assert (described.error_code, described.error_message) == (ErrorCode.UNKNOWN_SERVER_ERROR, generic)
        upsert = ScramCredentialUpsertion(
            name="alice", mechanism=1, iterations=4096, salt=b"s" * 16, salted_password=b"p" * 32
        )
        delete = ScramCredentialDeletion(name="bob", mechanism=1)
        altered = await broker.call(
            AlterUserScramCredentialsRequest(deletions=[delete], upsertions=[upsert]), 0
        )
        assert sorted((r.user, r.error_code, r.error_message) for r in altered.results) == [
            ("alice", ErrorCode.UNKNOWN_SERVER_ERROR, generic),
            ("bob", ErrorCode.UNKNOWN_SERVER_ERROR, generic),
        ]
    finally:
        broker.close()
