"""Topic configs in bulk (retention, min.insync.replicas for every topic in one DescribeConfigs), and the
changes the console makes: CreateTopics, DeleteTopics and IncrementalAlterConfigs (the CLI's).
"""

from __future__ import annotations

from typing import Any

from odradek.cli.client import Admin
from odradek.cli.config_admin import alter_configs, describe_entries
from odradek.cli.config_rows import ConfigRow
from odradek.cli.errors import CliError

#: The configs the topic list and the overview need of every topic.
SUMMARY_CONFIGS = ("retention.ms", "retention.bytes", "min.insync.replicas", "cleanup.policy")


def topic_summary_configs(admin: Admin, topics: list[str]) -> dict[str, dict[str, str]]:
    """SUMMARY_CONFIGS of each topic, asked in one DescribeConfigs; a topic that failed is left out."""
    from confluent_kafka.admin._config import ConfigResource
    from confluent_kafka.admin._resource import ResourceType

    if not topics:
        return {}
    resources = [ConfigResource(ResourceType.TOPIC, name) for name in topics]
    futures = admin.client.describe_configs(resources, **admin.options)
    summary: dict[str, dict[str, str]] = {}
    for resource, future in futures.items():
        try:
            entries: dict[str, Any] = admin.wait(future, "DescribeConfigs")
        except CliError:
            continue
        summary[resource.name] = {
            name: entries[name].value
            for name in SUMMARY_CONFIGS
            if name in entries and entries[name].value is not None
        }
    return summary


def topic_configs(admin: Admin, topic: str) -> list[ConfigRow]:
    return describe_entries(admin, "topics", topic)


def broker_configs(admin: Admin, broker_id: int) -> list[ConfigRow]:
    return describe_entries(admin, "brokers", str(broker_id))


def create_topic(
    admin: Admin, name: str, partitions: int | None, replication_factor: int | None, configs: dict[str, str]
) -> None:
    from confluent_kafka import KafkaError
    from confluent_kafka.cimpl import NewTopic

    new_topic = NewTopic(
        name,
        num_partitions=partitions if partitions is not None else -1,
        replication_factor=replication_factor if replication_factor is not None else -1,
        config=configs,
    )
    futures = admin.client.create_topics([new_topic], **admin.options)
    known = {KafkaError.TOPIC_ALREADY_EXISTS: f"topic '{name}' already exists"}
    admin.wait(futures[name], "CreateTopics", known)


def delete_topic(admin: Admin, name: str) -> None:
    from confluent_kafka import KafkaError

    futures = admin.client.delete_topics([name], **admin.options)
    known = {KafkaError.UNKNOWN_TOPIC_OR_PART: f"topic '{name}' does not exist"}
    admin.wait(futures[name], "DeleteTopics", known)


def validate_topic_configs(admin: Admin, topic: str, to_set: dict[str, str], to_delete: list[str]) -> None:
    """The broker's verdict on a change without making it (IncrementalAlterConfigs, validate_only): the
    preview says "unknown config" or "invalid value" before anyone confirms."""
    from confluent_kafka import KafkaError
    from confluent_kafka.admin._config import AlterConfigOpType, ConfigEntry, ConfigResource
    from confluent_kafka.admin._resource import ResourceType

    operations = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in to_set.items()]
    operations += [ConfigEntry(k, None, incremental_operation=AlterConfigOpType.DELETE) for k in to_delete]
    resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=operations)
    futures = admin.client.incremental_alter_configs([resource], validate_only=True, **admin.options)
    known = {KafkaError.UNKNOWN_TOPIC_OR_PART: f"topic '{topic}' does not exist"}
    admin.wait(futures[resource], "IncrementalAlterConfigs", known)


def alter_topic_configs(admin: Admin, topic: str, to_set: dict[str, str], to_delete: list[str]) -> None:
    alter_configs(admin, "topics", topic, to_set, to_delete)
