"""Producer state on disk and its rebuild: ``<offset>.snapshot`` files and replay of batch headers.

A snapshot is Kafka's file (producer_snapshot_file.py), named after the log offset the state reflects.
Kafka's layout keeps only each producer's last batch, so after a restart a retry of an older one of its
last five batches is no longer recognised as a duplicate (as on Kafka). A snapshot that fails its
checks is deleted and an older one (or an empty state) is used, replaying more of the log instead.
"""

from __future__ import annotations

import logging
from pathlib import Path

from odradek.protocol.records import RecordBatch, RecordBatchHeader, RecordsError, read_end_transaction_marker
from odradek.storage.errors import CorruptSnapshotError
from odradek.storage.files import (
    SNAPSHOT_SUFFIX,
    atomic_write,
    delete_if_exists,
    offset_file_name,
    offset_from_file_name,
)
from odradek.storage.producer_snapshot_file import decode_snapshot, encode_snapshot
from odradek.storage.producer_state import (
    AppendOrigin,
    CompletedTxn,
    ProducerAppendInfo,
    ProducerStateEntry,
    ProducerStateManager,
    increment_sequence,
)

_log = logging.getLogger(__name__)


def snapshot_offsets(partition_dir: Path) -> list[int]:
    """Offsets of the snapshot files in a partition directory, ascending."""
    offsets = []
    for path in partition_dir.glob("*" + SNAPSHOT_SUFFIX):
        offset = offset_from_file_name(path.name)
        if offset is not None and path.name.endswith(SNAPSHOT_SUFFIX):
            offsets.append(offset)
    return sorted(offsets)


def snapshot_path(partition_dir: Path, offset: int) -> Path:
    return partition_dir / offset_file_name(offset, SNAPSHOT_SUFFIX)


def write_snapshot(
    partition_dir: Path, state: ProducerStateManager, *, fsync: bool = False, sync_directory: bool = True
) -> Path:
    """Write the state at ``state.map_end_offset``; unsynced by default (flushed later, off the loop).
    ``sync_directory=False``: the caller fsyncs the partition directory itself (see ``atomic_write``)."""
    data = encode_snapshot(list(state.producers.values()))
    path = snapshot_path(partition_dir, state.map_end_offset)
    atomic_write(path, data, fsync=fsync, sync_directory=sync_directory)
    return path


def read_snapshot(path: Path) -> tuple[int, list[ProducerStateEntry]]:
    """(offset, entries) of a snapshot file; CorruptSnapshotError if it fails any check."""
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise CorruptSnapshotError(f"snapshot {path} cannot be read: {e}") from e
    offset = offset_from_file_name(path.name)
    if offset is None:
        raise CorruptSnapshotError(f"{path} is not named after an offset")
    try:
        return offset, decode_snapshot(raw)
    except CorruptSnapshotError as e:
        raise CorruptSnapshotError(f"snapshot {path}: {e}") from e


def load_latest_snapshot(
    partition_dir: Path,
    state: ProducerStateManager,
    up_to_offset: int,
    log_start_offset: int,
    now_ms: int,
    *,
    delete_later: bool = True,
) -> int:
    """Load the newest readable snapshot at or below ``up_to_offset`` into ``state``; returns the offset
    replay must start from. Snapshots above ``up_to_offset`` describe truncated data and are deleted,
    unless ``delete_later`` is off (the state is wanted at an offset inside the log)."""
    for offset in reversed(snapshot_offsets(partition_dir)):
        path = snapshot_path(partition_dir, offset)
        if offset > up_to_offset:
            if delete_later:
                delete_if_exists(path)
            continue
        try:
            snapshot_offset, entries = read_snapshot(path)
        except CorruptSnapshotError as e:
            _log.warning("deleting unreadable producer snapshot: %s", e)
            delete_if_exists(path)
            continue
        state.load_entries(entries, snapshot_offset, now_ms)
        return snapshot_offset
    state.truncate_fully_and_start_at(log_start_offset)
    return log_start_offset


def delete_snapshots_below(partition_dir: Path, offset: int) -> list[Path]:
    """Remove snapshots older than ``offset`` (their segments are gone); returns what was removed."""
    removed = []
    for snapshot_offset in snapshot_offsets(partition_dir):
        if snapshot_offset < offset:
            path = snapshot_path(partition_dir, snapshot_offset)
            delete_if_exists(path)
            removed.append(path)
    return removed


def apply_batch(
    state: ProducerStateManager, header: RecordBatchHeader, view: memoryview | bytes
) -> tuple[CompletedTxn, int] | None:
    """Replay one batch already in the log into ``state`` (no validation, as for replication).

    Returns the transaction it completed, with the last stable offset right after it, so recovery can
    rewrite the transaction index; None otherwise.
    """
    result = None
    if header.producer_id >= 0:
        info = state.prepare_update(header.producer_id, AppendOrigin.REPLICATION)
        completed = None
        if header.is_control:
            completed = _apply_marker(info, header, view)
        else:
            last_seq = increment_sequence(header.base_sequence, header.last_offset_delta)
            info.append_data_batch(
                header.producer_epoch,
                header.base_sequence,
                last_seq,
                header.max_timestamp,
                header.base_offset,
                header.last_offset,
                header.is_transactional,
            )
        state.update(info)
        if completed is not None:
            result = (completed, state.last_stable_offset(completed))
            state.complete_txn(completed)
    state.map_end_offset = header.next_offset
    return result


def _apply_marker(
    info: ProducerAppendInfo, header: RecordBatchHeader, view: memoryview | bytes
) -> CompletedTxn | None:
    try:
        batch = RecordBatch.decode(view, 0, verify_crc=False)
        if not batch.records:
            return None  # compaction removed the marker's transaction entirely
        marker = read_end_transaction_marker(batch)
    except RecordsError:
        return None  # a control batch that is not a transaction marker
    return info.append_end_txn_marker(
        marker, header.producer_epoch, header.base_offset, batch.records[0].timestamp
    )
