"""Replay of the share group records (KIP-932) into a shard's groups, as consumer_replay.py for the
consumer group records: the shard's `replay` hands them here by record type."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from odradek.coordinator import share_records as sr
from odradek.coordinator.group_types import Group
from odradek.coordinator.records import CoordinatorRecord
from odradek.coordinator.share_group import ShareGroup


def replay_share_record(groups: MutableMapping[str, Group], record: CoordinatorRecord) -> None:
    """A share group record on replay: it makes the group if needed, its epoch's tombstone ends it."""
    if record.record_type == sr.SHARE_GROUP_PARTITION_METADATA:
        return  # Kafka 4.0's subscription metadata: the metadata hash replaced it
    key: Any = record.key
    group_id: str = key.group_id
    existing = groups.get(group_id)
    if existing is not None and not isinstance(existing, ShareGroup):
        return  # a group of another type holds the id: never written so by a coordinator
    group = existing
    if group is None:
        if record.value is None:
            return
        group = ShareGroup(group_id)
        groups[group_id] = group
    if record.record_type == sr.SHARE_GROUP_METADATA and record.value is None:
        if not group.members:
            del groups[group_id]
        return
    group.replay(record)
