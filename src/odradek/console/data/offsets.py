"""Where each partition's log starts and ends (ListOffsets earliest / latest), asked for many at once.

A partition the cluster answers with an error (no leader: its broker is down) is left out of the answer
rather than failing the page: the pages show its offsets as unknown and the other partitions as usual.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from odradek.cli.client import Admin
from odradek.cli.errors import CliError, kafka_error_message
from odradek.cli.group_offsets import Partition


@dataclass(frozen=True)
class LogRange:
    log_start_offset: int
    log_end_offset: int

    @property
    def messages(self) -> int:
        """Offsets between start and end: the message count, give or take compaction and transactions."""
        return max(0, self.log_end_offset - self.log_start_offset)


def log_ranges(admin: Admin, partitions: list[Partition]) -> dict[Partition, LogRange]:
    from confluent_kafka.admin._listoffsets import OffsetSpec

    earliest = log_offsets(admin, partitions, OffsetSpec.earliest())  # type: ignore[no-untyped-call]
    latest = log_end_offsets(admin, partitions)
    return {p: LogRange(earliest[p], latest[p]) for p in partitions if p in earliest and p in latest}


def log_end_offsets(admin: Admin, partitions: list[Partition]) -> dict[Partition, int]:
    from confluent_kafka.admin._listoffsets import OffsetSpec

    return log_offsets(admin, partitions, OffsetSpec.latest())  # type: ignore[no-untyped-call]


def offsets_for_timestamp(
    admin: Admin, partitions: list[Partition], timestamp_ms: int
) -> dict[Partition, int]:
    """The first offset at or after `timestamp_ms` in each partition; -1 where every message is older."""
    from confluent_kafka.admin._listoffsets import OffsetSpec

    return log_offsets(admin, partitions, OffsetSpec.for_timestamp(timestamp_ms))


def log_offsets(admin: Admin, partitions: list[Partition], spec: Any) -> dict[Partition, int]:
    """One ListOffsets answer per partition; a partition answered with a Kafka error is left out."""
    from confluent_kafka import TopicPartition

    partitions = _with_leader(admin, partitions)
    if not partitions:
        return {}
    wanted = {TopicPartition(topic, partition): spec for topic, partition in partitions}
    futures = admin.client.list_offsets(wanted, **admin.options)
    found: dict[Partition, int] = {}
    for tp, future in futures.items():
        try:
            found[(tp.topic, tp.partition)] = admin.wait(future, "ListOffsets").offset
        except CliError as error:
            if error.kafka_code is None:  # a timeout, not the partition's own answer
                raise
    return found


def _with_leader(admin: Admin, partitions: list[Partition]) -> list[Partition]:
    """The partitions that have a leader now (one Metadata request for their topics).

    A partition without one is not asked: librdkafka's ListOffsets waits for its leader past the request
    timeout, and when the leader's broker came back while it waited, librdkafka 2.16 aborted the whole
    console process (an assertion in rd_kafka_enq_once_del_source_return; twice in a reproduction).
    """
    from confluent_kafka import KafkaException

    if not partitions:
        return []
    topics = {topic for topic, _ in partitions}
    only = next(iter(topics)) if len(topics) == 1 else None  # else one request for every topic
    try:
        metadata = admin.client.list_topics(only, timeout=admin.timeout)
    except KafkaException as exception:
        raise CliError(kafka_error_message(exception.args[0], admin.bootstrap, "Metadata")) from None
    live = set(metadata.brokers)
    led = {
        (topic, number)
        for topic in topics
        if topic in metadata.topics
        for number, partition in metadata.topics[topic].partitions.items()
        if partition.leader >= 0 and partition.leader in live
    }
    return [partition for partition in partitions if partition in led]
