"""ACLs live in the log dir: they survive a restart and a crash, and a corrupt ACL file stops the
start-up with one line naming it."""

from __future__ import annotations

from pathlib import Path

import pytest

from odradek.cluster.metadata.acls import FILE_NAME
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.describe_acls import DescribeAclsRequest
from odradek.protocol.messages.find_coordinator import FindCoordinatorRequest
from odradek.security.acl import AclOperation, AclPermissionType, PatternType, ResourceType
from tests.integration.test_broker_startup_errors import assert_refused_in_one_line, run_broker
from tests.support.acls import AUTHORIZER, grant, sasl_client, start_acl_broker
from tests.support.broker_process import BrokerProcess
from tests.support.raw_client import RawClient

pytestmark = pytest.mark.timeout(90)

EVERY_ACL = DescribeAclsRequest(
    resource_type_filter=ResourceType.ANY,
    resource_name_filter=None,
    pattern_type_filter=PatternType.ANY,
    principal_filter=None,
    host_filter=None,
    operation=AclOperation.ANY,
    permission_type=AclPermissionType.ANY,
)


def _find_group(port: int, user: str, group: str) -> int:
    with sasl_client(port, user) as client:
        return int(client.request(FindCoordinatorRequest(key=group, key_type=0), 3).error_code)


@pytest.mark.parametrize("stop", ["restart", "crash"])
def test_acls_survive_restart(tmp_path: Path, stop: str) -> None:
    broker, port = start_acl_broker(tmp_path / "data")
    try:
        with sasl_client(port, "admin") as admin:
            grant(
                admin,
                "User:alice",
                ResourceType.GROUP,
                "team-",
                AclOperation.READ,
                pattern=PatternType.PREFIXED,
            )
            grant(
                admin,
                "User:alice",
                ResourceType.GROUP,
                "team-secret",
                AclOperation.ALL,
                permission=AclPermissionType.DENY,
            )
        assert _find_group(port, "alice", "team-a") == ErrorCode.NONE
        if stop == "crash":
            broker.kill()
            broker.start()
        else:
            broker.restart()
        assert _find_group(port, "alice", "team-a") == ErrorCode.NONE
        assert _find_group(port, "alice", "team-secret") == ErrorCode.GROUP_AUTHORIZATION_FAILED
        assert _find_group(port, "bob", "team-a") == ErrorCode.GROUP_AUTHORIZATION_FAILED
        with sasl_client(port, "admin") as admin:
            listed = admin.request(EVERY_ACL, 3)
        assert {(r.resource_name, r.pattern_type) for r in listed.resources} == {
            ("team-", PatternType.PREFIXED),
            ("team-secret", PatternType.LITERAL),
        }
    finally:
        broker.stop()


def test_corrupt_acl_file_refuses_to_start_in_one_line(tmp_path: Path) -> None:
    log_dir = tmp_path / "data"
    log_dir.mkdir()
    (log_dir / FILE_NAME).write_text(
        '{"version": 1, "acls": {"literal": {"Topic": {"t": [{"principal": 1}]}}}}'
    )
    result = run_broker(
        "--override",
        "listeners=PLAINTEXT://127.0.0.1:0",
        "--override",
        f"log.dirs={log_dir}",
        "--override",
        f"authorizer.class.name={AUTHORIZER}",
    )
    assert_refused_in_one_line(result, FILE_NAME)


def test_without_authorizer_the_acl_apis_answer_security_disabled(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "data").start()
    try:
        with RawClient(broker.port) as client:
            answer = client.request(EVERY_ACL, 1)
        assert answer.error_code == ErrorCode.SECURITY_DISABLED
    finally:
        broker.stop()
