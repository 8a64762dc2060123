"""How an append becomes bytes in a segment: checks on a produce's bytes before the Log assigns
offsets (whole v2 batches, sizes, CRC-32C, the header rules Kafka's LogValidator applies), the
producer-state analysis of each batch, then the write and the bookkeeping that follows it.

Records are not read here, except transaction markers' (their type decides commit or abort): what
needs a batch's records (a rewrite in the topic's codec, a compacted topic's keys, timestamps) is
``prepared_appends``' work, done before in a record worker or by the Log itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field

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
from odradek.storage.config import LogConfig
from odradek.storage.errors import (
    CorruptRecordError,
    DuplicateSequenceError,
    InvalidRecordError,
    RecordListTooLargeError,
    RecordTooLargeError,
)
from odradek.storage.log_view import WritableLog
from odradek.storage.prepared_appends import PreparedAppend, prepare_append
from odradek.storage.producer_state import (
    AppendOrigin,
    BatchMetadata,
    CompletedTxn,
    ProducerAppendInfo,
    ProducerStateManager,
    increment_sequence,
)
from odradek.storage.txn_index import AbortedTxn

Buffer = bytes | bytearray | memoryview

#: The most records a client's batch may hold (librdkafka's largest batch.num.messages), where Kafka
#: has no bound: a few hundred bytes of zstd can hold millions of tiny records, which the broker reads
#: one by one in Python (a rewrite, a compacted topic's keys, an old consumer's fetch). MESSAGE_TOO_LARGE,
#: on which producers split their batch.
MAX_RECORDS_PER_BATCH = 1_000_000


def append_as_leader(
    log: WritableLog,
    records: bytearray | memoryview,
    leader_epoch: int,
    origin: AppendOrigin,
    prepared: PreparedAppend | None,
) -> AppendResult:
    """``Log.append``: validate, take the record work from ``prepared`` if it was made from these bytes
    for the log's config (else do it now: a rewrite in the topic's codec, the rules on keys and
    timestamps), assign offsets (and the epoch, and LogAppendTime) in place, write."""
    now = log.clock()
    config = log.config
    headers = validate_batches(records, config, origin)
    if prepared is None or not prepared.made_for(records, config):
        prepared = prepare_append(records, headers, config, now, origin)
    records, headers = prepared.records_to_store(records, headers)
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


def append_replicated(log: WritableLog, records: Buffer) -> AppendResult:
    """``Log.append_as_follower``: the whole batches of ``records``, offsets and epochs as they are."""
    whole, _ = split_complete_batches(records)
    records = memoryview(records)[:whole]
    headers = validate_batches(records, log.config, AppendOrigin.REPLICATION)
    if headers[0].base_offset < log.log_end_offset:
        raise InvalidRecordError(
            f"replicated batch at offset {headers[0].base_offset} is below the log end {log.log_end_offset}"
        )
    return write_batches(log, records, headers, AppendOrigin.REPLICATION, NO_TIMESTAMP, None, log.clock())


def validate_batches(records: Buffer, config: LogConfig, origin: AppendOrigin) -> list[RecordBatchHeader]:
    """Headers (``pos`` relative to ``records``) of the batches making up ``records`` exactly.

    Raises CorruptRecordError for anything but whole, CRC-valid v2 batches; RecordTooLargeError for a
    batch over ``max.message.bytes`` (not a follower's) or an append over ``segment.bytes``;
    InvalidRecordError for header rules (record count vs offsets, control batches from clients, a
    producer id without a sequence).
    """
    if len(records) > config.segment_bytes:
        raise RecordListTooLargeError(len(records), config.segment_bytes)
    headers: list[RecordBatchHeader] = []
    pos = 0
    try:
        while pos < len(records):
            header = RecordBatchHeader.read(records, pos)
            if header.end > len(records):
                raise CorruptRecordError(f"record batch at position {pos} is cut short")
            # a follower's batches are already in its leader's log (Kafka's appendAsFollower skips this)
            if header.size > config.max_message_bytes and origin is not AppendOrigin.REPLICATION:
                raise RecordTooLargeError(header.size, config.max_message_bytes)
            if not header.crc_is_valid(records):
                raise CorruptRecordError(f"record batch at position {pos} fails its CRC-32C check")
            _check_header_rules(header, origin)
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
        if header.records_count > MAX_RECORDS_PER_BATCH:
            raise RecordTooLargeError(
                -1,
                MAX_RECORDS_PER_BATCH,
                message=f"record batch holds {header.records_count} records, more than the broker takes in "
                f"one batch ({MAX_RECORDS_PER_BATCH})",
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
    log: WritableLog,
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
