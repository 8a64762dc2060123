"""`odradek groups list|describe|delete|reset-offsets`, shaped like kafka-consumer-groups.

APIs used: ListGroups; DescribeGroups, OffsetFetch and ListOffsets (describe: committed offset, log end
offset and lag per partition, with the member that owns it); DeleteGroups; OffsetCommit (reset-offsets
with --execute, allowed only while the group has no active members, as in Kafka).
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from odradek.cli.arguments import add_connection_arguments, timestamp_ms
from odradek.cli.client import Admin
from odradek.cli.errors import USAGE, CliError, command, kafka_error_message
from odradek.cli.group_offsets import (
    Partition,
    apply_reset,
    committed_offsets,
    log_end_offsets,
    plan_reset,
)
from odradek.cli.output import table

if TYPE_CHECKING:
    from confluent_kafka.admin._group import ConsumerGroupDescription

EXAMPLES = """examples:
  odradek groups list --state
  odradek groups describe --group billing
  odradek groups describe --group billing --members
  odradek groups reset-offsets --group billing --topic orders --to-earliest            # shows the plan
  odradek groups reset-offsets --group billing --topic orders:0,1 --shift-by -10 --execute
  odradek groups delete --group billing
"""


def add_parser(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subcommands.add_parser(
        "groups",
        help="list, describe, delete consumer groups and reset their offsets",
        description="List, describe and delete consumer groups, and reset their offsets "
        "(like kafka-consumer-groups).",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")

    listing = actions.add_parser("list", help="list consumer groups", description="List consumer group ids.")
    listing.add_argument("--state", action="store_true", help="show each group's state too")
    add_connection_arguments(listing)
    listing.set_defaults(run=run_list)

    describe = actions.add_parser(
        "describe",
        help="offsets and lag per partition, members, or state",
        description="Per partition: the committed offset, the log end offset, the lag and the member "
        "consuming it. --members lists members instead, --state the group's state.",
    )
    which = describe.add_mutually_exclusive_group(required=True)
    which.add_argument("--group", action="append", metavar="GROUP", help="the group (repeatable)")
    which.add_argument("--all-groups", action="store_true", help="every group")
    view = describe.add_mutually_exclusive_group()
    view.add_argument("--members", action="store_true", help="members and how many partitions each has")
    view.add_argument("--state", action="store_true", help="coordinator, assignor, state and member count")
    add_connection_arguments(describe)
    describe.set_defaults(run=run_describe)

    delete = actions.add_parser(
        "delete", help="delete consumer groups", description="Delete groups that have no active members."
    )
    delete.add_argument("--group", action="append", required=True, metavar="GROUP", help="repeatable")
    add_connection_arguments(delete)
    delete.set_defaults(run=run_delete)

    reset = actions.add_parser(
        "reset-offsets",
        help="move a group's committed offsets",
        description="Move a group's committed offsets. Shows the plan unless --execute is given; "
        "executing needs the group to have no active members.",
    )
    reset.add_argument("--group", required=True)
    scope = reset.add_mutually_exclusive_group(required=True)
    scope.add_argument(
        "--topic",
        action="append",
        metavar="TOPIC[:P,P]",
        help="a topic, or some of its partitions (repeatable)",
    )
    scope.add_argument("--all-topics", action="store_true", help="every topic the group has offsets for")
    target = reset.add_mutually_exclusive_group(required=True)
    target.add_argument("--to-earliest", action="store_true", help="the start of each log")
    target.add_argument("--to-latest", action="store_true", help="the end of each log")
    target.add_argument("--to-offset", type=int, metavar="N", help="offset N (kept within the log)")
    target.add_argument(
        "--shift-by", type=int, metavar="N", help="the committed offset plus N (may be negative)"
    )
    target.add_argument(
        "--to-datetime",
        type=timestamp_ms,
        metavar="TIME",
        help="the first message at or after TIME (ISO-8601 or ms)",
    )
    mode = reset.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="only show the plan (the default)")
    mode.add_argument("--execute", action="store_true", help="commit the new offsets")
    add_connection_arguments(reset)
    reset.set_defaults(run=run_reset)


@command("groups list")
def run_list(args: argparse.Namespace) -> int:
    admin = Admin(args)
    listings = _list_groups(admin)
    if args.state:
        print(table(("GROUP", "STATE"), [(g.group_id, _state(g)) for g in listings]))
    else:
        for listing in listings:
            print(listing.group_id)
    return 0


@command("groups describe")
def run_describe(args: argparse.Namespace) -> int:
    admin = Admin(args)
    groups = args.group or _all_group_ids(admin)
    for index, group in enumerate(groups):
        if index:
            print()
        description = _describe_group(admin, group)
        if args.state:
            print(_state_table(description))
        elif args.members:
            print(_members_table(description))
        else:
            print(_offsets_table(admin, description))
    return 0


@command("groups delete")
def run_delete(args: argparse.Namespace) -> int:
    from confluent_kafka import KafkaError

    admin = Admin(args)
    futures = admin.client.delete_consumer_groups(list(args.group), **admin.options)
    for group, future in futures.items():
        known = {
            KafkaError.GROUP_ID_NOT_FOUND: f"consumer group '{group}' does not exist",
            KafkaError.NON_EMPTY_GROUP: f"consumer group '{group}' has active members; stop them first",
        }
        admin.wait(future, "DeleteGroups", known)
        print(f"Deleted consumer group {group}.")
    return 0


@command("groups reset-offsets")
def run_reset(args: argparse.Namespace) -> int:
    admin = Admin(args)
    description = _describe_group_if_any(admin, args.group)
    active = description is not None and bool(description.members)
    if active and args.execute:
        raise CliError(
            f"offsets can only be reset while group '{args.group}' has no active members "
            f"(it is {_state(description)}); stop its consumers first"
        )
    committed = committed_offsets(admin, args.group)
    partitions = _reset_scope(admin, args, committed)
    plan = plan_reset(admin, args, partitions, committed)
    if args.execute:
        apply_reset(admin, args.group, plan)
    rows = [(args.group, t, p, committed.get((t, p)), plan[(t, p)]) for t, p in sorted(plan)]
    print(table(("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET"), rows))
    if not args.execute:
        note = " (the group has active members: --execute would be refused)" if active else ""
        print(f"Dry run: nothing changed{note}. Add --execute to commit these offsets.", file=sys.stderr)
    return 0


def _describe_group(admin: Admin, group: str) -> ConsumerGroupDescription:
    """The group's state and members (DescribeGroups); a group that does not exist is an error."""
    description = _describe_group_if_any(admin, group)
    if description is None:
        raise CliError(f"consumer group '{group}' does not exist")
    return description


