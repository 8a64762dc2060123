"""Reading a v2 batch's records without building them, as a broker validates what a producer sent.

Kafka's LogValidator iterates every record of a batch it rebuilds or checks: the records must be as
many as the header declares, each whole and well formed (else InvalidRecordException: INVALID_RECORD),
and it looks at each one's key (a compacted topic needs one) and timestamp (the topic's bounds). A
rebuilt batch gets consecutive offsets and the largest of its records' timestamps. ``walk_records``
reads what those rules need in one pass over the decompressed records section, building no object
per record (decoding each into a ``Record`` cost ten times as much); ``renumber_offsets`` rewrites the
offset deltas of records that did not have consecutive ones.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from odradek.protocol.records.attributes import NO_TIMESTAMP
from odradek.protocol.records.compression import Progress
from odradek.protocol.records.errors import InvalidRecordsError, RecordsError
from odradek.protocol.records.varint import read_varint, read_varlong, write_varint

Buffer = bytes | bytearray | memoryview

#: Records walked between two calls of the walk's ``progress``.
_RECORDS_PER_STEP = 16 * 1024
_NO_DELTA = -(2**64)  # below any varlong


@dataclass(slots=True)
class RecordsSummary:
    """What the walk of a batch's records found."""

    count: int
    #: Whether the records' offset deltas are 0, 1, 2... as a batch's must be.
    offsets_in_order: bool = True
    #: The largest record timestamp (NO_TIMESTAMP if the batch has none).
    max_timestamp: int = NO_TIMESTAMP
    #: Indexes of the records without a key (listed only when asked for).
    keyless: list[int] = field(default_factory=list)
    #: (index, timestamp) of the records whose timestamp lies outside the bounds asked for.
    out_of_bounds: list[tuple[int, int]] = field(default_factory=list)


def walk_records(
    payload: Buffer,
    count: int,
    base_timestamp: int,
    *,
    list_keyless: bool = False,
    timestamp_bounds: tuple[int, int] | None = None,
    progress: Progress | None = None,
) -> RecordsSummary:
    """Walk the ``count`` records that must fill ``payload`` (a batch's records section, decompressed).

    Raises InvalidRecordsError when they are fewer or more than ``count``, or one is malformed (a
    length running past its record or the batch, a negative header count, a null header key).
    ``progress`` is called every few thousand records with the bytes walked since (it may raise).
    """
    if count < 0:
        raise InvalidRecordsError(f"Found invalid record count {count} in magic v2 batch")
    # Indexing bytes or a bytearray is quicker than a memoryview; the fields' varints of one or two
    # bytes are read inline, longer ones by _varint (a call for each cost as much as the rest).
    buf = _indexable(payload)
    end = len(buf)
    summary = RecordsSummary(count)
    low, high = timestamp_bounds if timestamp_bounds is not None else (0, 0)
    max_delta = _NO_DELTA
    pos = 0
    reported = 0
    try:
        for index in range(count):
            if pos >= end:
                raise InvalidRecordsError("Incorrect declared batch size, premature EOF reached")
            byte = buf[pos]
            if byte < 0x80:
                length, pos = (byte >> 1) ^ -(byte & 1), pos + 1
            elif buf[pos + 1] < 0x80:
                raw = (byte & 0x7F) | (buf[pos + 1] << 7)
                length, pos = (raw >> 1) ^ -(raw & 1), pos + 2
            else:
                length, pos = _varint(buf, pos)
            record_end = pos + length
            if length < 0 or record_end > end:
                raise InvalidRecordsError(
                    f"Invalid record size: expected {length} bytes in record payload, but the batch has "
                    f"only {end - pos} remaining bytes"
                )
            p = pos + 1  # attributes: unused so far
            byte = buf[p]
            if byte < 0x80:
                timestamp_delta, p = (byte >> 1) ^ -(byte & 1), p + 1
            elif buf[p + 1] < 0x80:
                raw = (byte & 0x7F) | (buf[p + 1] << 7)
                timestamp_delta, p = (raw >> 1) ^ -(raw & 1), p + 2
            else:
                timestamp_delta, p = _varlong(buf, p)
            byte = buf[p]
            if byte < 0x80:
                offset_delta, p = (byte >> 1) ^ -(byte & 1), p + 1
            elif buf[p + 1] < 0x80:
                raw = (byte & 0x7F) | (buf[p + 1] << 7)
                offset_delta, p = (raw >> 1) ^ -(raw & 1), p + 2
            else:
                offset_delta, p = _varint(buf, p)
            byte = buf[p]
            if byte < 0x80:
                key_length, p = (byte >> 1) ^ -(byte & 1), p + 1
            elif buf[p + 1] < 0x80:
                raw = (byte & 0x7F) | (buf[p + 1] << 7)
                key_length, p = (raw >> 1) ^ -(raw & 1), p + 2
            else:
                key_length, p = _varint(buf, p)
            if key_length >= 0:
                p += key_length
            elif key_length == -1:
                if list_keyless:
                    summary.keyless.append(index)
            else:
                raise InvalidRecordsError(f"Invalid key size {key_length}")
            byte = buf[p]
            if byte < 0x80:
                value_length, p = (byte >> 1) ^ -(byte & 1), p + 1
            elif buf[p + 1] < 0x80:
                raw = (byte & 0x7F) | (buf[p + 1] << 7)
                value_length, p = (raw >> 1) ^ -(raw & 1), p + 2
            else:
                value_length, p = _varint(buf, p)
            if value_length >= 0:
                p += value_length
            elif value_length != -1:
                raise InvalidRecordsError(f"Invalid value size {value_length}")
            byte = buf[p]
            p += 1
            if byte:  # headers (none: a zero byte)
                p = _skip_headers(buf, p - 1, record_end)
            if p != record_end:
                raise InvalidRecordsError(
                    f"Invalid record size: expected to read {length} bytes in record payload, but "
                    f"instead read {p - pos}"
                )
            if offset_delta != index:
                summary.offsets_in_order = False
            if timestamp_delta > max_delta:
                max_delta = timestamp_delta
            if timestamp_bounds is not None:
                timestamp = base_timestamp + timestamp_delta
                if timestamp != NO_TIMESTAMP and not low <= timestamp <= high:
                    summary.out_of_bounds.append((index, timestamp))
            pos = record_end
            if progress is not None and index % _RECORDS_PER_STEP == _RECORDS_PER_STEP - 1:
                progress(pos - reported)
                reported = pos
    except IndexError:  # a varint running off the end of the batch
        raise InvalidRecordsError("Found invalid record structure") from None
    if pos != end:
        raise InvalidRecordsError("Incorrect declared batch size, records still remaining in file")
    if count and base_timestamp != NO_TIMESTAMP:
        summary.max_timestamp = base_timestamp + max_delta
    return summary


