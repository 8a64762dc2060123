"""Opening a partition's log: finish or discard interrupted file operations, open the segments,
recover everything past the recovery point, and rebuild producer state and leader epochs.

Order, as in Kafka's LogLoader:
1. Delete ``*.tmp``, ``*.deleted`` and ``*.cleaned`` files; complete compaction swaps (``*.swap``): the
   old segments overlapping a swap segment are deleted, then the swap files take their final names.
2. Open every segment. A segment whose index files are missing or fail their sanity check is recovered
   on its own (validated, indexes rebuilt); one whose transaction index does not load is recovered on
   its own too, with producer state replayed up to it (only that rebuilds the index: Kafka's
   ``recoverSegment``), unless step 3 recovers it anyway.
3. Unless the log dir had a clean shutdown, recover the segments from the one holding the recovery point
   to the end: every batch is validated (header, CRC-32C, offsets), indexes are rebuilt, the first
   invalid byte and everything after it (including later segments) is removed, also when step 2 already
   cut that segment (else the log would keep a hole where its offsets were).
4. Producer state comes from the newest snapshot at or below where recovery starts, then the batch
   headers after it are replayed; recovered batches update it as they are validated.
5. Leader epochs come from ``leader-epoch-checkpoint`` below where recovery starts, and from the
   recovered batches from there on (the file may be stale there: see ``leader_epoch.py``); a missing or
   damaged checkpoint is rebuilt from the headers of the segments below the recovery too.
Everything here is file work for a worker thread: it runs before the Log exists on the event loop.
"""

from __future__ import annotations

import logging
import uuid
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from odradek.protocol.records import RecordBatchHeader
from odradek.storage.checkpoints import CheckpointFormatError, read_partition_metadata, unreadable_checkpoint
from odradek.storage.config import LogConfig
from odradek.storage.errors import CorruptIndexError, LogDirReadError
from odradek.storage.files import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    LOG_SUFFIX,
    SEGMENT_SUFFIXES,
    SWAP_SUFFIX,
    TEMP_SUFFIX,
    delete_if_exists,
    fsync_dir,
    offset_file_name,
    offset_from_file_name,
    without_suffix,
)
from odradek.storage.leader_epoch import LeaderEpochCache
from odradek.storage.producer_recovery import apply_batch, load_latest_snapshot, snapshot_path, write_snapshot
from odradek.storage.producer_state import ProducerStateManager
from odradek.storage.segment import BatchVisitor, LogSegment
from odradek.storage.segment_reads import translate_offset
from odradek.storage.txn_index import AbortedTxn

_log = logging.getLogger(__name__)


@dataclass(slots=True)
class LoadedLog:
    segments: list[LogSegment]
    log_start_offset: int
    recovery_point: int
    leader_epoch_cache: LeaderEpochCache
    producer_state: ProducerStateManager
    truncated_bytes: int = 0
    #: The topic id in ``partition.metadata`` (KIP-516); None for a log made without one.
    topic_id: uuid.UUID | None = None

    @property
    def log_end_offset(self) -> int:
        return self.segments[-1].next_offset


