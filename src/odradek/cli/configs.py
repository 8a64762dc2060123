"""`odradek configs describe|alter`: topic and broker configs, shaped like kafka-configs.

describe uses DescribeConfigs; alter uses IncrementalAlterConfigs (SET for --add-config, DELETE for
--delete-config), so configs not named keep their values. Without --all, describe shows what was set
dynamically on the entity, as kafka-configs does; --all adds defaults and static broker settings.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from odradek.cli.arguments import add_connection_arguments, config_list, name_list
from odradek.cli.client import Admin
from odradek.cli.config_admin import alter_configs, broker_ids, describe_entries, entity_label
from odradek.cli.config_rows import ConfigRow
from odradek.cli.errors import USAGE, CliError, command
from odradek.cli.output import table
from odradek.cli.topics import list_topic_names

if TYPE_CHECKING:
    pass

ENTITY_TYPES = ("topics", "brokers")

EXAMPLES = """examples:
  odradek configs describe --entity-type topics --entity-name orders
  odradek configs describe --entity-type brokers --entity-name 1 --all
  odradek configs alter --entity-type topics --entity-name orders --add-config retention.ms=86400000
  odradek configs alter --entity-type brokers --entity-default --add-config log.retention.ms=604800000
  odradek configs alter --entity-type topics --entity-name orders --delete-config retention.ms
"""


def add_parser(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subcommands.add_parser(
        "configs",
        help="describe and alter topic and broker configs",
        description="Describe and alter topic and broker configs (like kafka-configs).",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")

    describe = actions.add_parser(
        "describe",
        help="show an entity's configs",
        description="Show the configs set on a topic or broker; --all shows every config with its source.",
    )
    _add_entity_arguments(describe, name_required=False)
    describe.add_argument("--all", action="store_true", help="every config, not only the dynamic ones")
    add_connection_arguments(describe)
    describe.set_defaults(run=run_describe)

    alter = actions.add_parser(
        "alter",
        help="set or remove configs of an entity",
        description="Set or remove configs of a topic or broker (IncrementalAlterConfigs).",
    )
    _add_entity_arguments(alter, name_required=True)
    alter.add_argument(
        "--add-config",
        action="append",
        default=[],
        type=config_list,
        metavar="K=V[,K2=V2]",
        help="configs to set; a value with commas goes in brackets: k=[a,b] (repeatable)",
    )
    alter.add_argument(
        "--delete-config",
        action="append",
        default=[],
        type=name_list,
        metavar="K[,K2]",
        help="configs to remove, so the default applies again (repeatable)",
    )
    add_connection_arguments(alter)
    alter.set_defaults(run=run_alter)


@command("configs describe")
def run_describe(args: argparse.Namespace) -> int:
    admin = Admin(args)
    names = [_entity_name(args)] if (args.entity_name is not None or args.entity_default) else None
    if names is None:
        names = _all_entity_names(admin, args.entity_type)
    for index, name in enumerate(names):
        entries = describe_entries(admin, args.entity_type, name)
        if not args.all:
            entries = [entry for entry in entries if _is_dynamic_for(entry, args.entity_type, name)]
        qualifier = "All" if args.all else "Dynamic"
        if index:
            print()
        print(f"{qualifier} configs for {entity_label(args.entity_type, name)}:")
        if not entries:
            print("  (none)")
            continue
        rows = [(entry.name, _shown_value(entry), _source(entry)) for entry in entries]
        print(_indent(table(("NAME", "VALUE", "SOURCE"), rows)))
    return 0


@command("configs alter")
def run_alter(args: argparse.Namespace) -> int:
    to_set = [pair for group in args.add_config for pair in group]
    to_delete = [name for group in args.delete_config for name in group]
    if not to_set and not to_delete:
        raise CliError("nothing to alter: give --add-config and/or --delete-config", USAGE)
    name = _entity_name(args)
    admin = Admin(args)
    alter_configs(admin, args.entity_type, name, dict(to_set), to_delete)
    print(f"Completed updating config for {entity_label(args.entity_type, name)}.")
    return 0


def _add_entity_arguments(parser: argparse.ArgumentParser, name_required: bool) -> None:
    parser.add_argument("--entity-type", required=True, choices=ENTITY_TYPES, help="topics or brokers")
    which = parser.add_mutually_exclusive_group(required=name_required)
    which.add_argument("--entity-name", metavar="NAME", help="the topic name or the broker id")
    which.add_argument(
        "--entity-default", action="store_true", help="the cluster-wide default of all brokers (brokers only)"
    )


def _entity_name(args: argparse.Namespace) -> str:
    if args.entity_default:
        if args.entity_type != "brokers":
            raise CliError("--entity-default applies to --entity-type brokers only", USAGE)
        return ""
    name: str = args.entity_name
    if args.entity_type == "brokers" and not name.isdigit():
        raise CliError(f"a broker is named by its id (a number), not {name!r}", USAGE)
    return name


def _all_entity_names(admin: Admin, entity_type: str) -> list[str]:
    if entity_type == "brokers":
        return broker_ids(admin)
    return list_topic_names(admin, include_internal=False)


def _is_dynamic_for(entry: ConfigRow, entity_type: str, name: str) -> bool:
    """kafka-configs' filter: what was set on this very entity."""
    if entity_type == "topics":
        return entry.source == "DYNAMIC_TOPIC_CONFIG"
    if name == "":
        return entry.source == "DYNAMIC_DEFAULT_BROKER_CONFIG"
    return entry.source == "DYNAMIC_BROKER_CONFIG"


def _source(entry: ConfigRow) -> str:
    return f"{entry.source} (read-only)" if entry.read_only else entry.source


def _shown_value(entry: ConfigRow) -> str:
    if entry.sensitive:
        return "(sensitive)"
    if entry.value is None:
        return "null"
    return entry.value or '""'  # an empty value stays visible in the table


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())