def renumber_offsets(payload: Buffer, count: int, progress: Progress | None = None) -> bytearray:
    """The ``count`` records of ``payload`` (walked whole before) with offset deltas 0, 1, 2..., as
    Kafka's rebuild assigns them; every other byte of each record is kept."""
    buf = memoryview(payload)
    out = bytearray()
    pos = 0
    for index in range(count):
        length, start = _varint(buf, pos)
        record_end = start + length
        p = start + 1
        _, p = _varlong(buf, p)
        timestamp_end = p
        _, p = _varint(buf, p)
        body = bytearray(buf[start:timestamp_end])
        write_varint(body, index)
        body += buf[p:record_end]
        write_varint(out, len(body))
        out += body
        pos = record_end
        if progress is not None and index % _RECORDS_PER_STEP == _RECORDS_PER_STEP - 1:
            progress(pos)
    return out


def _skip_headers(buf: Buffer, p: int, record_end: int) -> int:
    """Past a record's headers, whose count is at ``p`` (stopping early past ``record_end``)."""
    headers, p = _varint(buf, p)
    if headers < 0:
        raise InvalidRecordsError(f"Found invalid number of record headers {headers}")
    for _ in range(headers):
        key_length, p = _varint(buf, p)
        if key_length < 0:
            raise InvalidRecordsError(f"Invalid negative header key size {key_length}")
        value_length, p = _varint(buf, p + key_length)
        if value_length < -1:
            raise InvalidRecordsError(f"Invalid header value size {value_length}")
        p += max(value_length, 0)
        if p > record_end:
            break
    return p


def _indexable(payload: Buffer) -> bytes | bytearray:
    """``payload`` as bytes or a bytearray, indexed twice as fast as a memoryview: the object under a
    view showing all of it, else a copy (of an uncompressed batch's records: at most a batch)."""
    if not isinstance(payload, memoryview):
        return payload
    base = payload.obj
    if isinstance(base, bytes | bytearray) and payload.contiguous and len(base) == payload.nbytes:
        return base
    return payload.tobytes()


def _varint(buf: Buffer, pos: int) -> tuple[int, int]:
    """A zigzag varint (int32) at ``pos``; IndexError past the end of ``buf``."""
    byte = buf[pos]
    if byte < 0x80:
        return (byte >> 1) ^ -(byte & 1), pos + 1
    second = buf[pos + 1]
    if second < 0x80:  # up to 8191: most lengths of keys, values and records
        raw = (byte & 0x7F) | (second << 7)
        return (raw >> 1) ^ -(raw & 1), pos + 2
    return _longer(read_varint, buf, pos)


def _varlong(buf: Buffer, pos: int) -> tuple[int, int]:
    byte = buf[pos]
    if byte < 0x80:
        return (byte >> 1) ^ -(byte & 1), pos + 1
    return _longer(read_varlong, buf, pos)


def _longer(read: Callable[[Buffer, int], tuple[int, int]], buf: Buffer, pos: int) -> tuple[int, int]:
    try:
        return read(buf, pos)
    except RecordsError as error:  # past the end of the batch, or longer than a varint may be
        raise InvalidRecordsError(f"Found invalid record structure: {error}") from None
