"""The vectorised RecordBatch decoder against odradek's record-by-record codec."""

from __future__ import annotations

import random
import struct
from typing import cast

import numpy as np
import pyarrow as pa
import pytest
from crc32c import crc32c
from hypothesis import example, given, settings
from hypothesis import strategies as st

from odradek.protocol.records import (
    Compression,
    CompressionError,
    RecordBatch,
    RecordBatchBuilder,
    RecordBatchHeader,
    TimestampType,
)
from odradek.protocol.records.errors import CorruptRecordError
from odradek.protocol.records.header import ATTRIBUTES_OFFSET, CRC_OFFSET, HEADER_SIZE
from odradek.protocol.records.varint import read_varlong, write_varlong
from odradek.spark import record_decode
from odradek.spark.record_chain import PAD
from odradek.spark.record_decode import _binary, _varint, decode_region
from odradek.spark.schema import arrow_schema


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


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.one_of(st.none(), st.binary(max_size=30)), min_size=1, max_size=60),
    st.lists(st.integers(0, 200), min_size=60, max_size=60),
)
def test_binary_columns_hold_the_slices_they_point_at(values: list[bytes | None], gaps: list[int]) -> None:
    """Both ways of gathering a column (an index per byte when the values are sparse, a bitmap filter
    when they are dense) give the values at their positions; length -1 is null."""
    buf = bytearray()
    positions, lengths = [], []
    for value, gap in zip(values, gaps, strict=False):
        buf += b"\xee" * gap
        positions.append(len(buf))
        lengths.append(-1 if value is None else len(value))
        buf += value or b""
    arr = np.frombuffer(bytes(buf) + bytes(PAD), dtype=np.uint8)
    column = _binary(arr, np.array(positions, dtype=np.int64), np.array(lengths, dtype=np.int64))
    assert column.to_pylist() == values


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=50), st.integers(1, 4))
@example([2**62, -(2**63), 2**63 - 1], 1)  # raw values of 64 bits: once read as negative
def test_varints_are_read_like_the_codec_reads_them(numbers: list[int], gap: int) -> None:
    buf = bytearray()
    positions = []
    for number in numbers:
        positions.append(len(buf))
        write_varlong(buf, number)
        buf += b"\x80" * gap  # continuation bytes after each varint must not be read
    arr = np.frombuffer(bytes(buf) + bytes(PAD), dtype=np.uint8)
    values, sizes = _varint(arr, np.array(positions, dtype=np.int64), max_bytes=10)
    assert values.tolist() == numbers
    assert (np.array(positions) + sizes).tolist() == [read_varlong(buf, p)[1] for p in positions]


def test_a_varint_longer_than_allowed_is_an_error() -> None:
    arr = np.frombuffer(b"\x81\x82\x83\x84\x85\x06" + bytes(PAD), dtype=np.uint8)
    with pytest.raises(CorruptRecordError, match="longer than 5"):
        _varint(arr, np.array([0], dtype=np.int64))
    assert _varint(arr, np.array([0], dtype=np.int64), max_bytes=6)[1].tolist() == [6]


