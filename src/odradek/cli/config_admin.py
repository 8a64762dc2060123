"""Describing and altering topic and broker configs through the admin client (DescribeConfigs,
IncrementalAlterConfigs); a broker's cluster-wide default through the wire calls, which librdkafka
cannot name. Used by `odradek configs`, `odradek topics` and the console."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from odradek.cli.client import Admin
from odradek.cli.config_rows import ConfigRow
from odradek.cli.errors import USAGE, CliError
from odradek.cli.wire import alter_broker_default, describe_broker_default

if TYPE_CHECKING:
    from confluent_kafka.admin._config import ConfigEntry, ConfigResource


def describe_entries(admin: Admin, entity_type: str, name: str) -> list[ConfigRow]:
    """The entity's configs, sorted by name (DescribeConfigs)."""
    from confluent_kafka import KafkaError

    if entity_type == "brokers" and name == "":
        return describe_broker_default(admin.config, admin.timeout)
    if entity_type == "brokers":
        check_broker_exists(admin, name)
    resource = config_resource(entity_type, name)
    futures = admin.client.describe_configs([resource], **admin.options)
    label = entity_label(entity_type, name)
    known = {
        KafkaError.UNKNOWN_TOPIC_OR_PART: f"{label} does not exist",
        KafkaError._UNKNOWN_BROKER: f"{label} does not exist",
    }
    configs: dict[str, ConfigEntry] = admin.wait(futures[resource], "DescribeConfigs", known)
    return [config_row(configs[key]) for key in sorted(configs)]


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
        alter_broker_default(admin.config, admin.timeout, to_set, to_delete)
        return
    if entity_type == "brokers":
        check_broker_exists(admin, name)
    operations = [
        ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET) for key, value in to_set.items()
    ]
    operations += [
        ConfigEntry(key, None, incremental_operation=AlterConfigOpType.DELETE) for key in to_delete
    ]
    resource = config_resource(entity_type, name, operations)
    futures = admin.client.incremental_alter_configs([resource], **admin.options)
    label = entity_label(entity_type, name)
    known = {
        KafkaError.UNKNOWN_TOPIC_OR_PART: f"{label} does not exist",
        KafkaError._UNKNOWN_BROKER: f"{label} does not exist",
    }
    admin.wait(futures[resource], "IncrementalAlterConfigs", known)


def broker_ids(admin: Admin) -> list[str]:
    cluster: Any = admin.wait(admin.client.describe_cluster(**admin.options), "Metadata")
    return [str(node.id) for node in sorted(cluster.nodes, key=lambda node: node.id)]


def check_broker_exists(admin: Admin, name: str) -> None:
    """librdkafka waits for the whole timeout for a broker it does not know: say so at once instead."""
    ids = broker_ids(admin)
    if name not in ids:
        raise CliError(f"broker {name} does not exist (the cluster has {', '.join(ids) or 'no brokers'})")


def config_resource(
    entity_type: str, name: str, operations: list[ConfigEntry] | None = None
) -> ConfigResource:
    from confluent_kafka.admin._config import ConfigResource
    from confluent_kafka.admin._resource import ResourceType

    kind = ResourceType.TOPIC if entity_type == "topics" else ResourceType.BROKER
    return ConfigResource(kind, name, incremental_configs=operations)


def entity_label(entity_type: str, name: str) -> str:
    if entity_type == "topics":
        return f"topic '{name}'"
    return "the default of all brokers" if name == "" else f"broker {name}"


def config_row(entry: ConfigEntry) -> ConfigRow:
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
