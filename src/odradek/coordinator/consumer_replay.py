"""Replay of the consumer group records (types 3-8 and 16) into a shard's groups.

A record for a group id held by a classic group (an empty one, or a simple group made by offset
commits) turns it into a consumer group, as Kafka's replay does; the classic group's own tombstone
comes first in the log when the coordinator converts it.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from odradek.coordinator import consumer_records as cr
from odradek.coordinator.consumer_group import ConsumerGroup
from odradek.coordinator.group_types import Group
from odradek.coordinator.records import CoordinatorRecord


def replay(groups: MutableMapping[str, Group], record: CoordinatorRecord) -> None:
    """One consumer group record into a shard's `groups`."""
    key: Any = record.key
    value: Any = record.value
    kind = record.record_type
    group_id: str = key.group_id
    if kind == cr.CONSUMER_GROUP_PARTITION_METADATA:
        return  # subscription metadata of Kafka < 4.1: the metadata hash replaced it
    existing = groups.get(group_id)
    group = existing if isinstance(existing, ConsumerGroup) else None
    if group is None:
        if value is None:
            return  # a tombstone for a group that is not (or no longer) a consumer group
        group = ConsumerGroup(group_id)
        groups[group_id] = group
    if kind == cr.CONSUMER_GROUP_METADATA:
        if value is None:
            if not group.members:
                groups.pop(group_id, None)
            return
        group.group_epoch = value.epoch
        group.metadata_hash = value.metadata_hash
    elif kind == cr.CONSUMER_GROUP_MEMBER_METADATA:
        group.replay_member_metadata(key.member_id, value)
    elif kind == cr.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA:
        if value is not None:
            group.assignment_epoch = value.assignment_epoch
    elif kind == cr.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER:
        group.replay_target_assignment(
            key.member_id, None if value is None else cr.from_topic_partitions(value.topic_partitions)
        )
    elif kind == cr.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT:
        group.replay_current_assignment(key.member_id, value)
    elif kind == cr.CONSUMER_GROUP_REGULAR_EXPRESSION:
        group.replay_resolved_regex(key.regular_expression, value)
