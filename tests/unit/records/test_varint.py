"""Zigzag varints against kafka-python's encoder, and their failure modes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.record.util import decode_varint, encode_varint

from odradek.protocol.codec_error import CodecError
from odradek.protocol.records.errors import CorruptRecordError, RecordsError, RecordsTruncatedError
from odradek.protocol.records.varint import (
    read_varint,
    read_varlong,
    size_of_varint,
    write_varint,
    write_varlong,
)

INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)


@given(INT32)
def test_varint_round_trip_and_matches_kafka_python(value: int) -> None:
    out = bytearray()
    write_varint(out, value)
    oracle = bytearray()
    encode_varint(value, oracle.append)
    assert out == oracle
    assert read_varint(bytes(out), 0) == (value, len(out))
    assert size_of_varint(value) == len(out)


@given(INT64, st.binary(max_size=3))
def test_varlong_round_trip(value: int, prefix: bytes) -> None:
    out = bytearray(prefix)
    write_varlong(out, value)
    decoded, end = read_varlong(bytes(out), len(prefix))
    assert (decoded, end) == (value, len(out))
    assert decode_varint(bytes(out), len(prefix)) == (value, len(out))
    assert size_of_varint(value) == len(out) - len(prefix)


@pytest.mark.parametrize(
    ("value", "encoded"), [(0, b"\x00"), (-1, b"\x01"), (1, b"\x02"), (-64, b"\x7f"), (64, b"\x80\x01")]
)
def test_known_encodings(value: int, encoded: bytes) -> None:
    out = bytearray()
    write_varint(out, value)
    assert bytes(out) == encoded


def test_out_of_range_values_are_records_errors() -> None:
    with pytest.raises(RecordsError):
        write_varint(bytearray(), 2**31)
    with pytest.raises(RecordsError):
        write_varlong(bytearray(), -(2**63) - 1)


def test_too_long_and_truncated() -> None:
    with pytest.raises(CorruptRecordError):
        read_varint(b"\xff" * 6, 0)
    with pytest.raises(CorruptRecordError):
        read_varlong(b"\xff" * 11, 0)
    with pytest.raises(RecordsTruncatedError):
        read_varint(b"\xff\xff", 0)
    with pytest.raises(RecordsTruncatedError):
        read_varint(b"", 0)


@given(st.binary(max_size=12), st.integers(0, 12))
def test_hostile_bytes(data: bytes, pos: int) -> None:
    for reader in (read_varint, read_varlong):
        try:
            value, end = reader(data, pos)
        except CodecError:
            continue
        assert pos < end <= len(data)
        assert -(2**63) <= value < 2**63