def load_log(
    directory: Path,
    config: LogConfig,
    now_ms: int,
    *,
    recovery_point: int = 0,
    log_start_offset: int | None = None,
    had_clean_shutdown: bool = False,
    producer_id_expiration_ms: int = 86_400_000,
) -> LoadedLog:
    directory.mkdir(parents=True, exist_ok=True)
    try:
        topic_id = read_partition_metadata(directory)
    except CheckpointFormatError as error:  # fsynced before its rename: not a crash's doing
        raise LogDirReadError(unreadable_checkpoint(error)) from error
    _remove_temp_files_and_complete_swaps(directory, config, now_ms)
    segments, cut_at_open = _open_segments(directory, config, now_ms)
    first_base = segments[0].base_offset if segments else 0
    log_start = max(log_start_offset or 0, first_base)

    epochs = LeaderEpochCache.load(directory)
    state = ProducerStateManager(producer_id_expiration_ms)
    bases = [s.base_offset for s in segments]
    if had_clean_shutdown or not segments:
        start_index = len(segments)
    else:
        start_index = max(bisect_right(bases, recovery_point) - 1, 0)
    for i in range(start_index):
        if segments[i].txn_index_lost:
            _recover_transaction_index(directory, segments, i, log_start, now_ms, producer_id_expiration_ms)
    recovery_start = (
        segments[start_index].base_offset if start_index < len(segments) else _end(segments, log_start)
    )

    if epochs.lost:
        rebuild_leader_epochs(segments[:start_index], epochs)  # recovery assigns the rest
        epochs.lost = False
    elif start_index < len(segments):
        # Past the recovery point the file may be one a power loss brought back from before a
        # truncation, naming an epoch whose records are gone: recovery assigns only epochs newer than
        # the latest it knows, so the entries from here on come from the batches alone. (Kafka's loader
        # only drops entries past the log end, which misses a log that grew again after the truncation.)
        epochs.truncate_from_end(recovery_start)
    replay_from = load_latest_snapshot(directory, state, recovery_start, log_start, now_ms)
    replay_producer_state(segments[:start_index], state, epochs, replay_from, recovery_start)

    truncated = 0
    for i in range(start_index, len(segments)):
        segment = segments[i]
        truncated = segment.recover(_recovery_visitor(segment, state, epochs))
        # A segment whose opening found it unreadable was cut then: this recovery finds nothing more
        # to cut, but what followed the cut must go all the same (or the log keeps a hole there).
        truncated = truncated or cut_at_open.get(segment.base_offset, 0)
        segment.flush()
        if truncated:
            _log.warning("truncated %d invalid bytes at the end of %s", truncated, segment.log_path)
            for later in segments[i + 1 :]:
                _log.warning("deleting %s: it follows a truncated segment", later.log_path)
                later.delete_files()
            del segments[i + 1 :]
            break

    log_end = _end(segments, log_start)
    if log_start > log_end or not segments:
        # Everything before the log start offset is gone (or nothing exists): start over there.
        for segment in segments:
            segment.delete_files()
        segments = [LogSegment.create(directory, log_start, config, now_ms)]
        state.truncate_fully_and_start_at(log_start)
        log_end = log_start
    for inactive in segments[:-1]:  # only the active segment keeps its index files open
        inactive.offset_index.release()
        inactive.time_index.release()
    epochs.truncate_from_end(log_end)
    epochs.truncate_from_start(log_start)
    state.map_end_offset = log_end
    # Both files are fsynced; their renames (and a new segment's files) become durable with the one
    # directory fsync below, before the log is handed out.
    if not snapshot_path(directory, log_end).exists():
        write_snapshot(directory, state, fsync=True, sync_directory=False)
    epochs.write(fsync=True, sync_directory=False)
    fsync_dir(directory)
    return LoadedLog(segments, log_start, log_end, epochs, state, truncated, topic_id)


def _end(segments: list[LogSegment], log_start: int) -> int:
    return segments[-1].next_offset if segments else log_start


def _remove_temp_files_and_complete_swaps(directory: Path, config: LogConfig, now_ms: int) -> None:
    swap_bases: set[int] = set()
    for path in list(directory.iterdir()):
        name = path.name
        if name.endswith((TEMP_SUFFIX, DELETED_SUFFIX, CLEANED_SUFFIX)):
            delete_if_exists(path)
        elif name.endswith(LOG_SUFFIX + SWAP_SUFFIX):
            base = offset_from_file_name(name)
            if base is not None:
                swap_bases.add(base)
    for base in sorted(swap_bases):
        # The swap segment is complete (it was renamed from .cleaned only once fsynced): it replaces
        # every old segment starting inside its offset range.
        swap = LogSegment.open_for_recovery(directory, base, config, now_ms, suffix=SWAP_SUFFIX)
        swap.recover()
        swap_end = swap.next_offset
        swap.close()
        for path in list(directory.iterdir()):
            offset = offset_from_file_name(path.name)
            if (
                offset is not None
                and base <= offset < max(swap_end, base + 1)
                and path.name.endswith(SEGMENT_SUFFIXES)
            ):
                delete_if_exists(path)
        for suffix in SEGMENT_SUFFIXES:
            swap_file = directory / (offset_file_name(base, suffix) + SWAP_SUFFIX)
            if swap_file.exists():
                swap_file.rename(without_suffix(swap_file, SWAP_SUFFIX))
    if swap_bases:
        fsync_dir(directory)


