"""RecordBatch v2 (magic 2): full decode into records, and a builder that writes batches.

The broker's hot path does not come here (see header.py); this is for produce from old clients, fetch
by old clients, internal topics (group offsets, transaction state) and tests.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from odradek.protocol.records.attributes import (
    CONTROL_FLAG_MASK,
    DELETE_HORIZON_FLAG_MASK,
    MAGIC_V2,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_FLAG_MASK,
    Compression,
    TimestampType,
)
from odradek.protocol.records.compression import DEFAULT_MAX_DECOMPRESSED_SIZE, compress, decompress
from odradek.protocol.records.errors import CorruptRecordError, RecordsError, RecordsTruncatedError
from odradek.protocol.records.header import (
    HEADER_SIZE,
    HEADER_STRUCT,
    MIN_BATCH_LENGTH,
    Buffer,
    RecordBatchHeader,
    write_crc,
)
from odradek.protocol.records.record import Record, RecordHeader, decode_records, encode_record

_INT32_MAX = 2**31 - 1


@dataclass(slots=True)
class RecordBatch:
    """A decoded v2 batch: its header fields and its records (absolute offsets and timestamps)."""

    base_offset: int = 0
    records: list[Record] = field(default_factory=list)
    compression: Compression = Compression.NONE
    timestamp_type: TimestampType = TimestampType.CREATE_TIME
    is_transactional: bool = False
    is_control: bool = False
    has_delete_horizon: bool = False
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    base_sequence: int = NO_SEQUENCE
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH
    base_timestamp: int = NO_TIMESTAMP
    max_timestamp: int = NO_TIMESTAMP
    last_offset_delta: int = 0

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @classmethod
    def decode(
        cls,
        buf: Buffer,
        pos: int = 0,
        *,
        verify_crc: bool = True,
        max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    ) -> RecordBatch:
        """Decode the whole batch at ``buf[pos:]``.

        Raises RecordsTruncatedError if the batch is cut short, CorruptRecordError on a CRC mismatch or
        malformed records, CompressionError when the payload does not decompress within the limit.
        """
        header = RecordBatchHeader.read(buf, pos)
        end = header.end
        if len(buf) < end:
            raise RecordsTruncatedError(
                f"record batch at position {pos} ends at {end}, buffer has {len(buf)}"
            )
        if verify_crc and not header.crc_is_valid(buf):
            raise CorruptRecordError(f"record batch at position {pos} fails its CRC-32C check")
        compression = header.compression
        raw = memoryview(buf)[pos + HEADER_SIZE : end]
        # bytes, not the codec's bytearray: the records' keys and values are slices of it
        if compression is Compression.NONE:
            payload = bytes(raw)
        else:
            payload = bytes(decompress(compression, raw, MAGIC_V2, max_decompressed_size))
        timestamp_type = header.timestamp_type
        log_append_time = header.max_timestamp if timestamp_type is TimestampType.LOG_APPEND_TIME else None
        records = decode_records(
            payload, header.records_count, header.base_offset, header.base_timestamp, log_append_time
        )
        return cls(
            base_offset=header.base_offset,
            records=records,
            compression=compression,
            timestamp_type=timestamp_type,
            is_transactional=header.is_transactional,
            is_control=header.is_control,
            has_delete_horizon=header.has_delete_horizon,
            producer_id=header.producer_id,
            producer_epoch=header.producer_epoch,
            base_sequence=header.base_sequence,
            partition_leader_epoch=header.partition_leader_epoch,
            base_timestamp=header.base_timestamp,
            max_timestamp=header.max_timestamp,
            last_offset_delta=header.last_offset_delta,
        )

    def encode(self) -> bytes:
        """This batch's bytes, header fields written as they are (records' deltas from base fields)."""
        body = bytearray()
        for record in self.records:
            encode_record(
                body,
                _offset_delta(record.offset, self.base_offset),
                record.timestamp - self.base_timestamp,
                record.key,
                record.value,
                record.headers,
            )
        attributes = _attributes(
            self.compression,
            self.timestamp_type,
            self.is_transactional,
            self.is_control,
            self.has_delete_horizon,
        )
        return _assemble(
            body,
            attributes,
            self.compression,
            None,
            base_offset=self.base_offset,
            partition_leader_epoch=self.partition_leader_epoch,
            last_offset_delta=self.last_offset_delta,
            base_timestamp=self.base_timestamp,
            max_timestamp=self.max_timestamp,
            producer_id=self.producer_id,
            producer_epoch=self.producer_epoch,
            base_sequence=self.base_sequence,
            records_count=len(self.records),
        )


def iter_record_batches(
    buf: Buffer,
    pos: int = 0,
    end: int | None = None,
    *,
    verify_crc: bool = True,
    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
) -> Iterator[RecordBatch]:
    """Decode the consecutive complete batches in ``buf[pos:end]``, stopping before a partial tail."""
    view = memoryview(buf)[: len(buf) if end is None else end]
    while len(view) - pos >= HEADER_SIZE:
        header = RecordBatchHeader.read(view, pos)
        if header.end > len(view):
            return
        yield RecordBatch.decode(
            view, pos, verify_crc=verify_crc, max_decompressed_size=max_decompressed_size
        )
        pos = header.end


class RecordBatchBuilder:
    """Writes one v2 batch: append records in offset order, then ``build()``.

    The base timestamp is the first record's (as Kafka's producer writes it); max timestamp is the
    largest record timestamp, or ``log_append_time`` for LogAppendTime batches.
    """

    def __init__(
        self,
        base_offset: int = 0,
        *,
        compression: Compression = Compression.NONE,
        timestamp_type: TimestampType = TimestampType.CREATE_TIME,
        log_append_time: int | None = None,
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = NO_PRODUCER_EPOCH,
        base_sequence: int = NO_SEQUENCE,
        is_transactional: bool = False,
        is_control: bool = False,
        partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
        compression_level: int | None = None,
    ) -> None:
        if timestamp_type is TimestampType.LOG_APPEND_TIME and log_append_time is None:
            raise RecordsError("a LogAppendTime batch needs log_append_time")
        self.base_offset = base_offset
        self.compression = Compression(compression)
        self.compression_level = compression_level
        self.timestamp_type = TimestampType(timestamp_type)
        self.log_append_time = log_append_time
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.is_transactional = is_transactional
        self.is_control = is_control
        self.partition_leader_epoch = partition_leader_epoch
        self._body = bytearray()
        self._count = 0
        self._base_timestamp = NO_TIMESTAMP
        self._max_timestamp = NO_TIMESTAMP
        self._last_offset: int | None = None

    def __len__(self) -> int:
        return self._count

    @property
    def estimated_size(self) -> int:
        """Uncompressed size of the batch so far (an upper bound for most compressed batches)."""
        return HEADER_SIZE + len(self._body)

    def append(
        self,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[RecordHeader] = (),
        offset: int | None = None,
    ) -> int:
        """Add a record; ``offset`` defaults to the one after the last. Returns the record's offset."""
        if offset is None:
            offset = self.base_offset if self._last_offset is None else self._last_offset + 1
        elif self._last_offset is not None and offset <= self._last_offset:
            raise RecordsError(f"offset {offset} does not follow the batch's last offset {self._last_offset}")
        if self._count == 0:
            self._base_timestamp = timestamp
            self._max_timestamp = timestamp
        elif timestamp > self._max_timestamp:
            self._max_timestamp = timestamp
        encode_record(
            self._body,
            _offset_delta(offset, self.base_offset),
            timestamp - self._base_timestamp,
            key,
            value,
            headers,
        )
        self._count += 1
        self._last_offset = offset
        return offset

    def append_record(self, record: Record) -> int:
        return self.append(record.timestamp, record.key, record.value, record.headers, record.offset)

    def build(self) -> bytes:
        """The finished batch, CRC included. An empty builder writes an empty batch (as compaction does)."""
        last_offset_delta = 0 if self._last_offset is None else self._last_offset - self.base_offset
        if self.log_append_time is not None and self.timestamp_type is TimestampType.LOG_APPEND_TIME:
            max_timestamp = self.log_append_time
        else:
            max_timestamp = self._max_timestamp
        attributes = _attributes(
            self.compression, self.timestamp_type, self.is_transactional, self.is_control, False
        )
        return _assemble(
            self._body,
            attributes,
            self.compression,
            self.compression_level,
            base_offset=self.base_offset,
            partition_leader_epoch=self.partition_leader_epoch,
            last_offset_delta=last_offset_delta,
            base_timestamp=self._base_timestamp,
            max_timestamp=max_timestamp,
            producer_id=self.producer_id,
            producer_epoch=self.producer_epoch,
            base_sequence=self.base_sequence,
            records_count=self._count,
        )


