"""Record formats: MessageSet v0/v1 and RecordBatch v2, their compression codecs and conversions.

Sans-io: bytes in, objects out. Hot paths use the header view (``RecordBatchHeader``) and the patch
functions, which move whole batches without decoding their records.
"""

from odradek.protocol.records.attributes import (
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    Compression,
    TimestampType,
)
from odradek.protocol.records.errors import (
    CompressionError,
    CorruptRecordError,
    DecompressedSizeError,
    RecordsError,
    RecordsTruncatedError,
    UnsupportedCompressionError,
)
from odradek.protocol.records.framing import split_complete_batches
from odradek.protocol.records.header import (
    HEADER_SIZE,
    RecordBatchHeader,
    iter_batch_headers,
    patch_base_offset,
    patch_log_append_time,
    patch_partition_leader_epoch,
)

__all__ = [
    "HEADER_SIZE",
    "NO_PARTITION_LEADER_EPOCH",
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "NO_SEQUENCE",
    "NO_TIMESTAMP",
    "Compression",
    "CompressionError",
    "CorruptRecordError",
    "DecompressedSizeError",
    "RecordBatchHeader",
    "RecordsError",
    "RecordsTruncatedError",
    "TimestampType",
    "UnsupportedCompressionError",
    "iter_batch_headers",
    "patch_base_offset",
    "patch_log_append_time",
    "patch_partition_leader_epoch",
    "split_complete_batches",
]