def _open_segments(
    directory: Path, config: LogConfig, now_ms: int
) -> tuple[list[LogSegment], dict[int, int]]:
    """The segments, oldest first, and the bytes cut from each (by base offset) that was recovered
    on its own because its indexes or its last batch did not read."""
    bases = set()
    for path in directory.iterdir():
        offset = offset_from_file_name(path.name)
        if offset is not None and path.name == offset_file_name(offset, LOG_SUFFIX):
            bases.add(offset)
    for path in list(directory.iterdir()):
        # An index without its log file (a deletion interrupted half-way) is garbage.
        offset = offset_from_file_name(path.name)
        if offset is not None and offset not in bases and path.name.endswith(SEGMENT_SUFFIXES):
            delete_if_exists(path)
    segments = []
    cut: dict[int, int] = {}
    for base in sorted(bases):
        try:
            segment = LogSegment.open(directory, base, config, now_ms)
        except (CorruptIndexError, FileNotFoundError, ValueError) as e:
            _log.warning("rebuilding the indexes of segment %d in %s: %s", base, directory, e)
            segment = LogSegment.open_for_recovery(directory, base, config, now_ms)
            if not segment.txn_index_lost:  # else recovered once, with producer state (load_log)
                cut[base] = segment.recover(keep_txn_index=True)
        segments.append(segment)
    return segments, cut


def _recover_transaction_index(
    directory: Path,
    segments: list[LogSegment],
    index: int,
    log_start: int,
    now_ms: int,
    producer_id_expiration_ms: int,
) -> None:
    """Recover ``segments[index]`` alone, its transaction index rebuilt from the producer state of
    the log up to it (Kafka's LogLoader.recoverSegment); the segments below it are open and indexed."""
    segment = segments[index]
    _log.warning("rebuilding the transaction index of %s", segment.log_path)
    state = ProducerStateManager(producer_id_expiration_ms)
    base = segment.base_offset
    replay_from = load_latest_snapshot(directory, state, base, log_start, now_ms, delete_later=False)
    replay_producer_state(segments[:index], state, None, replay_from, base)
    truncated = segment.recover(_recovery_visitor(segment, state, None))
    segment.flush()
    segment.txn_index_lost = False
    if truncated:  # as Kafka's: the later segments stay (reads skip the gap, as a compaction's)
        _log.warning("truncated %d invalid bytes at the end of %s", truncated, segment.log_path)


def rebuild_leader_epochs(segments: Sequence[LogSegment], epochs: LeaderEpochCache) -> None:
    """Assign every epoch the batches of ``segments`` were stamped with, as Kafka's recovery does for
    the batches it validates (header reads only)."""
    for segment in segments:
        for _, header in segment.batch_headers(0):
            _assign_epoch(epochs, header)


def replay_producer_state(
    segments: Sequence[LogSegment],
    state: ProducerStateManager,
    epochs: LeaderEpochCache | None,
    from_offset: int,
    to_offset: int,
) -> None:
    """Bring producer state from ``from_offset`` to ``to_offset`` by reading batch headers (and the
    bytes of transaction markers only)."""
    for segment in segments:
        if segment.next_offset <= from_offset or segment.base_offset >= to_offset:
            continue
        start = 0
        if from_offset > segment.base_offset:
            found = translate_offset(segment, from_offset)
            if found is None:
                continue
            start = found.position
        for position, header in segment.batch_headers(start):
            if header.base_offset >= to_offset:
                return
            if header.last_offset < from_offset:
                continue
            if epochs is not None:
                _assign_epoch(epochs, header)
            view = segment.read_bytes(position, header.size) if header.is_control else b""
            apply_batch(state, header, view)


def _recovery_visitor(
    segment: LogSegment, state: ProducerStateManager, epochs: LeaderEpochCache | None
) -> BatchVisitor:
    def on_batch(header: RecordBatchHeader, view: memoryview) -> None:
        if epochs is not None:
            _assign_epoch(epochs, header)
        completed = apply_batch(state, header, view)
        if completed is not None and completed[0].is_aborted:
            txn, last_stable_offset = completed
            segment.txn_index.append(
                AbortedTxn(txn.producer_id, txn.first_offset, txn.last_offset, last_stable_offset)
            )

    return on_batch


def _assign_epoch(epochs: LeaderEpochCache, header: RecordBatchHeader) -> None:
    latest = epochs.latest_epoch
    if header.partition_leader_epoch >= 0 and (latest is None or header.partition_leader_epoch > latest):
        epochs.assign(header.partition_leader_epoch, header.base_offset)
