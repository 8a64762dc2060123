"""Attribute bits, enums and constants shared by MessageSet v0/v1 and RecordBatch v2."""

from __future__ import annotations

from enum import IntEnum

from odradek.protocol.records.errors import UnsupportedCompressionError

NO_TIMESTAMP = -1
"""Timestamp of records that carry none (magic 0), as Kafka's RecordBatch.NO_TIMESTAMP."""

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1

MAGIC_V0 = 0
MAGIC_V1 = 1
MAGIC_V2 = 2

# Every format starts with offset int64 + length int32 and keeps its magic byte at offset 16,
# which lets framing code walk mixed buffers without knowing which format each entry is.
LOG_OVERHEAD = 12
MAGIC_OFFSET = 16

COMPRESSION_CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_FLAG_MASK = 0x10
CONTROL_FLAG_MASK = 0x20
DELETE_HORIZON_FLAG_MASK = 0x40


class Compression(IntEnum):
    """The compression codec in the low three attribute bits."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


class TimestampType(IntEnum):
    """Attribute bit 3: who set the timestamp (the producer, or the broker on append)."""

    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


def compression_of(attributes: int) -> Compression:
    """The codec named by an attributes field; unknown codec ids are an error, not a crash."""
    codec = attributes & COMPRESSION_CODEC_MASK
    try:
        return Compression(codec)
    except ValueError:
        raise UnsupportedCompressionError(f"unknown compression codec id {codec}") from None


def timestamp_type_of(attributes: int) -> TimestampType:
    return TimestampType.LOG_APPEND_TIME if attributes & TIMESTAMP_TYPE_MASK else TimestampType.CREATE_TIME
