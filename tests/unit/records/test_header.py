"""The RecordBatch v2 header view, in-place patches, and the framing helpers, checked against kafka-python."""

from __future__ import annotations

import contextlib
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from odradek.protocol.codec_error import CodecError, TruncatedError
from odradek.protocol.records import (
    HEADER_SIZE,
    Compression,
    CorruptRecordError,
    RecordBatchHeader,
    RecordsError,
    TimestampType,
    UnsupportedCompressionError,
    iter_batch_headers,
    patch_base_offset,
    patch_log_append_time,
    patch_partition_leader_epoch,
    split_complete_batches,
)

from .kafka_oracle import (
    DefaultRecordBatch,
    legacy_set,
    read_records,
    v2_batch,
)

RECORDS = [(1_000, b"k1", b"v1", [("h", b"x")]), (1_005, None, b"v2", []), (990, b"k3", None, [("n", None)])]


def sample_batch(**kwargs: object) -> bytearray:
    return v2_batch(RECORDS, **kwargs)  # type: ignore[arg-type]


def test_read_matches_kafka_python_fields() -> None:
    buf = sample_batch(producer_id=42, producer_epoch=3, base_sequence=7, is_transactional=True)
    header = RecordBatchHeader.read(buf)
    oracle = DefaultRecordBatch(bytes(buf))
    assert header.pos == 0
    assert header.magic == 2
    assert header.base_offset == oracle.base_offset == 0
    assert header.size == len(buf) == oracle.size_in_bytes
    assert header.batch_length == len(buf) - 12
    assert header.crc == oracle.crc
    assert header.last_offset_delta == 2
    assert header.last_offset == 2
    assert header.next_offset == 3
    assert header.base_timestamp == 1_000
    assert header.max_timestamp == 1_005
    assert header.producer_id == 42
    assert header.producer_epoch == 3
    assert header.base_sequence == 7
    assert header.records_count == 3
    assert header.compression is Compression.NONE
    assert header.timestamp_type is TimestampType.CREATE_TIME
    assert header.is_transactional
    assert not header.is_control
    assert not header.has_delete_horizon
    assert header.crc_is_valid(buf)


def test_read_at_position_and_from_memoryview() -> None:
    buf = bytes(7) + bytes(sample_batch())
    header = RecordBatchHeader.read(memoryview(buf), 7)
    assert header.pos == 7
    assert header.end == len(buf)
    assert header.crc_is_valid(memoryview(buf))
    assert header == RecordBatchHeader.read(buf, 7)


def test_gzip_batch_reports_compression() -> None:
    buf = v2_batch([(5, None, b"a" * 500, [])] * 4, compression=1)
    header = RecordBatchHeader.read(buf)
    assert header.compression is Compression.GZIP
    assert header.crc_is_valid(buf)


@pytest.mark.parametrize("length", [0, 1, 17, 60])
def test_short_buffer_raises_truncated(length: int) -> None:
    buf = sample_batch()[:length]
    with pytest.raises(TruncatedError):
        RecordBatchHeader.read(buf)


def test_negative_position_is_truncated_not_index_error() -> None:
    with pytest.raises(TruncatedError):
        RecordBatchHeader.read(sample_batch(), -5)


@pytest.mark.parametrize("magic", [0, 1, 3, 255])
def test_wrong_magic_raises_records_error(magic: int) -> None:
    buf = sample_batch()
    buf[16] = magic
    with pytest.raises(RecordsError):
        RecordBatchHeader.read(buf)


@pytest.mark.parametrize("batch_length", [-1, 0, 48, -(2**31)])
def test_impossible_batch_length(batch_length: int) -> None:
    buf = sample_batch()
    struct.pack_into(">i", buf, 8, batch_length)
    with pytest.raises(CorruptRecordError):
        RecordBatchHeader.read(buf)


def test_huge_batch_length_reads_but_is_not_complete() -> None:
    buf = sample_batch()
    struct.pack_into(">i", buf, 8, 2**31 - 1)
    header = RecordBatchHeader.read(buf)
    assert header.size == 2**31 - 1 + 12
    with pytest.raises(TruncatedError):
        header.crc_is_valid(buf)
    assert list(iter_batch_headers(buf)) == []
    assert split_complete_batches(buf) == (0, True)


def test_unknown_codec_id_raises_on_access() -> None:
    buf = sample_batch()
    buf[22] |= 0x07
    with pytest.raises(UnsupportedCompressionError):
        _ = RecordBatchHeader.read(buf).compression


def test_corrupted_byte_fails_crc() -> None:
    buf = sample_batch()
    for position in (21, 30, 61, len(buf) - 1):
        corrupted = bytearray(buf)
        corrupted[position] ^= 0x01
        assert not RecordBatchHeader.read(corrupted).crc_is_valid(corrupted), position


