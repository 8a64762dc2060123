"""Record formats: MessageSet v0/v1 and RecordBatch v2, their compression codecs and conversions.

Sans-io: bytes in, objects out. Hot paths use the header view (``RecordBatchHeader``) and the patch
functions, which move whole batches without decoding their records. Every error raised on bad input is
a ``RecordsError``, itself a ``CodecError``.
"""

from odradek.protocol.records import convert
from odradek.protocol.records.attributes import (
    MAGIC_V0,
    MAGIC_V1,
    MAGIC_V2,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    Compression,
    TimestampType,
)
from odradek.protocol.records.batch import (
    RecordBatch,
    RecordBatchBuilder,
    build_record_batch,
    iter_record_batches,
)
from odradek.protocol.records.compression import (
    CHUNK_SIZE,
    COMPRESSION_TYPES,
    DEFAULT_MAX_DECOMPRESSED_SIZE,
    Progress,
    TargetCompression,
    check_codec_allowed,
    compress,
    decompress,
)
from odradek.protocol.records.control import (
    ControlRecordType,
    EndTransactionMarker,
    build_end_transaction_marker_batch,
    decode_control_key,
    decode_end_transaction_marker,
    encode_control_key,
    encode_end_transaction_marker_value,
    read_end_transaction_marker,
)
from odradek.protocol.records.convert import (
    DownConverted,
    down_convert,
    down_convert_batches,
    up_convert_message_set,
)
from odradek.protocol.records.errors import (
    CompressedSizeError,
    CompressionError,
    CorruptRecordError,
    DecompressedSizeError,
    InvalidRecordsError,
    RecordsError,
    RecordsTruncatedError,
    TooManyRecordsError,
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
from odradek.protocol.records.legacy import (
    LegacyBatch,
    MessageSet,
    build_message_set,
    decode_message_set,
    scan_message_set,
)
from odradek.protocol.records.recompress import rebuild_batch, recompress_batch, records_section
from odradek.protocol.records.record import Record, RecordHeader
from odradek.protocol.records.record_walk import RecordsSummary, renumber_offsets, walk_records

__all__ = [
    "CHUNK_SIZE",
    "COMPRESSION_TYPES",
    "DEFAULT_MAX_DECOMPRESSED_SIZE",
    "HEADER_SIZE",
    "MAGIC_V0",
    "MAGIC_V1",
    "MAGIC_V2",
    "NO_PARTITION_LEADER_EPOCH",
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "NO_SEQUENCE",
    "NO_TIMESTAMP",
    "CompressedSizeError",
    "Compression",
    "CompressionError",
    "ControlRecordType",
    "CorruptRecordError",
    "DecompressedSizeError",
    "DownConverted",
    "EndTransactionMarker",
    "InvalidRecordsError",
    "LegacyBatch",
    "MessageSet",
    "Progress",
    "Record",
    "RecordBatch",
    "RecordBatchBuilder",
    "RecordBatchHeader",
    "RecordHeader",
    "RecordsError",
    "RecordsSummary",
    "RecordsTruncatedError",
    "TargetCompression",
    "TimestampType",
    "TooManyRecordsError",
    "UnsupportedCompressionError",
    "build_end_transaction_marker_batch",
    "build_message_set",
    "build_record_batch",
    "check_codec_allowed",
    "compress",
    "convert",
    "decode_control_key",
    "decode_end_transaction_marker",
    "decode_message_set",
    "decompress",
    "down_convert",
    "down_convert_batches",
    "encode_control_key",
    "encode_end_transaction_marker_value",
    "iter_batch_headers",
    "iter_record_batches",
    "patch_base_offset",
    "patch_log_append_time",
    "patch_partition_leader_epoch",
    "read_end_transaction_marker",
    "rebuild_batch",
    "recompress_batch",
    "records_section",
    "renumber_offsets",
    "scan_message_set",
    "split_complete_batches",
    "up_convert_message_set",
    "walk_records",
]
