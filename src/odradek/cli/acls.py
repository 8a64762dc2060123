"""`odradek acls list|add|remove`, shaped like kafka-acls.

APIs used: DescribeAcls (list), CreateAcls (add), DeleteAcls (remove), through confluent-kafka's
AdminClient. A resource is named with --topic, --group, --transactional-id or --cluster and matched by
--resource-pattern-type (literal by default; list and remove also take any and match). A list or
remove without a principal, host, operation or resource matches every one, as Kafka's filters do.
"""

from __future__ import annotations

import argparse
from typing import Any

from odradek.cli.arguments import add_connection_arguments
from odradek.cli.client import Admin
from odradek.cli.errors import USAGE, CliError, command
from odradek.cli.output import table

EXAMPLES = """examples:
  odradek acls add --allow-principal User:alice --operation Read --operation Describe --topic orders
  odradek acls add --allow-principal User:bob --operation Read --group app- --resource-pattern-type prefixed
  odradek acls add --deny-principal User:mallory --operation All --topic '*'
  odradek acls add --allow-principal User:ops --operation Alter --cluster
  odradek acls list
  odradek acls list --topic orders --resource-pattern-type match
  odradek acls remove --allow-principal User:alice --operation Read --topic orders
  odradek acls list --command-config admin.properties   # e.g. security.protocol=SASL_PLAINTEXT
"""

#: Kafka's operation names as kafka-acls spells them.
OPERATIONS = (
    "All",
    "Read",
    "Write",
    "Create",
    "Delete",
    "Alter",
    "Describe",
    "ClusterAction",
    "DescribeConfigs",
    "AlterConfigs",
    "IdempotentWrite",
)
PATTERN_TYPES = ("literal", "prefixed", "any", "match")


