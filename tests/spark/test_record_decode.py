"""The vectorised RecordBatch decoder against odradek's record-by-record codec."""

from __future__ import annotations

import random

import pytest

from odradek.protocol.records import Compression, RecordBatch, RecordBatchBuilder, TimestampType
from odradek.protocol.records.errors import CorruptRecordError
from odradek.spark.record_decode import decode_region


def random_batches(seed: int) -> bytes:
    rng = random.Random(seed)
    out = bytearray()
    offset = 0
    for _ in range(rng.randint(1, 8)):
        log_append = rng.random() < 0.2
        builder = RecordBatchBuilder(
            offset,
            compression=rng.choice([Compression.NONE, Compression.NONE, Compression.GZIP, Compression.ZSTD]),
            timestamp_type=TimestampType.LOG_APPEND_TIME if log_append else TimestampType.CREATE_TIME,
            log_append_time=1_700_000_099_000 if log_append else None,
        )
        for _ in range(rng.randint(1, 300)):
            key = None if rng.random() < 0.3 else rng.randbytes(rng.choice([0, 3, 70, 200]))
            value = None if rng.random() < 0.1 else rng.randbytes(rng.choice([0, 10, 63, 64, 150, 20000]))
            headers = [
                (f"h{i}", None if i == 1 else rng.randbytes(i * 40)) for i in range(rng.choice([0, 0, 1, 3]))
            ]
            offset += rng.choice([1, 1, 1, 5])  # gaps, as compaction leaves
            builder.append(
                1_700_000_000_000 + rng.randint(-(10**6), 10**9), key, value, headers, offset=offset
            )
        out += builder.build()
        offset += 1
    return bytes(out)


def reference(buf: bytes) -> list[tuple[object, ...]]:
    rows = []
    pos = 0
    while pos < len(buf):
        batch = RecordBatch.decode(buf, pos)
        log_append = batch.timestamp_type is TimestampType.LOG_APPEND_TIME
        for r in batch.records:
            timestamp = batch.max_timestamp if log_append else r.timestamp
            rows.append(
                (r.offset, r.key, r.value, timestamp, 1 if log_append else 0, list(r.headers) or None)
            )
        pos += _length(buf, pos)
    return rows


def _length(buf: bytes, pos: int) -> int:
    return 12 + int.from_bytes(buf[pos + 8 : pos + 12], "big")


def decoded(buf: bytes, lo: int = 0, hi: int = 2**62) -> list[tuple[object, ...]]:
    region = decode_region(buf, topic="t", partition=3, from_offset=lo, until_offset=hi, include_headers=True)
    if region.batch is None:
        return []
    table = region.batch.to_pydict()
    assert set(table["topic"]) == {"t"} and set(table["partition"]) == {3}
    return [
        (
            o,
            k,
            v,
            int(t.timestamp() * 1000),
            tt,
            None if h is None else [(e["key"], e["value"]) for e in h],
        )
        for o, k, v, t, tt, h in zip(
            table["offset"],
            table["key"],
            table["value"],
            table["timestamp"],
            table["timestampType"],
            table["headers"],
            strict=True,
        )
    ]


@pytest.mark.parametrize("seed", range(25))
def test_decodes_what_the_codec_decodes(seed: int) -> None:
    buf = random_batches(seed)
    expected = reference(buf)
    assert decoded(buf) == expected
    middle = expected[len(expected) // 3][0], expected[2 * len(expected) // 3][0]
    assert decoded(buf, *middle) == [r for r in expected if middle[0] <= r[0] < middle[1]]  # type: ignore[operator]


def test_a_cut_batch_at_the_end_is_left_for_the_next_fetch() -> None:
    buf = random_batches(7)
    first_len = _length(buf, 0)
    region = decode_region(
        buf[: first_len + 30],
        topic="t",
        partition=0,
        from_offset=0,
        until_offset=2**62,
        include_headers=False,
    )
    assert region.complete_batches == 1
    assert region.batch is not None and region.next_offset == region.batch.column("offset")[-1].as_py() + 1


def test_a_corrupt_batch_is_an_error() -> None:
    buf = bytearray(random_batches(3))
    buf[70] ^= 0xFF
    with pytest.raises(CorruptRecordError):
        decode_region(
            bytes(buf), topic="t", partition=0, from_offset=0, until_offset=2**62, include_headers=False
        )
