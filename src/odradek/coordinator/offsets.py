"""Committed offsets: the replay of OffsetCommit records, by group, topic and partition.

The store changes only in `replay`: a commit is a record appended to `__consumer_offsets` first, and
the offset becomes visible once the record is in the log. A tombstone (null value) deletes it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from odradek.coordinator.records import OffsetCommitKey, OffsetCommitValue


@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    offset: int
    leader_epoch: int
    """-1 when the committer did not know it."""
    metadata: str
    commit_timestamp_ms: int
    expire_timestamp_ms: int | None = None
    """Only for commits that carried their own retention (OffsetCommit v2-4)."""

    @classmethod
    def from_record(cls, value: OffsetCommitValue) -> OffsetAndMetadata:
        return cls(
            offset=value.offset,
            leader_epoch=value.leader_epoch,
            metadata=value.metadata,
            commit_timestamp_ms=value.commit_timestamp,
            expire_timestamp_ms=None if value.expire_timestamp == -1 else value.expire_timestamp,
        )


GroupOffsets = dict[str, dict[int, OffsetAndMetadata]]


class OffsetStore:
    def __init__(self) -> None:
        self._by_group: dict[str, GroupOffsets] = {}

    def replay(self, key: OffsetCommitKey, value: OffsetCommitValue | None) -> None:
        if value is not None:
            topics = self._by_group.setdefault(key.group, {})
            topics.setdefault(key.topic, {})[key.partition] = OffsetAndMetadata.from_record(value)
            return
        existing = self._by_group.get(key.group)
        if existing is None:
            return
        topics = existing
        partitions = topics.get(key.topic)
        if partitions is None:
            return
        partitions.pop(key.partition, None)
        if not partitions:
            del topics[key.topic]
        if not topics:
            del self._by_group[key.group]

    def get(self, group_id: str, topic: str, partition: int) -> OffsetAndMetadata | None:
        return self._by_group.get(group_id, {}).get(topic, {}).get(partition)

    def group(self, group_id: str) -> GroupOffsets:
        """The group's offsets (an empty mapping when it has none); do not change it."""
        return self._by_group.get(group_id, {})

    def has_offsets(self, group_id: str) -> bool:
        return group_id in self._by_group

    def group_ids(self) -> Iterator[str]:
        return iter(list(self._by_group))

    def partitions(self, group_id: str) -> list[tuple[str, int]]:
        return [(t, p) for t, parts in self.group(group_id).items() for p in parts]

    def expired(
        self,
        group_id: str,
        base_timestamp: Callable[[OffsetAndMetadata], int],
        is_subscribed: Callable[[str], bool],
        now_ms: int,
        retention_ms: int,
    ) -> list[tuple[str, int]]:
        """The partitions whose offsets have expired (Kafka's OffsetExpirationConditionImpl):
        an explicit expiry time passed, or `retention_ms` since `base_timestamp` for topics the group
        does not subscribe to."""
        expired = []
        for topic, partitions in self.group(group_id).items():
            if is_subscribed(topic):
                continue
            for partition, offset in partitions.items():
                if offset.expire_timestamp_ms is not None:
                    if now_ms >= offset.expire_timestamp_ms:
                        expired.append((topic, partition))
                elif now_ms - base_timestamp(offset) >= retention_ms:
                    expired.append((topic, partition))
        return expired
