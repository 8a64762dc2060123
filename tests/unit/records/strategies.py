"""Hypothesis strategies for records in every format."""

from __future__ import annotations

from hypothesis import strategies as st

from odradek.protocol.records import Record

INT64 = st.integers(-(2**63), 2**63 - 1)
# Timestamps within a range where base + delta stays inside int64 for any pair of records.
TIMESTAMPS = st.integers(-1, 2**62)
NULLABLE_BYTES = st.none() | st.binary(max_size=64)
HEADERS = st.lists(st.tuples(st.text(max_size=12), st.none() | st.binary(max_size=16)), max_size=4).map(tuple)


@st.composite
def v2_records(draw: st.DrawFn, max_size: int = 12, min_size: int = 0) -> list[Record]:
    """Records with increasing (possibly gapped, as after compaction) offsets."""
    base = draw(st.integers(0, 2**62))
    gaps = draw(st.lists(st.integers(1, 1000), min_size=min_size, max_size=max_size))
    offsets = []
    offset = base
    for index, gap in enumerate(gaps):
        offset = base if index == 0 else offset + gap
        offsets.append(offset)
    return [
        Record(offset, draw(TIMESTAMPS), draw(NULLABLE_BYTES), draw(NULLABLE_BYTES), draw(HEADERS))
        for offset in offsets
    ]


@st.composite
def legacy_records(draw: st.DrawFn, magic: int, max_size: int = 12, min_size: int = 0) -> list[Record]:
    """Records a message set of ``magic`` can carry: no headers; no timestamps (-1) in magic 0."""
    records = draw(v2_records(max_size=max_size, min_size=min_size))
    return [Record(r.offset, r.timestamp if magic == 1 else -1, r.key, r.value) for r in records]
