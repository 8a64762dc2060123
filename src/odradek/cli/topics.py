"""`odradek topics create|list|describe|alter|delete`, shaped like kafka-topics.

APIs used: CreateTopics, Metadata (list, describe), DescribeConfigs (the configs line of describe,
left out with a note when the broker does not serve it), CreatePartitions and IncrementalAlterConfigs
(alter), DeleteTopics.
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import TYPE_CHECKING, Any

from odradek.cli.arguments import add_connection_arguments, key_value, name_list, positive_int
from odradek.cli.client import Admin
from odradek.cli.config_admin import alter_configs, describe_entries
from odradek.cli.errors import USAGE, CliError, command
from odradek.cli.output import table

if TYPE_CHECKING:
    from confluent_kafka.admin._topic import TopicDescription

EXAMPLES = """examples:
  odradek topics create --topic orders --partitions 3 --config retention.ms=86400000
  odradek topics list
  odradek topics describe --topic orders
  odradek topics alter --topic orders --partitions 6
  odradek topics alter --topic orders --config cleanup.policy=compact --delete-config retention.ms
  odradek topics delete --topic orders
"""


def add_parser(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subcommands.add_parser(
        "topics",
        help="create, list, describe, alter and delete topics",
        description="Create, list, describe, alter and delete topics (like kafka-topics).",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")

    create = actions.add_parser("create", help="create a topic", description="Create a topic.")
    create.add_argument("--topic", required=True, help="the topic's name")
    create.add_argument(
        "--partitions", type=positive_int, help="number of partitions (default: the broker's num.partitions)"
    )
    create.add_argument(
        "--replication-factor",
        type=positive_int,
        help="copies of each partition (default: the broker's default.replication.factor)",
    )
    create.add_argument(
        "--config",
        action="append",
        default=[],
        type=key_value,
        metavar="K=V",
        help="a topic config (repeatable)",
    )
    create.add_argument("--if-not-exists", action="store_true", help="succeed quietly if the topic exists")
    add_connection_arguments(create)
    create.set_defaults(run=run_create)

    listing = actions.add_parser("list", help="list topic names", description="List topic names, one a line.")
    listing.add_argument("--topic", metavar="REGEX", help="only names matching this regular expression")
    listing.add_argument("--exclude-internal", action="store_true", help="leave out internal topics (__...)")
    add_connection_arguments(listing)
    listing.set_defaults(run=run_list)

    describe = actions.add_parser(
        "describe",
        help="show partitions, leaders, replicas, ISR and configs",
        description="Show each partition's leader, replicas and in-sync replicas, and the topic's "
        "non-default configs. Without --topic, every topic.",
    )
    describe.add_argument("--topic", help="the topic (default: all topics)")
    describe.add_argument(
        "--if-exists", action="store_true", help="succeed quietly if the topic does not exist"
    )
    describe.add_argument("--exclude-internal", action="store_true", help="leave out internal topics (__...)")
    add_connection_arguments(describe)
    describe.set_defaults(run=run_describe)

    alter = actions.add_parser(
        "alter",
        help="add partitions or change configs",
        description="Add partitions to a topic (CreatePartitions) or change its configs "
        "(IncrementalAlterConfigs). Partitions can be added, never removed.",
    )
    alter.add_argument("--topic", required=True, help="the topic")
    alter.add_argument("--partitions", type=positive_int, help="the new total number of partitions")
    alter.add_argument(
        "--config",
        action="append",
        default=[],
        type=key_value,
        metavar="K=V",
        help="set a config (repeatable)",
    )
    alter.add_argument(
        "--delete-config",
        action="append",
        default=[],
        type=name_list,
        metavar="K",
        help="remove a config so the default applies again (repeatable)",
    )
    alter.add_argument("--if-exists", action="store_true", help="succeed quietly if the topic does not exist")
    add_connection_arguments(alter)
    alter.set_defaults(run=run_alter)

    delete = actions.add_parser("delete", help="delete a topic", description="Delete a topic and its data.")
    delete.add_argument("--topic", required=True, help="the topic")
    delete.add_argument(
        "--if-exists", action="store_true", help="succeed quietly if the topic does not exist"
    )
    add_connection_arguments(delete)
    delete.set_defaults(run=run_delete)


@command("topics create")
def run_create(args: argparse.Namespace) -> int:
    from confluent_kafka import KafkaError
    from confluent_kafka.cimpl import NewTopic

    admin = Admin(args)
    new_topic = NewTopic(
        args.topic,
        num_partitions=args.partitions or -1,
        replication_factor=args.replication_factor or -1,
        config=dict(args.config),
    )
    futures = admin.client.create_topics([new_topic], operation_timeout=admin.timeout, **admin.options)
    exists = KafkaError.TOPIC_ALREADY_EXISTS
    try:
        admin.wait(futures[args.topic], "CreateTopics", {exists: f"topic '{args.topic}' already exists"})
    except CliError as error:
        if error.kafka_code == exists and args.if_not_exists:
            return 0
        raise
    print(f"Created topic {args.topic}.")
    return 0


@command("topics list")
def run_list(args: argparse.Namespace) -> int:
    pattern = _regex(args.topic)
    admin = Admin(args)
    for name in list_topic_names(admin, include_internal=not args.exclude_internal):
        if pattern is None or pattern.fullmatch(name):
            print(name)
    return 0


@command("topics describe")
def run_describe(args: argparse.Namespace) -> int:
    admin = Admin(args)
    if args.topic is None:
        names = list_topic_names(admin, include_internal=not args.exclude_internal)
    else:
        names = [args.topic]
    configs_note_shown = False
    for index, name in enumerate(names):
        try:
            description = describe_topic(admin, name)
        except CliError as error:
            if args.if_exists and _is_unknown_topic(error):
                continue
            raise
        configs, note = _non_default_configs(admin, name)
        if note and not configs_note_shown:
            print(f"odradek topics describe: {note}", file=sys.stderr)
            configs_note_shown = True
        if index:
            print()
        print(_describe_text(description, configs))
    return 0


@command("topics alter")
def run_alter(args: argparse.Namespace) -> int:
    to_delete = [name for group in args.delete_config for name in group]
    if args.partitions is None and not args.config and not to_delete:
        raise CliError("nothing to alter: give --partitions, --config or --delete-config", USAGE)
    admin = Admin(args)
    try:
        description = describe_topic(admin, args.topic)
    except CliError as error:
        if args.if_exists and _is_unknown_topic(error):
            return 0
        raise
    if args.partitions is not None:
        _add_partitions(admin, args.topic, len(description.partitions), args.partitions)
    if args.config or to_delete:
        alter_configs(admin, "topics", args.topic, dict(args.config), to_delete)
        changes = [f"{key}={value}" for key, value in args.config] + [f"{key} removed" for key in to_delete]
        print(f"Updated configs of topic {args.topic}: {', '.join(changes)}.")
    return 0


@command("topics delete")
def run_delete(args: argparse.Namespace) -> int:
    from confluent_kafka import KafkaError

    admin = Admin(args)
    futures = admin.client.delete_topics([args.topic], operation_timeout=admin.timeout, **admin.options)
    unknown = KafkaError.UNKNOWN_TOPIC_OR_PART
    try:
        admin.wait(futures[args.topic], "DeleteTopics", {unknown: f"topic '{args.topic}' does not exist"})
    except CliError as error:
        if error.kafka_code == unknown and args.if_exists:
            return 0
        raise
    print(f"Deleted topic {args.topic}.")
    return 0


def list_topic_names(admin: Admin, include_internal: bool) -> list[str]:
    """Every topic's name, sorted (a Metadata request for all topics)."""
    from confluent_kafka import KafkaException

    from odradek.cli.errors import kafka_error_message

    try:
        metadata = admin.client.list_topics(timeout=admin.timeout)
    except KafkaException as exception:
        raise CliError(kafka_error_message(exception.args[0], admin.bootstrap, "Metadata")) from None
    return sorted(name for name in metadata.topics if include_internal or not name.startswith("__"))


