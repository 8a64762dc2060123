"""Offsets for `odradek groups`: what a group committed, where partitions' logs start and end, and the
reset-offsets plan (kafka-consumer-groups' --reset-offsets rules: --to-offset and --shift-by are clamped
to the partition's log, --to-datetime past the last message means the log end).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from odradek.cli.client import Admin
from odradek.cli.errors import CliError

if TYPE_CHECKING:
    from confluent_kafka.admin._listoffsets import OffsetSpec

Partition = tuple[str, int]


def committed_offsets(admin: Admin, group: str) -> dict[Partition, int]:
    """The group's committed offsets (OffsetFetch); partitions without one are left out."""
    from confluent_kafka import ConsumerGroupTopicPartitions

    futures = admin.client.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)], **admin.options)
    result: Any = admin.wait(futures[group], "OffsetFetch")
    return {
        (tp.topic, tp.partition): tp.offset
        for tp in result.topic_partitions or []
        if tp.offset >= 0 and tp.error is None
    }


def log_offsets(admin: Admin, partitions: list[Partition], spec: OffsetSpec) -> dict[Partition, int]:
    """One ListOffsets answer per partition: earliest, latest or for a timestamp (-1 when none)."""
    from confluent_kafka import TopicPartition

    if not partitions:
        return {}
    wanted = {TopicPartition(topic, partition): spec for topic, partition in partitions}
    futures = admin.client.list_offsets(wanted, **admin.options)
    return {
        (tp.topic, tp.partition): admin.wait(future, "ListOffsets").offset for tp, future in futures.items()
    }


def log_end_offsets(admin: Admin, partitions: list[Partition]) -> dict[Partition, int]:
    from confluent_kafka.admin._listoffsets import OffsetSpec

    return log_offsets(admin, partitions, OffsetSpec.latest())  # type: ignore[no-untyped-call]


def plan_reset(
    admin: Admin, args: argparse.Namespace, partitions: list[Partition], committed: dict[Partition, int]
) -> dict[Partition, int]:
    """The new offset of each partition for the --to-* / --shift-by option given."""
    from confluent_kafka.admin._listoffsets import OffsetSpec

    earliest = log_offsets(admin, partitions, OffsetSpec.earliest())  # type: ignore[no-untyped-call]
    latest = log_end_offsets(admin, partitions)
    if args.to_earliest:
        return earliest
    if args.to_latest:
        return latest
    if args.to_datetime is not None:
        at_time = OffsetSpec.for_timestamp(args.to_datetime)
        found = log_offsets(admin, partitions, at_time)
        return {p: found[p] if found[p] >= 0 else latest[p] for p in partitions}
    plan: dict[Partition, int] = {}
    for partition in partitions:
        if args.to_offset is not None:
            wanted = args.to_offset
        else:
            if partition not in committed:
                topic, number = partition
                raise CliError(
                    f"cannot shift {topic} partition {number}: the group has no committed offset there"
                )
            wanted = committed[partition] + args.shift_by
        plan[partition] = min(max(wanted, earliest[partition]), latest[partition])
    return plan


def apply_reset(admin: Admin, group: str, plan: dict[Partition, int]) -> None:
    """Commit the planned offsets for the group (OffsetCommit through the admin API)."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

    offsets = [
        TopicPartition(topic, partition, offset) for (topic, partition), offset in sorted(plan.items())
    ]
    futures = admin.client.alter_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group, offsets)], **admin.options
    )
    result: Any = admin.wait(futures[group], "OffsetCommit")
    failed = [tp for tp in result.topic_partitions or [] if tp.error is not None]
    if failed:
        first = failed[0]
        raise CliError(f"could not commit {first.topic} partition {first.partition}: {first.error.str()}")
