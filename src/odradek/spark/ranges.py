"""Offset ranges: what one Spark task reads, and how a query's ranges are split across tasks."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass

from pyspark.sql.datasource import InputPartition

from odradek.spark.offsets import TopicPartition


@dataclass(frozen=True)
class OffsetRange(InputPartition):
    """Records [from_offset, until_offset) of one topic-partition; one Spark task reads it."""

    topic: str
    partition: int
    from_offset: int
    until_offset: int

    @property
    def size(self) -> int:
        return max(0, self.until_offset - self.from_offset)


def plan_ranges(
    starts: Mapping[TopicPartition, int],
    ends: Mapping[TopicPartition, int],
    *,
    min_partitions: int | None = None,
    max_records_per_partition: int | None = None,
) -> list[OffsetRange]:
    """One range per topic-partition with data, split so that there are at least `min_partitions` ranges
    (large ones split first, in proportion to their size) and none holds more than
    `max_records_per_partition` offsets."""
    ranges = [
        OffsetRange(topic, partition, starts[(topic, partition)], until)
        for (topic, partition), until in sorted(ends.items())
        if (topic, partition) in starts and until > starts[(topic, partition)]
    ]
    if max_records_per_partition is not None:
        ranges = [piece for r in ranges for piece in _split(r, math.ceil(r.size / max_records_per_partition))]
    if min_partitions is not None and len(ranges) < min_partitions:
        total = sum(r.size for r in ranges)
        if total > 0:
            ranges = [
                piece for r in ranges for piece in _split(r, max(1, round(r.size / total * min_partitions)))
            ]
    return ranges


def rate_limit(
    starts: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int], limit: int
) -> dict[TopicPartition, int]:
    """End offsets that admit at most `limit` offsets in total, shared in proportion to what each
    partition has available (largest remainders get the leftover units, so the sum is exactly the limit
    when more than `limit` is available)."""
    available = {tp: max(0, latest[tp] - starts.get(tp, latest[tp])) for tp in latest}
    total = sum(available.values())
    if total <= limit:
        return dict(latest)
    shares = {tp: limit * size / total for tp, size in available.items()}
    taken = {tp: math.floor(share) for tp, share in shares.items()}
    leftover = limit - sum(taken.values())
    by_remainder = sorted(shares, key=lambda tp: (taken[tp] - shares[tp], tp))
    for tp in by_remainder[:leftover]:
        taken[tp] += 1
    return {tp: starts.get(tp, latest[tp]) + min(taken[tp], available[tp]) for tp in latest}


def _split(r: OffsetRange, parts: int) -> list[OffsetRange]:
    if parts <= 1 or r.size <= 1:
        return [r]
    parts = min(parts, r.size)
    bounds = [r.from_offset + (r.size * i) // parts for i in range(parts + 1)]
    return [OffsetRange(r.topic, r.partition, lo, hi) for lo, hi in itertools.pairwise(bounds)]
