"""The single node's ACL file: Kafka's JSON shape per pattern, atomic replacement, a clear start-up error."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from odradek.cluster.metadata.acls import FILE_NAME, LocalAclStore
from odradek.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from odradek.security.acl_store import AclStoreError
from odradek.security.authorizer import AclAuthorizer

READ = AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW)
WRITE_DENY = AccessControlEntry("User:bob", "10.0.0.1", AclOperation.WRITE, AclPermissionType.DENY)
LITERAL = ResourcePattern(ResourceType.TOPIC, "orders", PatternType.LITERAL)
PREFIXED = ResourcePattern(ResourceType.GROUP, "app-", PatternType.PREFIXED)


def test_acls_survive_a_reload(tmp_path: Path) -> None:
    first = AclAuthorizer(LocalAclStore(tmp_path), (), False)
    asyncio.run(first.create_acls([AclBinding(LITERAL, READ), AclBinding(PREFIXED, WRITE_DENY)]))
    again = AclAuthorizer(LocalAclStore(tmp_path), (), False)
    assert again.authorize("User:alice", "h", AclOperation.READ, ResourceType.TOPIC, "orders")
    everything = AclBindingFilter(
        ResourceType.ANY, None, PatternType.ANY, None, None, AclOperation.ANY, AclPermissionType.ANY
    )
    assert set(again.acls(everything)) == {AclBinding(LITERAL, READ), AclBinding(PREFIXED, WRITE_DENY)}
    asyncio.run(again.delete_acls([everything]))
    assert AclAuthorizer(LocalAclStore(tmp_path), (), False).acls(everything) == []


def test_file_holds_kafka_acl_json_per_pattern(tmp_path: Path) -> None:
    LocalAclStore(tmp_path).write({LITERAL: frozenset({READ}), PREFIXED: frozenset({WRITE_DENY})})
    doc = json.loads((tmp_path / FILE_NAME).read_text())
    assert doc["acls"]["literal"]["Topic"]["orders"] == [
        {"principal": "User:alice", "permissionType": "Allow", "operation": "Read", "host": "*"}
    ]
    assert doc["acls"]["prefixed"]["Group"]["app-"][0]["operation"] == "Write"
    assert not (tmp_path / (FILE_NAME + ".tmp")).exists()


@pytest.mark.parametrize(
    "content", ["{not json", '{"version": 7, "acls": {}}', '{"version": 1, "acls": {"x": 1}}']
)
def test_corrupt_file_is_one_line_error_naming_it(tmp_path: Path, content: str) -> None:
    (tmp_path / FILE_NAME).write_text(content)
    with pytest.raises(AclStoreError) as caught:
        LocalAclStore(tmp_path).load()
    assert "\n" not in str(caught.value)
    assert FILE_NAME in str(caught.value)