def build_record_batch(records: Iterable[Record], base_offset: int | None = None, **options: object) -> bytes:
    """One batch of ``records`` (their own offsets kept); ``options`` are RecordBatchBuilder's."""
    records = list(records)
    if base_offset is None:
        base_offset = records[0].offset if records else 0
    builder = RecordBatchBuilder(base_offset, **options)  # type: ignore[arg-type]
    for record in records:
        builder.append_record(record)
    return builder.build()


def _attributes(
    compression: Compression,
    timestamp_type: TimestampType,
    is_transactional: bool,
    is_control: bool,
    has_delete_horizon: bool,
) -> int:
    attributes = int(compression)
    if timestamp_type is TimestampType.LOG_APPEND_TIME:
        attributes |= TIMESTAMP_TYPE_MASK
    if is_transactional:
        attributes |= TRANSACTIONAL_FLAG_MASK
    if is_control:
        attributes |= CONTROL_FLAG_MASK
    if has_delete_horizon:
        attributes |= DELETE_HORIZON_FLAG_MASK
    return attributes


def _offset_delta(offset: int, base_offset: int) -> int:
    delta = offset - base_offset
    if not 0 <= delta <= _INT32_MAX:
        raise RecordsError(f"record offset {offset} is not within int32 after base offset {base_offset}")
    return delta


def _assemble(
    body: Buffer,
    attributes: int,
    compression: Compression,
    level: int | None,
    *,
    base_offset: int,
    partition_leader_epoch: int,
    last_offset_delta: int,
    base_timestamp: int,
    max_timestamp: int,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    records_count: int,
) -> bytes:
    payload = compress(compression, body, MAGIC_V2, level) if compression is not Compression.NONE else body
    batch_length = MIN_BATCH_LENGTH + len(payload)
    if batch_length > _INT32_MAX:
        raise RecordsError(f"record batch of {batch_length} bytes does not fit a batch length")
    out = bytearray(HEADER_SIZE)
    out += payload
    try:
        HEADER_STRUCT.pack_into(
            out,
            0,
            base_offset,
            batch_length,
            partition_leader_epoch,
            MAGIC_V2,
            0,  # CRC, written once the rest is in place
            attributes,
            last_offset_delta,
            base_timestamp,
            max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            records_count,
        )
    except struct.error as exc:  # a field out of its wire type's range
        raise RecordsError(f"record batch header field out of range: {exc}") from None
    write_crc(out, 0, len(out))
    return bytes(out)