@given(st.integers(-(2**63), 2**63 - 1), st.integers(-(2**31), 2**31 - 1))
def test_patch_base_offset_and_epoch_keep_crc_valid(base_offset: int, epoch: int) -> None:
    buf = sample_batch()
    patch_base_offset(buf, 0, base_offset)
    patch_partition_leader_epoch(buf, 0, epoch)
    header = RecordBatchHeader.read(buf)
    assert header.base_offset == base_offset
    assert header.partition_leader_epoch == epoch
    assert header.crc_is_valid(buf)


def test_patched_batch_is_read_by_kafka_python() -> None:
    buf = sample_batch()
    patch_base_offset(buf, 0, 1_000)
    patch_partition_leader_epoch(memoryview(buf), 0, 9)
    oracle = DefaultRecordBatch(bytes(buf))
    assert oracle.validate_crc()
    assert oracle.leader_epoch == 9
    assert [r.offset for r in oracle] == [1_000, 1_001, 1_002]


def test_patch_log_append_time() -> None:
    buf = sample_batch(producer_id=1, producer_epoch=0, base_sequence=0)
    patch_log_append_time(buf, 0, 123_456_789)
    header = RecordBatchHeader.read(buf)
    assert header.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert header.max_timestamp == 123_456_789
    assert header.crc_is_valid(buf)
    oracle = DefaultRecordBatch(bytes(buf))
    assert oracle.validate_crc()
    assert [(r.timestamp, r.timestamp_type) for r in oracle] == [(123_456_789, 1)] * 3


def test_patch_in_second_batch_of_buffer() -> None:
    first, second = sample_batch(), sample_batch()
    buf = first + second
    patch_base_offset(buf, len(first), 3)
    patch_log_append_time(buf, len(first), 5)
    headers = list(iter_batch_headers(buf))
    assert [h.base_offset for h in headers] == [0, 3]
    assert all(h.crc_is_valid(buf) for h in headers)
    assert [r[0] for r in read_records(buf)] == [0, 1, 2, 3, 4, 5]


def test_patches_on_short_buffer_raise_truncated() -> None:
    buf = sample_batch()
    with pytest.raises(TruncatedError):
        patch_base_offset(bytearray(4), 0, 1)
    with pytest.raises(TruncatedError):
        patch_partition_leader_epoch(bytearray(15), 0, 1)
    with pytest.raises(TruncatedError):
        patch_log_append_time(buf[:-1], 0, 1)


def test_iter_batch_headers_stops_before_truncated_tail() -> None:
    batches = [sample_batch() for _ in range(3)]
    buf = bytearray()
    for offset, batch in enumerate(batches):
        patch_base_offset(batch, 0, offset * 3)
        buf += batch
    full = list(iter_batch_headers(buf))
    assert [h.base_offset for h in full] == [0, 3, 6]
    assert [h.pos for h in full] == [0, len(batches[0]), len(batches[0]) * 2]
    for cut in range(1, len(batches[2])):
        short = buf[: len(buf) - cut]
        assert [h.base_offset for h in iter_batch_headers(short)] == [0, 3]
        assert split_complete_batches(short) == (len(batches[0]) * 2, True)
    assert split_complete_batches(buf) == (len(buf), False)
    assert [h.base_offset for h in iter_batch_headers(buf, len(batches[0]), len(buf) - 1)] == [3]


def test_iter_batch_headers_raises_on_corrupt_middle() -> None:
    buf = sample_batch() + sample_batch()
    buf[len(buf) // 2 + 16] = 7
    with pytest.raises(CorruptRecordError):
        list(iter_batch_headers(buf))


def test_split_complete_batches_legacy_message_sets() -> None:
    for magic in (0, 1):
        buf = legacy_set(magic, [(0, 10, b"k", b"v"), (1, 11, None, b"w"), (2, 12, b"k", None)])
        assert split_complete_batches(buf) == (len(buf), False)
        assert split_complete_batches(buf[:-1])[1]
        assert split_complete_batches(buf[:5]) == (0, True)
        assert split_complete_batches(b"") == (0, False)


def test_split_complete_batches_mixed_formats() -> None:
    legacy = legacy_set(1, [(0, 10, b"k", b"v")])
    v2 = sample_batch()
    buf = legacy + v2 + v2[:30]
    assert split_complete_batches(buf) == (len(legacy) + len(v2), True)


@pytest.mark.parametrize(("magic", "length"), [(3, 100), (0, 13), (1, 21), (2, 48)])
def test_split_complete_batches_rejects_bad_entries(magic: int, length: int) -> None:
    buf = bytearray(sample_batch())
    buf[16] = magic
    struct.pack_into(">i", buf, 8, length)
    with pytest.raises(CorruptRecordError):
        split_complete_batches(buf)


@given(st.binary(max_size=200), st.integers(0, 64))
def test_hostile_bytes_raise_only_codec_errors(data: bytes, pos: int) -> None:
    for call in (
        lambda: RecordBatchHeader.read(data, pos),
        lambda: list(iter_batch_headers(data, pos)),
        lambda: split_complete_batches(data, pos),
    ):
        with contextlib.suppress(CodecError):
            call()


def test_header_size_constant() -> None:
    assert HEADER_SIZE == 61