def _describe_group_if_any(admin: Admin, group: str) -> ConsumerGroupDescription | None:
    """The group's description, or None if the coordinator knows no such group (Kafka: state Dead)."""
    from confluent_kafka import ConsumerGroupState, KafkaError

    futures = admin.client.describe_consumer_groups([group], **admin.options)
    try:
        description: ConsumerGroupDescription = admin.wait(futures[group], "DescribeGroups")
    except CliError as error:
        if error.kafka_code == KafkaError.GROUP_ID_NOT_FOUND:
            return None
        raise
    if getattr(description, "state", None) == ConsumerGroupState.DEAD:
        return None
    return description


def _list_groups(admin: Admin) -> list[Any]:
    """Every group's listing (ListGroups), sorted by id; a broker that failed to answer is an error."""
    result: Any = admin.wait(admin.client.list_consumer_groups(**admin.options), "ListGroups")
    if result.errors:
        error = result.errors[0]  # a KafkaError, or a KafkaException holding one
        cause = error if hasattr(error, "code") else (error.args[0] if getattr(error, "args", None) else None)
        if cause is None or not hasattr(cause, "code"):
            raise CliError(str(error))
        raise CliError(kafka_error_message(cause, admin.bootstrap, "ListGroups"), kafka_code=cause.code())
    return sorted(result.valid or [], key=lambda listing: listing.group_id)


