"""RecordBatch v2 bytes straight into Arrow columns, without a Python object per record.

A fetched region holds whole batches (the last may be cut short). Per batch, Python reads the 61-byte
header (odradek's codec), checks the CRC-32C and decompresses the payload. Where each record starts
comes from `record_chain` (the chain of record lengths, followed with numpy); every field after that is
decoded for all records at once with numpy: varints at many positions, keys and values gathered into
Arrow's contiguous data buffers by one boolean mask. Headers, when asked for and present, are the
exception: they are parsed per record.

Record layout (v2): length varint | attributes int8 | timestampDelta varlong | offsetDelta varint |
keyLength varint | key | valueLength varint | value | headerCount varint | headers...
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from odradek.protocol.records import (
    Compression,
    RecordBatchHeader,
    RecordsTruncatedError,
    TimestampType,
    decompress,
)
from odradek.protocol.records.errors import CorruptRecordError
from odradek.protocol.records.header import HEADER_SIZE
from odradek.spark.record_chain import PAD, read_varint, record_starts
from odradek.spark.schema import CREATE_TIME, LOG_APPEND_TIME, headers_array, record_batch

Int64s = npt.NDArray[np.int64]


@dataclass
class DecodedRegion:
    """What a fetched region decoded to: an Arrow batch (None when no record was in range) and the offset
    to fetch next (after the last complete batch)."""

    batch: pa.RecordBatch | None
    next_offset: int
    complete_batches: int


def decode_region(
    buf: bytes | memoryview,
    *,
    topic: str,
    partition: int,
    from_offset: int,
    until_offset: int,
    include_headers: bool,
    verify_crc: bool = True,
) -> DecodedRegion:
    """Decode the complete batches in `buf`, keeping records with from_offset <= offset < until_offset."""
    payloads: list[bytes | memoryview] = []
    counts: list[int] = []
    base_offsets: list[int] = []
    base_timestamps: list[int] = []
    append_times: list[int] = []  # -1 unless the batch's timestamps are LogAppendTime
    next_offset = from_offset
    complete = 0
    view = memoryview(buf)
    pos = 0
    while len(buf) - pos >= HEADER_SIZE:
        try:
            header = RecordBatchHeader.read(buf, pos)
        except RecordsTruncatedError:
            break
        end = header.end
        if end > len(buf):
            break
        if verify_crc and not header.crc_is_valid(buf):
            raise CorruptRecordError(
                f"record batch at offset {header.base_offset} of {topic}-{partition} fails its CRC"
            )
        complete += 1
        pos = end
        next_offset = max(next_offset, header.next_offset)
        if header.is_control or header.records_count == 0 or header.next_offset <= from_offset:
            continue
        if header.base_offset >= until_offset:
            break
        raw = view[header.pos + HEADER_SIZE : end]
        compression = header.compression
        payloads.append(raw if compression is Compression.NONE else decompress(compression, raw))
        counts.append(header.records_count)
        base_offsets.append(header.base_offset)
        base_timestamps.append(header.base_timestamp)
        log_append = header.timestamp_type is TimestampType.LOG_APPEND_TIME
        append_times.append(header.max_timestamp if log_append else -1)
    if not payloads:
        return DecodedRegion(None, next_offset, complete)
    batch = _decode_records(
        payloads,
        counts,
        base_offsets,
        base_timestamps,
        append_times,
        topic,
        partition,
        include_headers,
        from_offset,
        until_offset,
    )
    return DecodedRegion(batch, next_offset, complete)


def _decode_records(
    payloads: list[bytes | memoryview],
    counts: list[int],
    base_offsets: list[int],
    base_timestamps: list[int],
    append_times: list[int],
    topic: str,
    partition: int,
    include_headers: bool,
    from_offset: int,
    until_offset: int,
) -> pa.RecordBatch | None:
    data = b"".join([*payloads, bytes(PAD)])
    arr = np.frombuffer(data, dtype=np.uint8)
    sizes = [len(payload) for payload in payloads]
    starts = record_starts(data, arr, sizes, counts, f"{topic}-{partition}")
    count_array = np.array(counts, dtype=np.int64)

    p = starts.copy()
    p += _varint(arr, p)[1]  # record length
    p += 1  # attributes
    timestamp_delta, size = _varint(arr, p, max_bytes=10)
    p += size
    offset_delta, size = _varint(arr, p)
    p += size
    offsets = np.repeat(np.array(base_offsets, dtype=np.int64), count_array) + offset_delta
    lo, hi = np.searchsorted(offsets, [from_offset, until_offset])
    if lo >= hi:
        return None
    if lo > 0 or hi < len(offsets):
        p, offsets, timestamp_delta = p[lo:hi], offsets[lo:hi], timestamp_delta[lo:hi]
    key_length, size = _varint(arr, p)
    p += size
    key_positions = p.copy()
    p += np.maximum(key_length, 0)
    value_length, size = _varint(arr, p)
    p += size
    value_positions = p.copy()
    p += np.maximum(value_length, 0)

    batch_append_times = np.repeat(np.array(append_times, dtype=np.int64), count_array)[lo:hi]
    timestamps = np.repeat(np.array(base_timestamps, dtype=np.int64), count_array)[lo:hi] + timestamp_delta
    log_append = batch_append_times >= 0
    if log_append.any():
        timestamps = np.where(log_append, batch_append_times, timestamps)
    timestamp_types = np.where(log_append, LOG_APPEND_TIME, CREATE_TIME).astype(np.int32)
    headers = _headers(data, arr, p) if include_headers else None
    return record_batch(
        include_headers,
        keys=_binary(arr, key_positions, key_length),
        values=_binary(arr, value_positions, value_length),
        topic=topic,
        partition=partition,
        offsets=offsets,
        timestamps_ms=timestamps,
        timestamp_types=timestamp_types,
        headers=headers,
    )


def _varint(arr: npt.NDArray[np.uint8], positions: Int64s, max_bytes: int = 5) -> tuple[Int64s, Int64s]:
    """Zigzag varints at many positions: (values, sizes in bytes)."""
    first = arr[positions].astype(np.int64)
    value = first & 0x7F
    size = np.ones(len(positions), dtype=np.int64)
    going = np.flatnonzero(first >= 0x80)
    shift = 7
    while going.size:
        if shift >= 7 * max_bytes:
            raise CorruptRecordError(f"varint longer than {max_bytes} bytes")
        byte = arr[positions[going] + size[going]].astype(np.int64)
        value[going] |= (byte & 0x7F) << shift
        size[going] += 1
        going = going[byte >= 0x80]
        shift += 7
    return (value >> 1) ^ -(value & 1), size


def _binary(arr: npt.NDArray[np.uint8], positions: Int64s, lengths: Int64s) -> pa.Array:
    """A binary column from (position, length) slices of `arr`; length -1 is null."""
    count = len(positions)
    valid = lengths >= 0
    sizes = np.where(valid, lengths, 0)
    value_offsets = np.zeros(count + 1, dtype=np.int32)
    np.cumsum(sizes, out=value_offsets[1:])
    total = int(value_offsets[-1])
    if total == 0:
        data = np.zeros(0, dtype=np.uint8)
    else:
        # The buffer alternates: bytes to skip, bytes of a value, ... One mask over it, by segments.
        ends = positions + sizes
        segments = np.empty(2 * count, dtype=np.int64)
        segments[0] = positions[0]
        segments[2::2] = positions[1:] - ends[:-1]
        segments[1::2] = sizes
        keep = np.zeros(2 * count, dtype=np.bool_)
        keep[1::2] = True
        mask = np.repeat(keep, segments)
        data = arr[: len(mask)][mask]
    validity = None if valid.all() else pa.array(valid).buffers()[1]
    null_count = int(count - np.count_nonzero(valid))
    return pa.Array.from_buffers(
        pa.binary(), count, [validity, pa.py_buffer(value_offsets), pa.py_buffer(data)], null_count
    )


def _headers(data: bytes, arr: npt.NDArray[np.uint8], positions: Int64s) -> pa.Array:
    """The headers column: per record, since few records carry headers and each has its own shape."""
    header_counts, sizes = _varint(arr, positions)
    result: list[list[tuple[str, bytes | None]] | None] = [None] * len(positions)
    for index in np.flatnonzero(header_counts > 0).tolist():
        pos = int(positions[index] + sizes[index])
        entries: list[tuple[str, bytes | None]] = []
        for _ in range(int(header_counts[index])):
            key_length, pos = read_varint(data, pos)
            key = data[pos : pos + key_length].decode("utf-8")
            pos += key_length
            value_length, pos = read_varint(data, pos)
            value = None if value_length < 0 else data[pos : pos + value_length]
            pos += max(value_length, 0)
            entries.append((key, value))
        result[index] = entries
    return headers_array(result)