@pytest.mark.parametrize(
    "columns",
    [
        ("value", "offset"),
        ("offset", "value"),
        ("key",),
        ("timestamp", "timestampType"),
        ("topic", "partition"),
        ("headers", "offset"),
        ("timestampType", "headers", "key", "partition", "value", "timestamp", "topic", "offset"),
    ],
)
def test_a_projection_decodes_just_its_columns_in_its_order(columns: tuple[str, ...]) -> None:
    for seed in range(6):
        buf = random_batches(seed)
        offsets = [cast(int, row[0]) for row in reference(buf)]
        for lo, hi in ((0, 2**62), (offsets[len(offsets) // 3], offsets[2 * len(offsets) // 3] + 1)):
            kwargs = {"topic": "t", "partition": 3, "from_offset": lo, "until_offset": hi}
            full = decode_region(buf, include_headers=True, **kwargs).batch  # type: ignore[arg-type]
            projected = decode_region(buf, columns=columns, **kwargs).batch  # type: ignore[arg-type]
            assert full is not None and projected is not None
            assert projected.schema.equals(arrow_schema(columns))
            assert projected.equals(full.select(list(columns)))


def test_columns_not_asked_for_are_never_built(monkeypatch: pytest.MonkeyPatch) -> None:
    buf = random_batches(4)
    built: list[int] = []

    def counting_binary(arr: object, positions: np.ndarray, lengths: np.ndarray) -> object:
        built.append(len(positions))
        return _binary(arr, positions, lengths)  # type: ignore[arg-type]

    def no_headers(*args: object) -> object:
        raise AssertionError("headers were parsed although not asked for")

    monkeypatch.setattr(record_decode, "_binary", counting_binary)
    monkeypatch.setattr(record_decode, "_headers", no_headers)
    expected = reference(buf)

    def region(columns: tuple[str, ...]) -> pa.RecordBatch:
        batch = decode_region(buf, topic="t", partition=0, from_offset=0, until_offset=2**62, columns=columns)
        assert batch.batch is not None
        return batch.batch

    assert region(("offset",)).column("offset").to_pylist() == [r[0] for r in expected]
    assert region(("partition", "topic")).num_rows == len(expected)
    assert built == []  # neither keys nor values gathered
    assert region(("value",)).column("value").to_pylist() == [r[2] for r in expected]
    assert built == [len(expected)]  # the values only, not the keys


@pytest.mark.parametrize("seed", range(2))
def test_records_mangled_under_a_valid_crc_decode_or_fail_cleanly(seed: int) -> None:
    """A producer can write any bytes under a correct CRC. Lengths that point past their record must be
    refused as corrupt: the columns are gathered by offsets into the buffer, so before this check such a
    batch read out of bounds (a segfault of the Python worker)."""
    rng = random.Random(seed)
    outcomes = {"decoded": 0, "corrupt": 0}
    for _ in range(150):
        buf = bytearray(random_batches(rng.randrange(1000)))
        header = RecordBatchHeader.read(buf, 0)
        for _ in range(rng.choice([1, 5, 20, 60])):
            buf[rng.randrange(HEADER_SIZE, header.end)] = rng.choice(
                [0, 0x7F, 0x80, 0xFF, rng.randrange(256)]
            )
        struct.pack_into(">I", buf, CRC_OFFSET, crc32c(bytes(buf[ATTRIBUTES_OFFSET : header.end])))
        columns = rng.choice([None, ("value",), ("key", "value"), ("offset",), ("headers", "value")])
        try:
            decode_region(
                bytes(buf[: header.end]),
                topic="t",
                partition=0,
                from_offset=0,
                until_offset=2**62,
                columns=columns,
                include_headers=columns is None,
            )
            outcomes["decoded"] += 1
        except (CorruptRecordError, CompressionError):
            outcomes["corrupt"] += 1
    assert outcomes["corrupt"] > 0 and outcomes["decoded"] > 0


def test_a_header_key_that_is_not_utf8_reads_as_java_reads_it() -> None:
    """Spark's Kafka source shows header keys as Java strings: bytes that are not UTF-8 become U+FFFD."""
    builder = RecordBatchBuilder(0)
    builder.append(1_700_000_000_000, b"k", b"v", [("h\u00e9llo", b"x")])
    buf = bytearray(builder.build())
    at = buf.index("h\u00e9llo".encode())
    buf[at + 1] = 0xFF  # the first byte of "é", now a byte no UTF-8 string has
    struct.pack_into(">I", buf, CRC_OFFSET, crc32c(bytes(buf[ATTRIBUTES_OFFSET:])))
    region = decode_region(
        bytes(buf), topic="t", partition=0, from_offset=0, until_offset=2**62, include_headers=True
    )
    assert region.batch is not None
    assert region.batch.column("headers").to_pylist() == [[{"key": "h\ufffd\ufffdllo", "value": b"x"}]]