def _all_group_ids(admin: Admin) -> list[str]:
    return [listing.group_id for listing in _list_groups(admin)]


def _offsets_table(admin: Admin, description: ConsumerGroupDescription) -> str:
    group = description.group_id
    owners: dict[Partition, Any] = {}
    for member in description.members:
        for tp in member.assignment.topic_partitions:
            owners[(tp.topic, tp.partition)] = member
    committed = committed_offsets(admin, group)
    partitions = sorted(set(owners) | set(committed))
    ends = log_end_offsets(admin, partitions)
    rows = []
    for topic, partition in partitions:
        current = committed.get((topic, partition))
        end = ends.get((topic, partition))
        lag = end - current if current is not None and end is not None and end >= 0 else None
        owner = owners.get((topic, partition))
        rows.append(
            (
                group,
                topic,
                partition,
                current,
                end,
                lag,
                owner.member_id if owner else None,
                owner.host if owner else None,
                owner.client_id if owner else None,
            )
        )
    headers = (
        "GROUP",
        "TOPIC",
        "PARTITION",
        "CURRENT-OFFSET",
        "LOG-END-OFFSET",
        "LAG",
        "CONSUMER-ID",
        "HOST",
        "CLIENT-ID",
    )
    lines = []
    if not description.members:
        lines.append(f"Consumer group '{group}' has no active members.")
    if not partitions:
        lines.append(f"Consumer group '{group}' has no committed offsets and no assigned partitions.")
        return "\n".join(lines)
    return "\n".join([*lines, table(headers, rows)])


def _members_table(description: ConsumerGroupDescription) -> str:
    if not description.members:
        return f"Consumer group '{description.group_id}' has no active members."
    rows = [
        (description.group_id, m.member_id, m.host, m.client_id, len(m.assignment.topic_partitions))
        for m in sorted(description.members, key=lambda m: m.member_id)
    ]
    return table(("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"), rows)


def _state_table(description: ConsumerGroupDescription) -> str:
    coordinator = description.coordinator
    where = f"{coordinator.host}:{coordinator.port} ({coordinator.id})" if coordinator else None
    row = (
        description.group_id,
        where,
        description.partition_assignor or None,
        _state(description),
        len(description.members),
    )
    return table(("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"), [row])


def _reset_scope(admin: Admin, args: argparse.Namespace, committed: dict[Partition, int]) -> list[Partition]:
    """The partitions --topic / --all-topics name."""
    from odradek.cli.topics import describe_topic

    if args.all_topics:
        if not committed:
            raise CliError(f"group '{args.group}' has no committed offsets; name the topics with --topic")
        return sorted(committed)
    scope: list[Partition] = []
    for spec in args.topic:
        topic, _, numbers = spec.partition(":")
        existing = sorted(p.id for p in describe_topic(admin, topic).partitions)
        if not numbers:
            scope += [(topic, p) for p in existing]
            continue
        for text in numbers.split(","):
            if not text.strip().isdigit():
                raise CliError(f"--topic {spec}: partitions are numbers, like orders:0,2", USAGE)
            if int(text) not in existing:
                raise CliError(f"topic '{topic}' has no partition {int(text)} (it has {len(existing)})")
            scope.append((topic, int(text)))
    return sorted(set(scope))


def _state(group: Any) -> str:
    state = getattr(group, "state", None)
    name = getattr(state, "name", None)
    return {
        "STABLE": "Stable",
        "EMPTY": "Empty",
        "DEAD": "Dead",
        "PREPARING_REBALANCING": "PreparingRebalance",
        "COMPLETING_REBALANCING": "CompletingRebalance",
    }.get(name or "", "Unknown")
