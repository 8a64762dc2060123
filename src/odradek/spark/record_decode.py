"""RecordBatch v2 bytes straight into Arrow columns, without a Python object per record.

A fetched region holds whole batches (the last may be cut short). Per batch, Python reads the 61-byte
header (odradek's codec), checks the CRC-32C and decompresses the payload. Where each record starts
comes from `record_chain` (the chain of record lengths, followed with numpy); every field after that is
decoded for all records at once with numpy: varints at many positions, keys and values gathered into
Arrow's contiguous data buffers by Arrow's take. Headers, when asked for and present, are the
exception: they are parsed per record.

Record layout (v2): length varint | attributes int8 | timestampDelta varlong | offsetDelta varint |
keyLength varint | key | valueLength varint | value | headerCount varint | headers...

Only the columns asked for are built (a user-specified schema is a projection): fields no column needs are
stepped over by their sizes, or not reached at all.
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
from odradek.spark.schema import (
    CREATE_TIME,
    HEADERS,
    LOG_APPEND_TIME,
    headers_array,
    record_batch,
    source_columns,
)
from odradek.spark.scratch import scratch

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
    include_headers: bool = False,
    columns: tuple[str, ...] | None = None,
    verify_crc: bool = True,
) -> DecodedRegion:
    """Decode the complete batches in `buf`, keeping records with from_offset <= offset < until_offset,
    into a batch of `columns` (default: the full source schema, with headers if `include_headers`)."""
    payloads: list[bytes | bytearray | memoryview] = []
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
        last_next_offset = header.next_offset
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
        columns if columns is not None else source_columns(include_headers),
        # Whole batches in range need no record's offset to be filtered by.
        None
        if base_offsets[0] >= from_offset and last_next_offset <= until_offset
        else (from_offset, until_offset),
    )
    return DecodedRegion(batch, next_offset, complete)


def _decode_records(
    payloads: list[bytes | bytearray | memoryview],
    counts: list[int],
    base_offsets: list[int],
    base_timestamps: list[int],
    append_times: list[int],
    topic: str,
    partition: int,
    columns: tuple[str, ...],
    offset_range: tuple[int, int] | None,
) -> pa.RecordBatch | None:
    """Fields are read up to the last one a column needs; columns not asked for are never built. Records
    outside `offset_range` (from, until) are dropped; None: every record is in range."""
    wanted = set(columns)
    want_timestamps = "timestamp" in wanted or "timestampType" in wanted
    want_values = "value" in wanted or HEADERS in wanted  # headers follow the value
    want_keys = "key" in wanted or want_values  # the value follows the key
    sizes = [len(payload) for payload in payloads]
    total = sum(sizes)
    arr: npt.NDArray[np.uint8] = scratch("payloads", total + PAD)  # end to end, then PAD zero bytes
    data = memoryview(arr)  # type: ignore[arg-type]  # (numpy arrays are buffers; the stubs miss it)
    pos = 0
    for payload, length in zip(payloads, sizes, strict=True):
        data[pos : pos + length] = payload
        pos += length
    arr[total:] = 0
    starts = record_starts(data, arr, sizes, counts, f"{topic}-{partition}")
    # The payloads lie end to end: each record ends where the next one starts.
    record_ends = np.append(starts[1:], total)
    count_array = np.array(counts, dtype=np.int64)

    p = starts.copy()
    p += _varint_size(arr, p)  # record length
    p += 1  # attributes
    if want_timestamps:
        timestamp_delta, size = _varint(arr, p, max_bytes=10)
    else:
        size = _varint_size(arr, p, max_bytes=10)
    p += size
    offsets = None
    lo, hi = 0, len(p)
    if "offset" in wanted or offset_range is not None:
        offset_delta, size = _varint(arr, p)
        p += size
        offsets = np.repeat(np.array(base_offsets, dtype=np.int64), count_array) + offset_delta
        if offset_range is not None:
            lo, hi = np.searchsorted(offsets, offset_range)
            if lo >= hi:
                return None
            if lo > 0 or hi < len(offsets):
                p, offsets, record_ends = p[lo:hi], offsets[lo:hi], record_ends[lo:hi]
                if want_timestamps:
                    timestamp_delta = timestamp_delta[lo:hi]
    else:
        p += _varint_size(arr, p)
    keys = values = headers = timestamps = timestamp_types = None
    if want_keys:
        _within(p, record_ends)  # (so that reading the key's length stays inside the buffer)
        keys = _step_over_bytes(arr, p, record_ends, build="key" in wanted)
    if want_values:
        values = _step_over_bytes(arr, p, record_ends, build="value" in wanted)
        if HEADERS in wanted:
            headers = _headers(data, arr, p, record_ends)
    if want_timestamps:
        batch_append_times = np.repeat(np.array(append_times, dtype=np.int64), count_array)[lo:hi]
        timestamps = (
            np.repeat(np.array(base_timestamps, dtype=np.int64), count_array)[lo:hi] + timestamp_delta
        )
        log_append = batch_append_times >= 0
        if log_append.any():
            timestamps = np.where(log_append, batch_append_times, timestamps)
        timestamp_types = np.where(log_append, LOG_APPEND_TIME, CREATE_TIME).astype(np.int32)
    return record_batch(
        columns,
        len(p),
        topic=topic,
        partition=partition,
        keys=keys,
        values=values,
        offsets=offsets,
        timestamps_ms=timestamps,
        timestamp_types=timestamp_types,
        headers=headers,
    )


def _step_over_bytes(
    arr: npt.NDArray[np.uint8], p: Int64s, record_ends: Int64s, *, build: bool
) -> pa.Array | None:
    """A length-prefixed field (key or value) at positions `p`, which are moved past it in place; its
    binary column when `build`, else None. The field must end within its record (a length that points
    past it is corrupt, even under a valid CRC: a producer wrote it so)."""
    length, size = _varint(arr, p)
    p += size
    ends = p + np.maximum(length, 0)
    _within(ends, record_ends)
    column = _binary(arr, p, length) if build else None
    p[:] = ends
    return column


def _within(positions: Int64s, record_ends: Int64s) -> None:
    """Every field read so far ends within its record; else the record is corrupt. This is also what
    keeps the columns' slices inside the buffer and in order, which Arrow's take relies on."""
    if (positions > record_ends).any():
        raise CorruptRecordError("a record's fields run past the end of the record")


def _varint(arr: npt.NDArray[np.uint8], positions: Int64s, max_bytes: int = 5) -> tuple[Int64s, Int64s]:
    """Zigzag varints at many positions: (values, sizes in bytes). Varints of one or two bytes (nearly all
    of them) are looked up by their first two bytes; longer ones are read byte by byte."""
    pair = arr[positions].astype(np.uint16)
    pair |= arr[positions + 1].astype(np.uint16) << 8
    value = _PAIR_VALUE[pair]
    size = _PAIR_SIZE[pair]
    longer = np.flatnonzero(size == 0)
    if longer.size:
        value[longer], size[longer] = _long_varint(arr, positions[longer], max_bytes)
    return value, size


def _varint_size(arr: npt.NDArray[np.uint8], positions: Int64s, max_bytes: int = 5) -> Int64s:
    """Only the sizes of varints at many positions: to step over fields no column needs."""
    pair = arr[positions].astype(np.uint16)
    pair |= arr[positions + 1].astype(np.uint16) << 8
    size = _PAIR_SIZE[pair]
    longer = np.flatnonzero(size == 0)
    if longer.size:
        size[longer] = _long_varint(arr, positions[longer], max_bytes)[1]
    return size


def _long_varint(arr: npt.NDArray[np.uint8], positions: Int64s, max_bytes: int) -> tuple[Int64s, Int64s]:
    # Unsigned until the zigzag step: a varlong's raw value may need all 64 bits.
    first = arr[positions].astype(np.uint64)
    value = first & np.uint64(0x7F)
    size = np.ones(len(positions), dtype=np.int64)
    going = np.flatnonzero(first >= 0x80)
    shift = 7
    while going.size:
        if shift >= 7 * max_bytes:
            raise CorruptRecordError(f"varint longer than {max_bytes} bytes")
        byte = arr[positions[going] + size[going]].astype(np.uint64)
        value[going] |= (byte & np.uint64(0x7F)) << np.uint64(shift)
        size[going] += 1
        going = going[byte >= 0x80]
        shift += 7
    return (value >> np.uint64(1)).astype(np.int64) ^ -(value & np.uint64(1)).astype(np.int64), size


def _pair_tables() -> tuple[Int64s, Int64s]:
    """For every two bytes (first | second << 8): the zigzag varint they begin, and its size; size 0
    where the varint is longer than two bytes."""
    pair = np.arange(1 << 16, dtype=np.int64)
    first, second = pair & 0xFF, pair >> 8
    raw = np.where(first < 0x80, first, (first & 0x7F) | (second << 7))
    size = np.where(first < 0x80, 1, np.where(second < 0x80, 2, 0))
    value = np.where(size > 0, (raw >> 1) ^ -(raw & 1), 0)
    return value, size


_PAIR_VALUE, _PAIR_SIZE = _pair_tables()


def _binary(arr: npt.NDArray[np.uint8], positions: Int64s, lengths: Int64s) -> pa.Array:
    """A binary column from (position, length) slices of `arr`, in ascending, non-overlapping order;
    length -1 is null.

    `arr` is read as one binary array whose elements alternate: the bytes before a slice, the slice, ...
    (offsets into `arr` itself, nothing copied), and Arrow's take gathers every second element into the
    column's own buffer: one copy of the bytes kept, and no temporary the size of `arr` (a byte mask over
    it, the way this was done before, cost three times as long, much of it the kernel handing out fresh
    pages for the mask)."""
    count = len(positions)
    valid = lengths >= 0
    bounds = np.empty(2 * count + 1, dtype=np.int32)
    bounds[0] = 0
    bounds[1::2] = positions
    bounds[2::2] = positions + np.where(valid, lengths, 0)
    alternating = pa.Array.from_buffers(
        pa.binary(), 2 * count, [None, pa.py_buffer(bounds), pa.py_buffer(arr)]
    )
    column = alternating.take(pa.array(np.arange(1, 2 * count, 2, dtype=np.int32)))
    if valid.all():
        return column
    null_count = int(count - np.count_nonzero(valid))
    validity = pa.array(valid).buffers()[1]
    return pa.Array.from_buffers(pa.binary(), count, [validity, *column.buffers()[1:]], null_count)


def _headers(
    data: memoryview, arr: npt.NDArray[np.uint8], positions: Int64s, record_ends: Int64s
) -> pa.Array:
    """The headers column: per record, since few records carry headers and each has its own shape.
    Keys are read as Java reads them (invalid UTF-8 replaced, not an error), as Spark's Kafka source
    shows them; a negative key length or a header past the record's end is corrupt."""
    header_counts, sizes = _varint(arr, positions)
    result: list[list[tuple[str, bytes | None]] | None] = [None] * len(positions)
    for index in np.flatnonzero(header_counts > 0).tolist():
        pos = int(positions[index] + sizes[index])
        end = int(record_ends[index])
        entries: list[tuple[str, bytes | None]] = []
        try:
            for _ in range(int(header_counts[index])):
                key_length, pos = read_varint(data, pos)
                if key_length < 0 or pos + key_length > end:
                    raise CorruptRecordError("a record header's key runs past the end of the record")
                key = str(data[pos : pos + key_length], "utf-8", "replace")
                pos += key_length
                value_length, pos = read_varint(data, pos)
                if pos + max(value_length, 0) > end:
                    raise CorruptRecordError("a record header's value runs past the end of the record")
                value = None if value_length < 0 else bytes(data[pos : pos + value_length])
                pos += max(value_length, 0)
                entries.append((key, value))
        except IndexError:
            raise CorruptRecordError("a record's headers run past the end of the fetched data") from None
        result[index] = entries
    return headers_array(result)
