"""The vectorised walk along the chain of record lengths against the per-record walk."""

from __future__ import annotations

from unittest.mock import patch

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from odradek.protocol.records.errors import CorruptRecordError
from odradek.protocol.records.record import encode_record
from odradek.spark import record_chain
from odradek.spark.record_chain import PAD, record_starts, walk_record_starts

# Bytes that make zeros and varint-looking runs inside keys and values: false candidate starts.
TRICKY = st.sampled_from([0x00, 0x00, 0x01, 0x02, 0x04, 0x7E, 0x80, 0x81, 0xFE, 0xFF, 0x22, 0x61])
FIELD = st.one_of(
    st.none(),
    st.binary(max_size=40),
    st.lists(TRICKY, max_size=300).map(bytes),
    st.integers(60, 9000).map(lambda n: bytes([0, 2, 0x80]) * (n // 3)),  # lengths over 64 and 8192
)
HEADERS = st.lists(st.tuples(st.text(max_size=4), st.one_of(st.none(), st.binary(max_size=8))), max_size=2)
RECORD = st.tuples(FIELD, FIELD, HEADERS, st.integers(0, 2**40))
BATCHES = st.lists(st.lists(RECORD, min_size=1, max_size=12), min_size=1, max_size=5)


def payload(records: list[tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]], int]]) -> bytes:
    out = bytearray()
    for index, (key, value, headers, timestamp_delta) in enumerate(records):
        encode_record(out, index, timestamp_delta, key, value, headers)
    return bytes(out)


def reference(payloads: list[bytes], counts: list[int]) -> list[int] | None:
    """The per-record walk, batch by batch; None where the records do not fill a batch."""
    data = b"".join([*payloads, bytes(PAD)])
    out: list[int] = []
    pos = 0
    for part, count in zip(payloads, counts, strict=True):
        try:
            end = walk_record_starts(data, pos, count, out)
        except CorruptRecordError:
            return None
        if end != pos + len(part):
            return None
        pos += len(part)
    return out


def vectorised(payloads: list[bytes], counts: list[int]) -> list[int] | None:
    """record_starts, once as it is and once with candidates however many zero bytes the payloads hold
    (so that zero-heavy examples exercise the candidates and their pruning too); both must agree."""
    results = [_vectorised(payloads, counts)]
    with patch.object(record_chain, "_ZEROS_PER_RECORD", 10**9):
        results.append(_vectorised(payloads, counts))
    assert results[0] == results[1]
    return results[0]


def _vectorised(payloads: list[bytes], counts: list[int]) -> list[int] | None:
    data = b"".join([*payloads, bytes(PAD)])
    arr = np.frombuffer(data, dtype=np.uint8)
    try:
        starts = record_starts(data, arr, [len(p) for p in payloads], counts, "t-0")
    except CorruptRecordError as error:
        assert "t-0" in str(error) or "record length" in str(error)
        return None
    assert starts.dtype == np.int64
    return starts.tolist()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(BATCHES)
def test_the_vectorised_walk_finds_what_the_per_record_walk_finds(batches: list[list[tuple]]) -> None:  # type: ignore[type-arg]
    payloads = [payload(records) for records in batches]
    counts = [len(records) for records in batches]
    expected = reference(payloads, counts)
    assert expected is not None
    assert vectorised(payloads, counts) == expected


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(BATCHES, st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), min_size=1, max_size=3))
def test_corrupt_bytes_give_the_same_starts_or_the_same_error(
    batches: list[list[tuple]],  # type: ignore[type-arg]
    flips: list[tuple[int, int]],
) -> None:
    payloads = [payload(records) for records in batches]
    counts = [len(records) for records in batches]
    joined = bytearray(b"".join(payloads))
    for where, byte in flips:
        joined[where % len(joined)] = byte
    cut: list[bytes] = []
    pos = 0
    for part in payloads:
        cut.append(bytes(joined[pos : pos + len(part)]))
        pos += len(part)
    assert vectorised(cut, counts) == reference(cut, counts)


@settings(max_examples=100, deadline=None)
@given(BATCHES, st.integers(-2, 2))
def test_a_wrong_record_count_is_an_error(batches: list[list[tuple]], change: int) -> None:  # type: ignore[type-arg]
    payloads = [payload(records) for records in batches]
    counts = [len(records) for records in batches]
    counts[-1] = max(0, counts[-1] + change)
    expected = reference(payloads, counts)
    assert vectorised(payloads, counts) == expected
    if change != 0:
        assert expected is None


def test_nonzero_attributes_fall_back_to_the_per_record_walk() -> None:
    """Attributes are unused in v2 and the walk does not read them; the vectorised guess needs them 0."""
    records = [(b"k", bytes(range(60)), [], n) for n in range(50)]
    data = bytearray(payload(records))
    starts = reference([bytes(data)], [50])
    assert starts is not None
    for start in starts[::7]:
        data[start + (1 if data[start] < 0x80 else 2)] = 0x40
    assert vectorised([bytes(data)], [50]) == starts


def test_records_over_a_mebibyte_fall_back_to_the_per_record_walk() -> None:
    records = [(None, b"x" * (1 << 20) + bytes(n), [], n) for n in range(3)]
    payloads = [payload(records), payload(records[:1])]
    expected = reference(payloads, [3, 1])
    assert expected is not None
    assert vectorised(payloads, [3, 1]) == expected


def test_records_that_do_not_fill_their_batch_are_an_error() -> None:
    data = payload([(b"k", b"v" * 100, [], 0)]) + b"\x00"
    assert reference([data], [1]) is None
    buf = data + bytes(PAD)
    with pytest.raises(CorruptRecordError, match="topic-3"):
        record_starts(buf, np.frombuffer(buf, dtype=np.uint8), [len(data)], [1], "topic-3")


def test_a_negative_record_length_is_an_error() -> None:
    data = b"\x03" + payload([(b"k", b"v", [], 0)])[1:]  # zigzag 3 is -2
    assert reference([data], [1]) is None
    assert vectorised([data], [1]) is None


def test_zero_heavy_payloads_are_walked_record_by_record() -> None:
    """More zero bytes than a few per record: the walk, which is cheaper there, gives the starts."""
    records = [(bytes(20), bytes(100), [], n) for n in range(40)]
    data = payload(records)
    expected = reference([data], [40])
    with patch.object(record_chain, "_candidates", side_effect=AssertionError("no candidates wanted")):
        assert _vectorised([data], [40]) == expected
