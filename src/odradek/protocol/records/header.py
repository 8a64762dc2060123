"""A view of one RecordBatch v2 header, and in-place patches of the fields the broker assigns.

The broker's hot path never decodes records: it reads the 61-byte header, checks the CRC-32C, patches
base offset, partition leader epoch and (for LogAppendTime topics) the timestamp, and moves the bytes.

Layout (big-endian):  baseOffset int64 | batchLength int32 | partitionLeaderEpoch int32 | magic int8 |
crc uint32 | attributes int16 | lastOffsetDelta int32 | baseTimestamp int64 | maxTimestamp int64 |
producerId int64 | producerEpoch int16 | baseSequence int32 | recordsCount int32 | records...
The CRC covers attributes through the end of the batch, so offset, length and epoch can be patched freely.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

import crc32c

from odradek.protocol.records.attributes import (
    CONTROL_FLAG_MASK,
    DELETE_HORIZON_FLAG_MASK,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MAGIC_V2,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_FLAG_MASK,
    Compression,
    TimestampType,
    compression_of,
    timestamp_type_of,
)
from odradek.protocol.records.errors import CorruptRecordError, RecordsTruncatedError

Buffer = bytes | bytearray | memoryview
WritableBuffer = bytearray | memoryview

HEADER_STRUCT = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER_STRUCT.size  # 61
# batch_length counts everything after itself: the header minus offset and length fields, then records.
MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD

BASE_OFFSET_OFFSET = 0
BATCH_LENGTH_OFFSET = 8
PARTITION_LEADER_EPOCH_OFFSET = 12
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
MAX_TIMESTAMP_OFFSET = 35
RECORDS_OFFSET = HEADER_SIZE

_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT16 = struct.Struct(">h")


class RecordBatchHeader:
    """The header fields of one v2 batch starting at ``buf[pos:]``; records are not touched."""

    __slots__ = (
        "attributes",
        "base_offset",
        "base_sequence",
        "base_timestamp",
        "batch_length",
        "crc",
        "last_offset_delta",
        "magic",
        "max_timestamp",
        "partition_leader_epoch",
        "pos",
        "producer_epoch",
        "producer_id",
        "records_count",
    )

    def __init__(
        self,
        pos: int,
        base_offset: int,
        batch_length: int,
        partition_leader_epoch: int,
        magic: int,
        crc: int,
        attributes: int,
        last_offset_delta: int,
        base_timestamp: int,
        max_timestamp: int,
        producer_id: int,
        producer_epoch: int,
        base_sequence: int,
        records_count: int,
    ) -> None:
        self.pos = pos
        self.base_offset = base_offset
        self.batch_length = batch_length
        self.partition_leader_epoch = partition_leader_epoch
        self.magic = magic
        self.crc = crc
        self.attributes = attributes
        self.last_offset_delta = last_offset_delta
        self.base_timestamp = base_timestamp
        self.max_timestamp = max_timestamp
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.records_count = records_count

    @classmethod
    def read(cls, buf: Buffer, pos: int = 0) -> RecordBatchHeader:
        """Read the header at ``buf[pos:]``; the records after it need not be in ``buf``.

        Raises RecordsTruncatedError (a TruncatedError) if fewer than 61 bytes remain, and
        CorruptRecordError (a RecordsError) if the magic is not 2 or batch_length is below the minimum.
        """
        if pos < 0 or len(buf) - pos < HEADER_SIZE:
            raise RecordsTruncatedError(
                f"record batch header needs {HEADER_SIZE} bytes at position {pos}, buffer has {len(buf)}"
            )
        fields = HEADER_STRUCT.unpack_from(buf, pos)
        magic = fields[3]
        if magic != MAGIC_V2:
            raise CorruptRecordError(f"record batch at position {pos} has magic {magic}, expected 2")
        batch_length = fields[1]
        if batch_length < MIN_BATCH_LENGTH:
            raise CorruptRecordError(
                f"record batch at position {pos} has impossible batch_length {batch_length}"
            )
        return cls(pos, *fields)

    @property
    def size(self) -> int:
        """Bytes the whole batch occupies, header included."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def end(self) -> int:
        """Position just past this batch in the buffer it was read from."""
        return self.pos + self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> Compression:
        """The batch's codec; raises UnsupportedCompressionError for codec ids 5-7."""
        return compression_of(self.attributes)

    @property
    def timestamp_type(self) -> TimestampType:
        return timestamp_type_of(self.attributes)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_FLAG_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG_MASK)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & DELETE_HORIZON_FLAG_MASK)

    def crc_is_valid(self, buf: Buffer) -> bool:
        """Whether the stored CRC-32C matches attributes..end of the batch in ``buf``.

        Raises RecordsTruncatedError if ``buf`` does not hold the whole batch: a short buffer is not
        evidence of corruption, and callers (recovery, fetch) treat the two differently.
        """
        end = self.end
        if len(buf) < end:
            raise RecordsTruncatedError(
                f"record batch at position {self.pos} ends at {end}, buffer has {len(buf)}"
            )
        return _batch_crc(buf, self.pos, end) == self.crc

    def _fields(self) -> tuple[int, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: Any) -> bool:
        if not isinstance(other, RecordBatchHeader):
            return NotImplemented
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)}" for name in self.__slots__)
        return f"RecordBatchHeader({inner})"