def describe_topic(admin: Admin, name: str) -> TopicDescription:
    """The topic's id and partitions (Metadata); a missing topic is a CliError."""
    from confluent_kafka import KafkaError, TopicCollection

    futures = admin.client.describe_topics(TopicCollection([name]), **admin.options)
    known = {KafkaError.UNKNOWN_TOPIC_OR_PART: f"topic '{name}' does not exist"}
    description: TopicDescription = admin.wait(futures[name], "Metadata", known)
    return description


def _add_partitions(admin: Admin, topic: str, current: int, wanted: int) -> None:
    from confluent_kafka.cimpl import NewPartitions

    if wanted < current:
        raise CliError(f"topic '{topic}' has {current} partitions; partitions can be added, not removed")
    if wanted == current:
        print(f"Topic {topic} already has {current} partitions.")
        return
    futures = admin.client.create_partitions(
        [NewPartitions(topic, wanted)], operation_timeout=admin.timeout, **admin.options
    )
    admin.wait(futures[topic], "CreatePartitions")
    print(f"Topic {topic} now has {wanted} partitions (was {current}).")


def _non_default_configs(admin: Admin, topic: str) -> tuple[list[tuple[str, str]] | None, str | None]:
    """(name, value) of configs not at their default, or None and why they could not be read."""
    from confluent_kafka import KafkaError

    try:
        entries = describe_entries(admin, "topics", topic)
    except CliError as error:
        if error.kafka_code in (KafkaError._UNSUPPORTED_FEATURE, KafkaError.UNSUPPORTED_VERSION):
            return None, f"configs are not shown: {error.message}"
        raise
    shown = [(e.name, "(sensitive)" if e.sensitive else str(e.value)) for e in entries if not e.is_default]
    return shown, None


