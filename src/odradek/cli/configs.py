"""`odradek configs describe|alter`: topic and broker configs, shaped like kafka-configs.

describe uses DescribeConfigs; alter uses IncrementalAlterConfigs (SET for --add-config, DELETE for
--delete-config), so configs not named keep their values. Without --all, describe shows what was set
dynamically on the entity, as kafka-configs does; --all adds defaults and static broker settings.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from odradek.cli.arguments import add_connection_arguments, config_list, name_list
from odradek.cli.client import Admin
from odradek.cli.errors import USAGE, CliError, command
from odradek.cli.output import table

if TYPE_CHECKING:
    from confluent_kafka.admin._config import ConfigEntry, ConfigResource

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
        print(f"{qualifier} configs for {_entity_label(args.entity_type, name)}:")
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
    print(f"Completed updating config for {_entity_label(args.entity_type, name)}.")
    return 0


@dataclass(frozen=True)
class ConfigRow:
    """One config of an entity as DescribeConfigs reports it; `source` is Kafka's ConfigSource name."""

    name: str
    value: str | None
    source: str
    read_only: bool
    sensitive: bool
    is_default: bool


def describe_entries(admin: Admin, entity_type: str, name: str) -> list[ConfigRow]:
    """The entity's configs, sorted by name (DescribeConfigs)."""
    from confluent_kafka import KafkaError

    if entity_type == "brokers" and name == "":
        from odradek.cli.wire import describe_broker_default

        return describe_broker_default(admin.config, admin.timeout)
    if entity_type == "brokers":
        _check_broker_exists(admin, name)
    resource = _resource(entity_type, name)
    futures = admin.client.describe_configs([resource], **admin.options)
    label = _entity_label(entity_type, name)
    known = {
        KafkaError.UNKNOWN_TOPIC_OR_PART: f"{label} does not exist",
        KafkaError._UNKNOWN_BROKER: f"{label} does not exist",
    }
    configs: dict[str, ConfigEntry] = admin.wait(futures[resource], "DescribeConfigs", known)
    return [_row(configs[key]) for key in sorted(configs)]


def alter_configs(
    admin: Admin, entity_type: str, name: str, to_set: dict[str, str], to_delete: list[str]
) -> None:
    """Set and remove configs of one entity in one IncrementalAlterConfigs request."""
    from confluent_kafka import KafkaError
    from confluent_kafka.admin._config import AlterConfigOpType, ConfigEntry

    both = sorted(set(to_set) & set(to_delete))
    if both:
        raise CliError(f"cannot both set and delete {', '.join(both)}", USAGE)
    if entity_type == "brokers" and name == "":
        from odradek.cli.wire import alter_broker_default

        alter_broker_default(admin.config, admin.timeout, to_set, to_delete)
        return
    if entity_type == "brokers":
        _check_broker_exists(admin, name)
    operations = [
        ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET) for key, value in to_set.items()
    ]
    operations += [
        ConfigEntry(key, None, incremental_operation=AlterConfigOpType.DELETE) for key in to_delete
    ]
    resource = _resource(entity_type, name, operations)
    futures = admin.client.incremental_alter_configs([resource], **admin.options)
    label = _entity_label(entity_type, name)
    known = {
        KafkaError.UNKNOWN_TOPIC_OR_PART: f"{label} does not exist",
        KafkaError._UNKNOWN_BROKER: f"{label} does not exist",
    }
    admin.wait(futures[resource], "IncrementalAlterConfigs", known)


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
        return _broker_ids(admin)
    from odradek.cli.topics import list_topic_names

    return list_topic_names(admin, include_internal=False)


def _broker_ids(admin: Admin) -> list[str]:
    cluster: Any = admin.wait(admin.client.describe_cluster(**admin.options), "Metadata")
    return [str(node.id) for node in sorted(cluster.nodes, key=lambda node: node.id)]


def _check_broker_exists(admin: Admin, name: str) -> None:
    """librdkafka waits for the whole timeout for a broker it does not know: say so at once instead."""
    ids = _broker_ids(admin)
    if name not in ids:
        raise CliError(f"broker {name} does not exist (the cluster has {', '.join(ids) or 'no brokers'})")


def _resource(entity_type: str, name: str, operations: list[ConfigEntry] | None = None) -> ConfigResource:
    from confluent_kafka.admin._config import ConfigResource
    from confluent_kafka.admin._resource import ResourceType

    kind = ResourceType.TOPIC if entity_type == "topics" else ResourceType.BROKER
    return ConfigResource(kind, name, incremental_configs=operations)


def _entity_label(entity_type: str, name: str) -> str:
    if entity_type == "topics":
        return f"topic '{name}'"
    return "the default of all brokers" if name == "" else f"broker {name}"


def _row(entry: ConfigEntry) -> ConfigRow:
    from confluent_kafka.admin._config import ConfigSource

    source: Any = entry.source
    source = ConfigSource(source) if isinstance(source, int) else source
    return ConfigRow(
        name=entry.name,
        value=entry.value,
        source=str(getattr(source, "name", source)),
        read_only=entry.is_read_only,
        sensitive=entry.is_sensitive,
        is_default=entry.is_default,
    )


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
