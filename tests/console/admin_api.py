"""The numbers the pages must show, asked of the broker directly (confluent-kafka's AdminClient, and
DescribeLogDirs through odradek's codec as the console cannot ask librdkafka for it either)."""

from __future__ import annotations

from typing import Any


def cluster_id(admin: Any) -> str:
    return str(admin.describe_cluster().result(30).cluster_id)


def topic_names(admin: Any) -> list[str]:
    return sorted(admin.list_topics(timeout=30).topics)


def partitions(admin: Any, topic: str) -> dict[int, Any]:
    info: dict[int, Any] = admin.list_topics(topic, timeout=30).topics[topic].partitions
    return info


def log_offsets(admin: Any, topic: str, which: str) -> dict[int, int]:
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin._listoffsets import OffsetSpec

    spec = OffsetSpec.earliest() if which == "earliest" else OffsetSpec.latest()
    wanted = {TopicPartition(topic, p): spec for p in partitions(admin, topic)}
    return {tp.partition: f.result(30).offset for tp, f in admin.list_offsets(wanted).items()}


def committed(admin: Any, group: str) -> dict[tuple[str, int], int]:
    from confluent_kafka import ConsumerGroupTopicPartitions

    result = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(30)
    return {(tp.topic, tp.partition): tp.offset for tp in result.topic_partitions}


def topic_size(bootstrap: str, topic: str) -> int:
    from odradek.cli.wire import describe_log_dirs

    results = describe_log_dirs({"bootstrap.servers": bootstrap}, bootstrap, 30)
    return sum(
        p.partition_size for result in results for t in result.topics if t.name == topic for p in t.partitions
    )


def topic_config(admin: Any, topic: str, name: str) -> tuple[str | None, str]:
    from confluent_kafka.admin._config import ConfigResource, ConfigSource
    from confluent_kafka.admin._resource import ResourceType

    resource = ConfigResource(ResourceType.TOPIC, topic)
    entry = admin.describe_configs([resource])[resource].result(30)[name]
    source = ConfigSource(entry.source) if isinstance(entry.source, int) else entry.source
    return entry.value, str(source.name)