def iter_batch_headers(buf: Buffer, pos: int = 0, end: int | None = None) -> Iterator[RecordBatchHeader]:
    """Headers of the consecutive complete v2 batches in ``buf[pos:end]``.

    Stops silently before a trailing batch that is cut short (as Fetch responses and torn log tails
    end); a wrong magic or impossible length in a batch that is present raises CorruptRecordError.
    """
    limit = len(buf) if end is None else min(end, len(buf))
    while limit - pos >= HEADER_SIZE:
        header = RecordBatchHeader.read(buf, pos)
        if header.end > limit:
            return
        yield header
        pos = header.end
    # Fewer than a header's bytes left: an incomplete tail (or nothing), never an error.
    if limit - pos >= MAGIC_OFFSET + 1 and buf[pos + MAGIC_OFFSET] != MAGIC_V2:
        raise CorruptRecordError(
            f"record batch at position {pos} has magic {buf[pos + MAGIC_OFFSET]}, expected 2"
        )


def patch_base_offset(buf: WritableBuffer, pos: int, base_offset: int) -> None:
    """Set the batch's base offset in place; the CRC does not cover it, so nothing else changes."""
    _require(buf, pos, BASE_OFFSET_OFFSET + 8)
    _INT64.pack_into(buf, pos + BASE_OFFSET_OFFSET, base_offset)


def patch_partition_leader_epoch(buf: WritableBuffer, pos: int, epoch: int) -> None:
    """Set the partition leader epoch in place; the CRC does not cover it."""
    _require(buf, pos, PARTITION_LEADER_EPOCH_OFFSET + 4)
    _INT32.pack_into(buf, pos + PARTITION_LEADER_EPOCH_OFFSET, epoch)


def patch_log_append_time(buf: WritableBuffer, pos: int, timestamp: int) -> None:
    """Mark the batch LogAppendTime with ``timestamp`` as max_timestamp, then recompute the CRC.

    Readers report every record's timestamp as max_timestamp for such batches, so records stay
    untouched (as Kafka's broker does for message.timestamp.type=LogAppendTime).
    """
    header = RecordBatchHeader.read(buf, pos)
    end = header.end
    if len(buf) < end:
        raise RecordsTruncatedError(f"record batch at position {pos} ends at {end}, buffer has {len(buf)}")
    _INT16.pack_into(buf, pos + ATTRIBUTES_OFFSET, header.attributes | TIMESTAMP_TYPE_MASK)
    _INT64.pack_into(buf, pos + MAX_TIMESTAMP_OFFSET, timestamp)
    write_crc(buf, pos, end)


def write_crc(buf: WritableBuffer, pos: int, end: int) -> None:
    """Compute and store the CRC-32C of the batch occupying ``buf[pos:end]``."""
    _UINT32.pack_into(buf, pos + CRC_OFFSET, _batch_crc(buf, pos, end))


def _batch_crc(buf: Buffer, pos: int, end: int) -> int:
    # A memoryview slice hands crc32c the bytes without copying the batch.
    return int(crc32c.crc32c(memoryview(buf)[pos + ATTRIBUTES_OFFSET : end]))


def _require(buf: Buffer, pos: int, length: int) -> None:
    if pos < 0 or len(buf) - pos < length:
        raise RecordsTruncatedError(f"need {length} bytes at position {pos}, buffer has {len(buf)}")
