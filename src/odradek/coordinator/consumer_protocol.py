"""KIP-848 consumer groups (placeholder until the protocol lands)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from odradek.coordinator.offsets import OffsetAndMetadata
from odradek.coordinator.records import CoordinatorRecord


class ConsumerGroupManager:
    def __init__(self, shard: Any, topics: Any) -> None:
        self.shard = shard
        self.topics = topics

    def replay(self, record: CoordinatorRecord) -> None:
        return None

    def on_loaded(self, group: Any) -> None:
        return None

    def on_removed(self, group: Any) -> None:
        return None

    def offset_expiration_base(self, group: Any) -> Callable[[OffsetAndMetadata], int] | None:
        return None

    def validate_offset_fetch(self, group: Any, member_id: str, member_epoch: int) -> None:
        return None

    def tombstones(self, group: Any) -> list[CoordinatorRecord]:
        return []

    def validate_offset_commit(self, group: Any, context: Any) -> None:
        return None
