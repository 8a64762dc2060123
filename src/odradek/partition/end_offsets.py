"""The end offsets of partitions wherever they are led (Kafka's PartitionMetadataClient): what the
group coordinator asks to tell a share group's lag (KIP-1226)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Protocol

from odradek.protocol.error_codes import ErrorCode
from odradek.storage.partition import TopicPartition


@dataclass(frozen=True, slots=True)
class EndOffset:
    """A partition's latest offset (its high watermark, as ListOffsets LATEST read uncommitted
    answers), or why its leader could not tell it."""

    offset: int
    error: ErrorCode = ErrorCode.NONE


class PartitionEndOffsets(Protocol):
    async def latest_offsets(self, partitions: Collection[TopicPartition]) -> dict[TopicPartition, EndOffset]:
        """Each partition's end offset, from its leader (every partition asked for is answered)."""
        ...
