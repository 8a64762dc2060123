"""Exceptions raised by storage; the handlers layer maps each to a Kafka error code in one place.

Storage never imports ``error_codes``: these types carry what a handler needs to answer (offsets for a
duplicate, the valid range for an out-of-range fetch) and nothing about requests.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from odradek.protocol.records import CorruptRecordError as _RecordsCorruptRecordError


class StorageError(Exception):
    """Base of every exception raised by ``odradek.storage``."""


class LogStorageError(StorageError):
    """An I/O failure on a log directory (Kafka's KafkaStorageException): the partition is offline."""


class LogDirReadError(LogStorageError):
    """A file of a log dir that cannot be read at start-up (an offset checkpoint, a partition's
    ``partition.metadata``): an IOException in Kafka's readers, which takes that log dir offline."""


class InvalidLogConfigError(StorageError, ValueError):
    """A topic config value of the wrong type or out of range."""


class OffsetOutOfRangeError(StorageError):
    """A fetch or lookup below the log start offset or above the log end offset (OFFSET_OUT_OF_RANGE)."""

    def __init__(self, offset: int, log_start_offset: int, log_end_offset: int) -> None:
        super().__init__(f"offset {offset} is out of range [{log_start_offset}, {log_end_offset}] of the log")
        self.offset = offset
        self.log_start_offset = log_start_offset
        self.log_end_offset = log_end_offset


class CorruptRecordError(StorageError, _RecordsCorruptRecordError):
    """Appended bytes that are not valid v2 batches (CORRUPT_MESSAGE / INVALID_RECORD).

    It is also a ``protocol.records.CorruptRecordError`` (so a ``CodecError``): a handler that already
    catches bad input from the codec catches this too.
    """


@dataclass(frozen=True, slots=True)
class RecordError:
    """One record that made its batch fail (KIP-467): its index in the batch, and why."""

    batch_index: int
    message: str


class InvalidRecordError(StorageError):
    """Well-formed batches that break a rule of the log, e.g. a client control batch (INVALID_RECORD).

    ``record_errors`` names the records at fault when the rule is about records (keyless records in a
    compacted topic); the whole append is refused all the same, as Kafka refuses it."""

    def __init__(self, message: str, record_errors: Sequence[RecordError] = ()) -> None:
        super().__init__(message)
        self.record_errors = tuple(record_errors)


class InvalidTimestampError(StorageError):
    """A CreateTime record whose timestamp lies outside message.timestamp.before/after.max.ms of the
    broker's clock (INVALID_TIMESTAMP); the whole append is refused, as Kafka refuses it, and
    ``record_errors`` names the records at fault."""

    def __init__(self, message: str, record_errors: Sequence[RecordError] = ()) -> None:
        super().__init__(message)
        self.record_errors = tuple(record_errors)


class RecordTooLargeError(StorageError):
    """A batch larger than ``max.message.bytes`` (MESSAGE_TOO_LARGE: producers split it and retry)."""

    def __init__(
        self, batch_size: int, limit: int, what: str = "max.message.bytes", message: str | None = None
    ) -> None:
        super().__init__(message or f"record batch of {batch_size} bytes exceeds {what} ({limit})")
        self.batch_size = batch_size
        self.limit = limit


class RecordListTooLargeError(RecordTooLargeError):
    """An append larger than ``segment.bytes`` (RECORD_LIST_TOO_LARGE, as Kafka: splitting would not
    help a producer whose single records outgrow the segment, so it is not retried)."""

    def __init__(self, size: int, segment_bytes: int) -> None:
        super().__init__(size, segment_bytes, "segment.bytes")


class DuplicateSequenceError(StorageError):
    """An idempotent batch that is already in the log; answer it as a success with the original offsets.

    Kafka treats this as success (error NONE) carrying the offsets the batch got the first time.
    """

    def __init__(self, producer_id: int, base_offset: int, last_offset: int, log_start_offset: int) -> None:
        super().__init__(
            f"duplicate batch from producer {producer_id}; originally appended at offsets "
            f"{base_offset}..{last_offset}"
        )
        self.producer_id = producer_id
        self.base_offset = base_offset
        self.last_offset = last_offset
        self.log_start_offset = log_start_offset


class OutOfOrderSequenceError(StorageError):
    """An idempotent batch whose first sequence does not follow the producer's last one.

    OUT_OF_ORDER_SEQUENCE_NUMBER.
    """


class InvalidProducerEpochError(StorageError):
    """A batch or marker from an older producer epoch than the log has seen (INVALID_PRODUCER_EPOCH)."""


class UnknownProducerIdError(StorageError):
    """UNKNOWN_PRODUCER_ID, exported for the handlers' error mapping.

    Since KIP-360 (Kafka 2.5) the log accepts any sequence from a producer whose state it no longer has
    (expired, or removed with its segments), so storage itself does not raise this.
    """


class InvalidTxnStateError(StorageError):
    """A non-transactional batch from a producer with an open transaction (INVALID_TXN_STATE)."""


class TransactionCoordinatorFencedError(StorageError):
    """A transaction marker carrying an older coordinator epoch than the log has seen."""


class CorruptIndexError(StorageError):
    """An index file that fails its sanity checks; recovery rebuilds it from the segment."""


class CorruptSnapshotError(StorageError):
    """A producer-state snapshot that cannot be read; recovery ignores it and replays the log instead."""
