"""kafka-acls with --bootstrap-server: add, list and remove ACLs on each kind of resource, by pattern
type, with the --producer and --consumer shortcuts. The ACL entries of a resource are a set: the tool
prints them in hash order, so each block's entries are sorted here.

In a cluster, the broker that changes an ACL writes it to ZooKeeper and the others learn of it from a
change notification a moment later (in Kafka as in odradek), while each tool asks whichever broker it
likes: after each change the scenario waits until every broker describes the same ACLs."""

from __future__ import annotations

from odradek.protocol.messages.describe_acls import DescribeAclsRequest, DescribeAclsResponse
from odradek.security.acl import AclOperation, AclPermissionType, PatternType, ResourceType
from tests.support.raw_client import RawClient
from tests.support.tool_scenarios.session import Session, scenario, wait_for

B = "--bootstrap-server"


def _sorted_entries(text: str) -> str:
    """Each resource's indented ACL lines sorted; the blocks themselves sorted by their header."""
    blocks: list[list[str]] = []
    for line in text.splitlines():
        if line.startswith(("\t", " ")) and blocks:
            blocks[-1].append(line)
        elif line.strip():
            blocks.append([line])
    # the tool sets the first entry off with a tab, the others with a space and a tab: where an entry
    # lands in the hash order is no fact about the broker
    rendered = [[block[0], *sorted("\t" + entry.strip() for entry in block[1:])] for block in blocks]
    return "\n".join("\n".join(block) for block in sorted(rendered, key=lambda b: b[0]))


def acls(session: Session, *args: str) -> None:
    session.run("kafka-acls", B, "{bootstrap}", *args, shown=_sorted_entries)
    if session.cluster and ("--add" in args or "--remove" in args):
        wait_for(lambda: _agreed(session), 30, "every broker to describe the same ACLs")


def _described(session: Session, node: int) -> frozenset[tuple[object, ...]] | None:
    """Every ACL broker `node` describes (None when it cannot answer now)."""
    host, port = session.target.addresses[node]
    request = DescribeAclsRequest(
        resource_type_filter=ResourceType.ANY,
        resource_name_filter=None,
        pattern_type_filter=PatternType.ANY,
        principal_filter=None,
        host_filter=None,
        operation=AclOperation.ANY,
        permission_type=AclPermissionType.ANY,
    )
    try:
        with RawClient(port, timeout=5, host=host) as client:
            response: DescribeAclsResponse = client.request(request, 1)
    except OSError:
        return None
    if response.error_code != 0:
        return None
    return frozenset(
        (
            r.resource_type,
            r.resource_name,
            r.pattern_type,
            a.principal,
            a.host,
            a.operation,
            a.permission_type,
        )
        for r in response.resources
        for a in r.acls
    )


def _agreed(session: Session) -> bool:
    answers = [_described(session, node) for node in session.target.addresses]
    return None not in answers and len(set(answers)) == 1


ALICE = ("--allow-principal", "User:tools-alice")
BOB = ("--allow-principal", "User:tools-bob")
ORDERS = ("--topic", "tools-acl-orders")
PREFIX = ("--topic", "tools-acl-", "--resource-pattern-type", "prefixed")


@scenario()
def acl_commands(session: Session) -> None:
    acls(session, "--add", *ALICE, "--operation", "Read", "--operation", "Describe", *ORDERS)
    mallory = ("--deny-principal", "User:tools-mallory", "--deny-host", "127.0.0.9")
    acls(session, "--add", *mallory, "--operation", "All", *ORDERS)
    acls(session, "--add", *ALICE, "--operation", "Write", *PREFIX)
    acls(session, "--add", *ALICE, "--operation", "Read", "--group", "tools-acl-group")
    acls(session, "--add", *ALICE, "--operation", "Describe", "--cluster")
    acls(session, "--add", *ALICE, "--operation", "Write", "--transactional-id", "tools-acl-txn")
    acls(session, "--add", *BOB, "--producer", "--topic", "tools-acl-events", "--idempotent")
    acls(session, "--add", *BOB, "--consumer", "--topic", "tools-acl-events", "--group", "tools-acl-bob")
    acls(session, "--list", *ORDERS)
    acls(session, "--list", *ORDERS, "--resource-pattern-type", "match")
    acls(session, "--list", *PREFIX)
    acls(session, "--list", "--principal", "User:tools-bob")
    acls(session, "--list", "--group", "tools-acl-group")
    acls(session, "--list", "--cluster")
    acls(session, "--list", "--transactional-id", "tools-acl-txn")
    acls(session, "--add", "--allow-principal", "tools-alice", "--operation", "Read", *ORDERS)
    acls(session, "--remove", "--force", *ALICE, "--operation", "Read", *ORDERS)
    acls(session, "--list", *ORDERS)
    acls(session, "--remove", "--force", *ORDERS)
    acls(session, "--remove", "--force", *PREFIX)
    acls(session, "--remove", "--force", *BOB, "--topic", "tools-acl-events")
    acls(session, "--remove", "--force", "--group", "tools-acl-group")
    acls(session, "--remove", "--force", "--group", "tools-acl-bob")
    acls(session, "--remove", "--force", "--cluster")
    acls(session, "--remove", "--force", "--transactional-id", "tools-acl-txn")
    acls(session, "--list", "--principal", "User:tools-alice")
    acls(session, "--list", "--principal", "User:tools-bob")
