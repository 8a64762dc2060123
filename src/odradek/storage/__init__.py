"""Partition logs on disk, laid out as Kafka lays them out: segments, indexes, checkpoints, recovery,
retention, compaction and producer state. Knows batches, not requests. See README.md."""

from odradek.storage.checkpoint_jobs import CheckpointJob
from odradek.storage.cleaner import (
    CleaningPlan,
    CleaningResult,
    compact,
    install_cleaning,
    plan_cleaning,
    run_cleaning,
)
from odradek.storage.config import LogConfig
from odradek.storage.errors import (
    CorruptRecordError,
    DuplicateSequenceError,
    InvalidLogConfigError,
    InvalidProducerEpochError,
    InvalidRecordError,
    InvalidTxnStateError,
    LogStorageError,
    OffsetOutOfRangeError,
    OutOfOrderSequenceError,
    RecordListTooLargeError,
    RecordTooLargeError,
    StorageError,
    TransactionCoordinatorFencedError,
    UnknownProducerIdError,
)
from odradek.storage.fetch import FetchDataInfo, FetchIsolation, FileRegion, read_regions
from odradek.storage.files import Clock, system_clock
from odradek.storage.flush import FlushJob
from odradek.storage.log import Log
from odradek.storage.log_append import AppendResult
from odradek.storage.log_deletion import FileDeletionJob
from odradek.storage.log_manager import LogManager
from odradek.storage.offsets_by_time import (
    EARLIEST_LOCAL_TIMESTAMP,
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    TimestampAndOffset,
)
from odradek.storage.partition import TopicPartition
from odradek.storage.partition_creation import PartitionCreationJob
from odradek.storage.producer_state import AppendOrigin
from odradek.storage.segment import LogSegment
from odradek.storage.topic_store import TopicRecord
from odradek.storage.txn_index import AbortedTxn

__all__ = [
    "EARLIEST_LOCAL_TIMESTAMP",
    "EARLIEST_TIMESTAMP",
    "LATEST_TIMESTAMP",
    "MAX_TIMESTAMP",
    "AbortedTxn",
    "AppendOrigin",
    "AppendResult",
    "CheckpointJob",
    "CleaningPlan",
    "CleaningResult",
    "Clock",
    "CorruptRecordError",
    "DuplicateSequenceError",
    "FetchDataInfo",
    "FetchIsolation",
    "FileDeletionJob",
    "FileRegion",
    "FlushJob",
    "InvalidLogConfigError",
    "InvalidProducerEpochError",
    "InvalidRecordError",
    "InvalidTxnStateError",
    "Log",
    "LogConfig",
    "LogManager",
    "LogSegment",
    "LogStorageError",
    "OffsetOutOfRangeError",
    "OutOfOrderSequenceError",
    "PartitionCreationJob",
    "RecordListTooLargeError",
    "RecordTooLargeError",
    "StorageError",
    "TimestampAndOffset",
    "TopicPartition",
    "TopicRecord",
    "TransactionCoordinatorFencedError",
    "UnknownProducerIdError",
    "compact",
    "install_cleaning",
    "plan_cleaning",
    "read_regions",
    "run_cleaning",
    "system_clock",
]