def _describe_text(description: TopicDescription, configs: list[tuple[str, str]] | None) -> str:
    partitions = sorted(description.partitions, key=lambda p: p.id)
    replication = len(partitions[0].replicas) if partitions else 0
    header = (
        f"Topic: {description.name}   TopicId: {_topic_id(description.topic_id)}   "
        f"PartitionCount: {len(partitions)}   ReplicationFactor: {replication}"
    )
    if configs is None:
        config_line = "Configs: (unknown)"
    else:
        config_line = "Configs: " + (", ".join(f"{k}={v}" for k, v in configs) if configs else "(none)")
    rows = [
        (p.id, _node_id(p.leader), _ids(p.replicas), _ids(p.isr))
        for p in partitions  # a partition's view: who leads it, who holds it, who is in sync
    ]
    body = table(("PARTITION", "LEADER", "REPLICAS", "ISR"), rows)
    return "\n".join([header, config_line, *("  " + line for line in body.splitlines())])


def _topic_id(topic_id: Any) -> str:
    """Kafka prints topic ids in URL-safe base64; librdkafka's string uses the standard alphabet."""
    return str(topic_id).replace("+", "-").replace("/", "_")


def _node_id(node: Any) -> str:
    return "none" if node is None or node.id < 0 else str(node.id)


def _ids(nodes: list[Any]) -> str:
    return ",".join(str(node.id) for node in nodes) or "-"


def _is_unknown_topic(error: CliError) -> bool:
    from confluent_kafka import KafkaError

    return error.kafka_code == KafkaError.UNKNOWN_TOPIC_OR_PART


def _regex(text: str | None) -> re.Pattern[str] | None:
    if text is None:
        return None
    try:
        return re.compile(text)
    except re.error as error:
        raise CliError(f"--topic is not a valid regular expression: {error}", USAGE) from None