def add_parser(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subcommands.add_parser(
        "acls",
        help="list, add and remove ACLs",
        description="List, add and remove the broker's ACLs (like kafka-acls). The broker needs "
        "authorizer.class.name set; changing ACLs needs ALTER on the cluster, listing DESCRIBE.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    listing = actions.add_parser("list", help="list ACLs", description="List the ACLs matching the filter.")
    _add_resource_arguments(listing, required=False)
    listing.add_argument("--principal", help="only ACLs of this principal, e.g. User:alice")
    add_connection_arguments(listing)
    listing.set_defaults(run=run_list)

    add = actions.add_parser("add", help="add ACLs", description="Add one ACL per principal and operation.")
    _add_resource_arguments(add, required=True)
    _add_entry_arguments(add, required=True)
    add_connection_arguments(add)
    add.set_defaults(run=run_add)

    remove = actions.add_parser(
        "remove", help="remove ACLs", description="Remove the ACLs matching the filter, and list them."
    )
    _add_resource_arguments(remove, required=False)
    _add_entry_arguments(remove, required=False)
    add_connection_arguments(remove)
    remove.set_defaults(run=run_remove)


def _add_resource_arguments(parser: argparse.ArgumentParser, required: bool) -> None:
    which = parser.add_mutually_exclusive_group(required=required)
    which.add_argument("--topic", metavar="TOPIC", help="a topic ('*' for every topic)")
    which.add_argument("--group", metavar="GROUP", help="a consumer group ('*' for every group)")
    which.add_argument("--transactional-id", metavar="ID", help="a transactional id")
    which.add_argument("--cluster", action="store_true", help="the cluster (kafka-cluster)")
    if required:
        help_text = "how the name matches: literal (default) or prefixed"
    else:
        help_text = (
            "which patterns: literal (default with a resource), prefixed, any (default without) or match"
        )
    parser.add_argument(
        "--resource-pattern-type", choices=PATTERN_TYPES[:2] if required else PATTERN_TYPES, help=help_text
    )


def _add_entry_arguments(parser: argparse.ArgumentParser, required: bool) -> None:
    parser.add_argument("--allow-principal", action="append", default=[], metavar="PRINCIPAL")
    parser.add_argument("--deny-principal", action="append", default=[], metavar="PRINCIPAL")
    parser.add_argument("--host", default="*" if required else None, help="client host (default: any)")
    parser.add_argument(
        "--operation",
        action="append",
        default=[],
        type=_operation,
        metavar="OPERATION",
        help=f"repeatable; one of {', '.join(OPERATIONS)}",
    )


@command("acls list")
def run_list(args: argparse.Namespace) -> int:
    from confluent_kafka.admin._acl import AclBindingFilter, AclOperation, AclPermissionType

    admin = Admin(args)
    resource_type, name = _resource(args)
    any_host: Any = None
    acl_filter = AclBindingFilter(
        resource_type,
        name,
        _pattern_type(args),
        args.principal,
        any_host,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    bindings = admin.wait(admin.client.describe_acls(acl_filter, **admin.options), "DescribeAcls")
    print(_table(bindings))
    return 0


@command("acls add")
def run_add(args: argparse.Namespace) -> int:
    from confluent_kafka.admin._acl import AclBinding

    admin = Admin(args)
    entries = _entries(args)
    if not entries or not args.operation:
        raise CliError("name at least one --allow-principal or --deny-principal and one --operation", USAGE)
    resource_type, name = _resource(args)
    bindings = [
        AclBinding(resource_type, name, _pattern_type(args), principal, args.host, operation, permission)
        for principal, permission in entries
        for operation in args.operation
    ]
    futures = admin.client.create_acls(bindings, **admin.options)
    for binding in bindings:
        admin.wait(futures[binding], "CreateAcls")
    print(f"Added {len(bindings)} ACL(s):")
    print(_table(bindings))
    return 0


@command("acls remove")
def run_remove(args: argparse.Namespace) -> int:
    from confluent_kafka.admin._acl import AclBindingFilter, AclOperation, AclPermissionType

    resource_type, name = _resource(args)
    entries: list[tuple[Any, Any]] = list(_entries(args)) or [(None, AclPermissionType.ANY)]
    if name is None and entries[0][0] is None:
        raise CliError("name a resource or a principal: removing every ACL at once is refused", USAGE)
    admin = Admin(args)
    operations = args.operation or [AclOperation.ANY]
    filters = [
        AclBindingFilter(
            resource_type, name, _pattern_type(args), principal, args.host, operation, permission
        )
        for principal, permission in entries
        for operation in operations
    ]
    futures = admin.client.delete_acls(filters, **admin.options)
    removed = [binding for f in filters for binding in admin.wait(futures[f], "DeleteAcls")]
    print(f"Removed {len(removed)} ACL(s):")
    print(_table(removed))
    return 0


def _operation(text: str) -> Any:
    from confluent_kafka.admin._acl import AclOperation

    for name in OPERATIONS:
        if text.replace("_", "").lower() == name.lower():
            return AclOperation[_snake(name).upper()]
    raise argparse.ArgumentTypeError(f"unknown operation {text!r}: one of {', '.join(OPERATIONS)}")


def _snake(name: str) -> str:
    return "".join(f"_{c}" if c.isupper() and i else c for i, c in enumerate(name))


def _resource(args: argparse.Namespace) -> tuple[Any, Any]:
    """(type, name); None names match any (confluent-kafka's filters take None though typed str)."""
    from confluent_kafka.admin._resource import ResourceType

    if args.topic is not None:
        return ResourceType.TOPIC, args.topic
    if args.group is not None:
        return ResourceType.GROUP, args.group
    if args.transactional_id is not None:
        return ResourceType.TRANSACTIONAL_ID, args.transactional_id
    if args.cluster:
        return ResourceType.BROKER, "kafka-cluster"  # librdkafka names the cluster resource BROKER
    return ResourceType.ANY, None


def _pattern_type(args: argparse.Namespace) -> Any:
    from confluent_kafka.admin._resource import ResourcePatternType

    chosen = args.resource_pattern_type or ("literal" if _resource(args)[1] is not None else "any")
    return ResourcePatternType[chosen.upper()]


def _entries(args: argparse.Namespace) -> list[tuple[str, Any]]:
    from confluent_kafka.admin._acl import AclPermissionType

    allow = [(p, AclPermissionType.ALLOW) for p in args.allow_principal]
    return allow + [(p, AclPermissionType.DENY) for p in args.deny_principal]


def _table(bindings: list[Any]) -> str:
    rows = sorted(
        (
            b.restype.name,
            b.name,
            b.resource_pattern_type.name,
            b.principal,
            b.host,
            b.operation.name,
            b.permission_type.name,
        )
        for b in bindings
    )
    return table(("RESOURCE-TYPE", "NAME", "PATTERN", "PRINCIPAL", "HOST", "OPERATION", "PERMISSION"), rows)
