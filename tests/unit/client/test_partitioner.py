"""The two-phase-commit producer places keyed records where Kafka's default partitioner does."""

from __future__ import annotations

import pytest

from odradek.client.partitioner import murmur2, partition_for_key


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        (b"21", -973932308),
        (b"foobar", -790332482),
        (b"a-little-bit-long-string", -985981536),
        (b"a-little-bit-longer-string", -1486304829),
        (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
        (b"abc", 479470107),
    ],
)
def test_murmur2_matches_kafkas_published_values(key: bytes, expected: int) -> None:
    assert murmur2(key) == expected


def test_a_key_lands_in_a_partition_within_range() -> None:
    assert {partition_for_key(f"k{i}".encode(), 3) for i in range(100)} == {0, 1, 2}
