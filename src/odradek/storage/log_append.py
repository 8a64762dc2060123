"""How an append becomes bytes in a segment: checks on a produce's bytes before the Log assigns
offsets (whole v2 batches, sizes, CRC-32C, the header rules Kafka's LogValidator applies), the
producer-state analysis of each batch, then the write and the bookkeeping that follows it.

Records are not decoded, except for compacted topics (a record without a key cannot be compacted, so
Kafka rejects it), for transaction markers (their type decides commit or abort) and for the lower
timestamp bound when a topic sets one (``message.timestamp.before.max.ms``; the upper bound is the
header's max timestamp).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from odradek.protocol.records import (
    NO_SEQUENCE,
    NO_TIMESTAMP,
    RecordBatch,
    RecordBatchHeader,
    RecordsError,
    patch_base_offset,
    patch_log_append_time,
    patch_partition_leader_epoch,
    read_end_transaction_marker,
    split_complete_batches,
)
from odradek.storage.config import LONG_MAX, LogConfig
from odradek.storage.errors import (
    CorruptRecordError,
    DuplicateSequenceError,
    InvalidRecordError,
    InvalidTimestampError,
    RecordError,
    RecordTooLargeError,
)
from odradek.storage.producer_state import (
    AppendOrigin,
    BatchMetadata,
    CompletedTxn,
    ProducerAppendInfo,
    ProducerStateManager,
    increment_sequence,
)
from odradek.storage.recompression import RecompressedBatches, recompress_for_append
from odradek.storage.txn_index import AbortedTxn

if TYPE_CHECKING:
    from odradek.storage.log import Log

Buffer = bytes | bytearray | memoryview


def append_as_leader(
    log: Log,
    records: bytearray | memoryview,
    leader_epoch: int,
    origin: AppendOrigin,
    recompressed: RecompressedBatches | None,
) -> AppendResult:
    """``Log.append``: validate, rewrite batches in another codec than the topic's, assign offsets (and
    the epoch, and LogAppendTime) in place, write."""
    now = log.clock()
    config = log.config
    headers = validate_batches(records, config, origin, now)
    records, headers = recompress_for_append(records, headers, config, recompressed)
    offset = log.log_end_offset
    log_append_time = now if config.log_append_time else NO_TIMESTAMP
    for header in headers:
        patch_base_offset(records, header.pos, offset)
        patch_partition_leader_epoch(records, header.pos, leader_epoch)
        if config.log_append_time:
            patch_log_append_time(records, header.pos, now)
        offset += header.last_offset_delta + 1
    headers = [RecordBatchHeader.read(records, h.pos) for h in headers]
    return write_batches(log, records, headers, origin, log_append_time, leader_epoch, now)


def append_replicated(log: Log, records: Buffer) -> AppendResult:
    """``Log.append_as_follower``: the whole batches of ``records``, offsets and epochs as they are."""
    whole, _ = split_complete_batches(records)
    records = memoryview(records)[:whole]
    headers = validate_batches(records, log.config, AppendOrigin.REPLICATION)
    if headers[0].base_offset < log.log_end_offset:
        raise InvalidRecordError(
            f"replicated batch at offset {headers[0].base_offset} is below the log end {log.log_end_offset}"
        )
    return write_batches(log, records, headers, AppendOrigin.REPLICATION, NO_TIMESTAMP, None, log.clock())


def validate_batches(
    records: Buffer, config: LogConfig, origin: AppendOrigin, now: int | None = None
) -> list[RecordBatchHeader]:
    """Headers (``pos`` relative to ``records``) of the batches making up ``records`` exactly.

    Raises CorruptRecordError for anything but whole, CRC-valid v2 batches; RecordTooLargeError for a
    batch over ``max.message.bytes`` or an append over ``segment.bytes``; InvalidRecordError for header
    rules (record count vs offsets, control batches from clients, keyless records in compacted topics);
    InvalidTimestampError for a client's CreateTime record outside the timestamp bounds around ``now``
    (the broker's clock; None: not checked).
    """
    if len(records) > config.segment_bytes:
        raise RecordTooLargeError(len(records), config.segment_bytes, "segment.bytes")
    headers: list[RecordBatchHeader] = []
    pos = 0
    try:
        while pos < len(records):
            header = RecordBatchHeader.read(records, pos)
            if header.end > len(records):
                raise CorruptRecordError(f"record batch at position {pos} is cut short")
            if header.size > config.max_message_bytes:
                raise RecordTooLargeError(header.size, config.max_message_bytes)
            if not header.crc_is_valid(records):
                raise CorruptRecordError(f"record batch at position {pos} fails its CRC-32C check")
            _check_header_rules(header, origin)
            if config.compact and origin is AppendOrigin.CLIENT and not header.is_control:
                _check_keys(records, pos)
            if now is not None and origin is AppendOrigin.CLIENT and not config.log_append_time:
                _check_timestamps(records, header, config, now)
            headers.append(header)
            pos = header.end
    except (CorruptRecordError, RecordTooLargeError, InvalidRecordError):
        raise
    except RecordsError as e:
        raise CorruptRecordError(str(e)) from e
    if not headers:
        raise CorruptRecordError("an append holds no record batch")
    return headers


def _check_header_rules(header: RecordBatchHeader, origin: AppendOrigin) -> None:
    if header.is_control and origin is AppendOrigin.CLIENT:
        raise InvalidRecordError("clients may not write control batches")
    if origin is AppendOrigin.CLIENT:
        if header.last_offset_delta < 0 or header.records_count != header.last_offset_delta + 1:
            raise InvalidRecordError(
                f"batch record count {header.records_count} does not match its offset range "
                f"(last offset delta {header.last_offset_delta})"
            )
        if header.producer_id >= 0 and header.base_sequence < 0:
            raise InvalidRecordError(f"batch from producer {header.producer_id} has no sequence number")


def _check_timestamps(records: Buffer, header: RecordBatchHeader, config: LogConfig, now: int) -> None:
    """Kafka's LogValidator bounds on CreateTime timestamps. The header's max timestamp settles the
    upper bound without decoding; records are decoded only when ``message.timestamp.before.max.ms`` is
    set below its default (no limit), or to name the records at fault once the header has failed."""
    if header.is_control or header.max_timestamp == NO_TIMESTAMP:
        return
    earliest, latest = (
        now - config.message_timestamp_before_max_ms,
        now + config.message_timestamp_after_max_ms,
    )
    if header.max_timestamp <= latest and config.message_timestamp_before_max_ms >= LONG_MAX:
        return
    batch = RecordBatch.decode(records, header.pos, verify_crc=False)
    offenders = [
        (index, record.timestamp)
        for index, record in enumerate(batch.records)
        if record.timestamp != NO_TIMESTAMP and not earliest <= record.timestamp <= latest
    ]
    if offenders:
        raise InvalidTimestampError(
            f"Timestamp {offenders[0][1]} of a record in the batch at offset {header.base_offset} is out of "
            f"range. The timestamp should be within [{earliest}, {latest}] ({len(offenders)} of "
            f"{len(batch.records)} records are outside it)",
            [RecordError(index, f"timestamp {timestamp} is out of range") for index, timestamp in offenders],
        )
    if header.max_timestamp > latest:  # a header claiming more than its records: refused as before
        raise InvalidTimestampError(
            f"Timestamp {header.max_timestamp} of the batch at offset {header.base_offset} is out of range. "
            f"The timestamp should be within [{earliest}, {latest}]"
        )


def _check_keys(records: Buffer, pos: int) -> None:
    """A record without a key cannot be compacted: the batch is refused, naming every keyless record
    (KIP-467) so that a client can tell them from the records refused only for sharing their batch."""
    batch = RecordBatch.decode(records, pos, verify_crc=False)
    keyless = [index for index, record in enumerate(batch.records) if record.key is None]
    if keyless:
        raise InvalidRecordError(
            f"{len(keyless)} of {len(batch.records)} records in the batch have no key: "
            "a compacted topic accepts only records with a key",
            [RecordError(index, "record has no key, which a compacted topic requires") for index in keyless],
        )


@dataclass(frozen=True, slots=True)
class AppendResult:
    base_offset: int
    last_offset: int
    log_append_time: int
    """The broker time stamped on LogAppendTime batches, else -1 (NO_TIMESTAMP), as Produce returns it."""
    log_start_offset: int
    max_timestamp: int = NO_TIMESTAMP
    records_count: int = 0


@dataclass(slots=True)
class ProducerAnalysis:
    """The producer-state changes an append would make, staged; applied only after the write."""

    updated: dict[int, ProducerAppendInfo] = field(default_factory=dict)
    completed_txns: list[CompletedTxn] = field(default_factory=list)
    duplicate: BatchMetadata | None = None
    duplicate_producer_id: int = -1


def analyze_producer_state(
    state: ProducerStateManager, records: Buffer, headers: list[RecordBatchHeader], origin: AppendOrigin
) -> ProducerAnalysis:
    """Validate every producer's batches (offsets already assigned) against its state.

    Raises OutOfOrderSequenceError, InvalidProducerEpochError, InvalidTxnStateError or
    TransactionCoordinatorFencedError; reports a duplicate instead of raising so the caller can answer
    with the original offsets.
    """
    analysis = ProducerAnalysis()
    for header in headers:
        pid = header.producer_id
        if pid < 0:
            continue
        last_seq = increment_sequence(header.base_sequence, header.last_offset_delta)
        if origin is AppendOrigin.CLIENT and header.base_sequence != NO_SEQUENCE:
            entry = state.last_entry(pid)
            duplicate = (
                entry.find_duplicate_batch(header.producer_epoch, header.base_sequence, last_seq)
                if entry
                else None
            )
            if duplicate is not None:
                analysis.duplicate, analysis.duplicate_producer_id = duplicate, pid
                return analysis
        info = analysis.updated.get(pid) or state.prepare_update(pid, origin)
        analysis.updated[pid] = info
        if header.is_control:
            try:
                batch = RecordBatch.decode(records, header.pos, verify_crc=False)
                marker = read_end_transaction_marker(batch)
            except RecordsError as e:
                raise InvalidRecordError(f"control batch at offset {header.base_offset}: {e}") from e
            completed = info.append_end_txn_marker(
                marker, header.producer_epoch, header.base_offset, batch.records[0].timestamp
            )
            if completed is not None:
                analysis.completed_txns.append(completed)
        else:
            info.append_data_batch(
                header.producer_epoch,
                header.base_sequence,
                last_seq,
                header.max_timestamp,
                header.base_offset,
                header.last_offset,
                header.is_transactional,
            )
    return analysis


def write_batches(
    log: Log,
    records: Buffer,
    headers: list[RecordBatchHeader],
    origin: AppendOrigin,
    log_append_time: int,
    leader_epoch: int | None,
    now: int,
) -> AppendResult:
    """Validate producer state, roll if due, write, then update epochs, producers, transactions and
    (single-node) the high watermark. Nothing changes if validation raises."""
    state = log.producer_state
    analysis = analyze_producer_state(state, records, headers, origin)
    if analysis.duplicate is not None:
        dup = analysis.duplicate
        raise DuplicateSequenceError(
            analysis.duplicate_producer_id, dup.first_offset, dup.last_offset, log.log_start_offset
        )
    first, last = headers[0], headers[-1]
    max_header = max(headers, key=lambda h: h.max_timestamp)
    segment = log.active_segment
    if segment.should_roll(log.config, len(records), max_header.max_timestamp, last.last_offset, now):
        segment = log.roll()
    segment.append(last.last_offset, max_header.max_timestamp, max_header.last_offset, records)

    epochs = log.leader_epoch_cache
    for header in headers:
        epoch = header.partition_leader_epoch if leader_epoch is None else leader_epoch
        latest = epochs.latest_epoch
        if epoch >= 0 and (latest is None or epoch > latest):
            epochs.assign(epoch, header.base_offset)
    for info in analysis.updated.values():
        state.update(info)
    for txn in analysis.completed_txns:
        last_stable_offset = state.last_stable_offset(txn)
        if txn.is_aborted:
            segment.txn_index.append(
                AbortedTxn(txn.producer_id, txn.first_offset, txn.last_offset, last_stable_offset)
            )
        state.complete_txn(txn)
    state.map_end_offset = last.next_offset
    if log.auto_high_watermark:
        log.update_high_watermark(log.log_end_offset)
    return AppendResult(
        first.base_offset,
        last.last_offset,
        log_append_time,
        log.log_start_offset,
        max_header.max_timestamp,
        sum(h.records_count for h in headers),
    )
