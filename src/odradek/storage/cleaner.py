"""Log compaction (``cleanup.policy=compact``): keep the last record per key in the non-active part of
the log, drop tombstones once ``delete.retention.ms`` has passed since they were first cleaned.

Three steps, so the slow middle one runs in a worker thread while the event loop keeps serving:
``plan_cleaning`` (loop: picks the range and snapshots what it needs), ``run_cleaning`` (thread: reads
the immutable segments, writes the cleaned copies) and ``install_cleaning`` (loop: swaps them in).

What is cleanable: segments wholly below the first uncleanable offset, which is the smallest of the
active segment's base, the last stable offset (no open transaction is ever cleaned) and, with
``min.compaction.lag.ms``, the first segment holding a record younger than the lag. The "dirty" part
starts at the cleaner checkpoint. A log is cleaned when dirty bytes / cleanable bytes reaches
``min.cleanable.dirty.ratio``, when its oldest dirty record is older than ``max.compaction.lag.ms``, or
when a tombstone's delete horizon has passed.

Rules per record (as Kafka's cleaner): a keyed record is kept if no later record in the dirty part has
its key; records without a key are dropped; records of aborted transactions are dropped; a tombstone
(null value) is kept, and its batch stamped with a delete horizon (now + ``delete.retention.ms``, stored
in the base timestamp with the delete-horizon attribute, KIP-534) the first time it is cleaned, and
dropped by a cleaning after that horizon. Control batches (transaction markers) are kept. A producer's
last batch is kept (possibly empty) so its sequence state survives; so is each group's last batch, so a
cleaned segment ends at the same offset as the segments it replaces. Offsets never change: compaction
leaves gaps, as in Kafka.

Files: segments are cleaned in groups of consecutive segments totalling at most ``segment.bytes``; each
group becomes one segment written as ``<base>.log.cleaned`` (and its indexes), fsynced, renamed to
``.swap``; installing renames the old segments ``.deleted`` and the swap files to their final names.
The loader finishes or discards an interrupted swap (see ``log_loader``). A cleaning that fails
removes every file it wrote; the log manager then takes the dir offline for an OSError (Kafka's
LogCleaner) or marks the partition uncleanable for any other error.
"""

from __future__ import annotations

import hashlib
import os
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from odradek.protocol.records import RecordBatch, RecordBatchHeader, TimestampType
from odradek.storage.config import LogConfig
from odradek.storage.errors import LogStorageError
from odradek.storage.files import CLEANED_SUFFIX, SWAP_SUFFIX, fsync_dir
from odradek.storage.log import Log
from odradek.storage.segment import LogSegment
from odradek.storage.txn_index import AbortedTxn

_INT32_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True)
class CleaningPlan:
    """What ``run_cleaning`` needs, captured on the loop: immutable segments and a few facts."""

    directory: Path
    config: LogConfig
    now_ms: int
    segments: tuple[LogSegment, ...]
    first_dirty_offset: int
    end_offset: int
    aborted: tuple[AbortedTxn, ...]
    producer_last_offsets: Mapping[int, int]
    directory_inode: int = 0


@dataclass(slots=True)
class CleanedGroup:
    """Consecutive old segments and the one cleaned segment (files suffixed ``.swap``) replacing them."""

    old: tuple[LogSegment, ...]
    new: LogSegment


@dataclass(slots=True)
class CleaningResult:
    """The cleaned groups, the new first dirty offset, and the earliest tombstone delete horizon."""

    groups: list[CleanedGroup]
    end_offset: int
    delete_horizon: int | None
    records_removed: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
    installed: list[LogSegment] = field(default_factory=list)


def plan_cleaning(log: Log, now_ms: int | None = None, *, force: bool = False) -> CleaningPlan | None:
    """What to clean now, or None if the log does not need it (on the loop: in-memory work only)."""
    config = log.config
    if not config.compact:
        return None
    now = log.clock() if now_ms is None else now_ms
    segments = log.segments
    uncleanable = min(log.last_stable_offset, segments[-1].base_offset)
    if config.min_compaction_lag_ms > 0:
        for segment in segments:
            if segment.largest_timestamp > now - config.min_compaction_lag_ms:
                uncleanable = min(uncleanable, segment.base_offset)
                break
    cleanable = []
    for i, segment in enumerate(segments[:-1]):
        if segments[i + 1].base_offset > uncleanable:
            break
        cleanable.append(segment)
    if not cleanable:
        return None
    end = segments[len(cleanable)].base_offset
    first_dirty = min(max(log.cleaner_checkpoint or 0, log.log_start_offset), end)
    dirty = [s for s in cleanable if s.next_offset > first_dirty]
    dirty_bytes = sum(s.size for s in dirty)
    total_bytes = sum(s.size for s in cleanable)
    ratio = dirty_bytes / total_bytes if total_bytes else 0.0
    first_ts = dirty[0].first_batch_timestamp() if dirty else None
    overdue = first_ts is not None and first_ts >= 0 and now - first_ts > config.max_compaction_lag_ms
    horizon_passed = log.latest_delete_horizon is not None and now >= log.latest_delete_horizon
    if not (force or horizon_passed or (dirty and (ratio >= config.min_cleanable_dirty_ratio or overdue))):
        return None
    aborted = tuple(t for s in cleanable for t in s.txn_index.entries if t.first_offset < end)
    last_offsets = {pid: e.last_data_offset for pid, e in log.producer_state.producers.items()}
    inode = os.stat(log.dir).st_ino
    return CleaningPlan(
        log.dir, config, now, tuple(cleanable), first_dirty, end, aborted, last_offsets, inode
    )


def run_cleaning(plan: CleaningPlan) -> CleaningResult:
    """Write the cleaned segments (suffixed ``.swap``); file work only, safe in a worker thread."""
    result = CleaningResult([], plan.end_offset, None)
    try:
        offset_map = _build_offset_map(plan)
        aborted = _aborted_ranges(plan.aborted)
        for group in _group_segments(plan.segments, plan.config.segment_bytes):
            # A partition deleted (and perhaps recreated) meanwhile must not receive our .swap files.
            if os.stat(plan.directory).st_ino != plan.directory_inode:
                raise LogStorageError(f"{plan.directory} was replaced while it was being cleaned")
            new = LogSegment.create(
                plan.directory, group[0].base_offset, plan.config, plan.now_ms, suffix=CLEANED_SUFFIX
            )
            result.groups.append(CleanedGroup(tuple(group), new))
            _clean_group(plan, group, new, offset_map, aborted, result)
            new.on_become_inactive()
            new.flush()
            new.change_suffix(SWAP_SUFFIX)
        fsync_dir(plan.directory)
    except BaseException as failure:
        # Every group's files go, the earlier groups' `.swap` files too: complete segments a restart
        # would install once this cleaning failed, over what may be cleaned (or truncated) since. The
        # error is the caller's to classify (an OSError takes the dir offline); a `.swap` that cannot
        # be unlinked is the disk failing too, and its dir must not serve on with it in place.
        undeleted: OSError | None = None
        for cleaned in result.groups:
            try:
                cleaned.new.delete_files()
            except OSError as error:
                undeleted = undeleted or error
        if undeleted is not None and isinstance(failure, Exception) and not isinstance(failure, OSError):
            raise undeleted from failure
        raise
    return result


def install_cleaning(log: Log, result: CleaningResult) -> list[LogSegment]:
    """Swap the cleaned segments in (on the loop). Returns the replaced segments, renamed ``.deleted``:
    close and unlink them after ``file.delete.delay.ms`` (``LogSegment.delete_files``)."""
    replaced: list[LogSegment] = []
    complete = True
    for group in result.groups:
        if log.replace_segments(group.old, group.new):
            replaced.extend(group.old)
            result.installed.append(group.new)
        else:
            complete = False
            group.new.delete_files()
    if complete:
        log.cleaner_checkpoint = max(log.cleaner_checkpoint or 0, result.end_offset)
        log.latest_delete_horizon = result.delete_horizon
    return replaced


def compact(log: Log, now_ms: int | None = None, *, force: bool = False) -> CleaningResult | None:
    """Plan, run and install in one call, deleting replaced files at once (tests, tools)."""
    plan = plan_cleaning(log, now_ms, force=force)
    if plan is None:
        return None
    result = run_cleaning(plan)
    for segment in install_cleaning(log, result):
        segment.delete_files()
    return result


def _build_offset_map(plan: CleaningPlan) -> dict[bytes, int]:
    """Key digest -> offset of its last record in the dirty range (16-byte BLAKE2b digests keep the map
    small; like Kafka's MD5-based map, a collision is accepted as vanishingly unlikely)."""
    offsets: dict[bytes, int] = {}
    aborted = _aborted_ranges(plan.aborted)
    for segment in plan.segments:
        if segment.next_offset <= plan.first_dirty_offset:
            continue
        for _, header, view in segment.batches():
            if (
                header.last_offset < plan.first_dirty_offset
                or header.is_control
                or _is_aborted(header, aborted)
            ):
                continue
            for record in RecordBatch.decode(view, verify_crc=False).records:
                if record.key is not None and plan.first_dirty_offset <= record.offset < plan.end_offset:
                    offsets[_digest(record.key)] = record.offset
    return offsets


def _clean_group(
    plan: CleaningPlan,
    group: Sequence[LogSegment],
    new: LogSegment,
    offset_map: dict[bytes, int],
    aborted: dict[int, list[tuple[int, int]]],
    result: CleaningResult,
) -> None:
    last_segment = group[-1]
    for segment in group:
        result.bytes_before += segment.size
        batches = list(segment.batch_headers())
        for n, (position, header) in enumerate(batches):
            view = memoryview(segment.read_bytes(position, header.size))
            is_group_end = segment is last_segment and n == len(batches) - 1
            out = _clean_batch(plan, header, view, offset_map, aborted, is_group_end, result)
            if out is not None:
                max_header = RecordBatchHeader.read(out)
                new.append(header.last_offset, max_header.max_timestamp, header.last_offset, out)
                result.bytes_after += len(out)
        for txn in segment.txn_index.entries:
            new.txn_index.append(txn)


def _clean_batch(
    plan: CleaningPlan,
    header: RecordBatchHeader,
    view: memoryview,
    offset_map: dict[bytes, int],
    aborted: dict[int, list[tuple[int, int]]],
    is_group_end: bool,
    result: CleaningResult,
) -> memoryview | bytes | None:
    if header.is_control:
        return view
    batch = RecordBatch.decode(view, verify_crc=False)
    horizon = batch.base_timestamp if batch.has_delete_horizon else None
    drop_tombstones = horizon is not None and plan.now_ms >= horizon
    if _is_aborted(header, aborted):
        kept = []
    else:
        kept = [
            r
            for r in batch.records
            if r.key is not None
            and offset_map.get(_digest(r.key), -1) <= r.offset
            and (r.value is not None or not drop_tombstones)
        ]
    has_tombstones = any(r.value is None for r in kept)
    needs_horizon = has_tombstones and horizon is None
    if has_tombstones:
        new_horizon = plan.now_ms + plan.config.delete_retention_ms if needs_horizon else horizon
        if new_horizon is not None and (result.delete_horizon is None or new_horizon < result.delete_horizon):
            result.delete_horizon = new_horizon
    result.records_removed += len(batch.records) - len(kept)
    if len(kept) == len(batch.records) and not needs_horizon:
        return view
    keep_empty = is_group_end or (
        header.producer_id >= 0 and plan.producer_last_offsets.get(header.producer_id) == header.last_offset
    )
    if not kept and not keep_empty:
        return None
    batch.records = kept
    if needs_horizon:
        batch.has_delete_horizon = True
        batch.base_timestamp = plan.now_ms + plan.config.delete_retention_ms
    if kept and batch.timestamp_type is TimestampType.CREATE_TIME:
        batch.max_timestamp = max(r.timestamp for r in kept)
    return batch.encode()


def _group_segments(segments: Sequence[LogSegment], max_size: int) -> list[list[LogSegment]]:
    groups: list[list[LogSegment]] = []
    for segment in segments:
        current = groups[-1] if groups else None
        if (
            current is not None
            and sum(s.size for s in current) + segment.size <= max_size
            and segment.next_offset - current[0].base_offset <= _INT32_MAX
        ):
            current.append(segment)
        else:
            groups.append([segment])
    return groups


def _aborted_ranges(aborted: Sequence[AbortedTxn]) -> dict[int, list[tuple[int, int]]]:
    ranges: dict[int, list[tuple[int, int]]] = {}
    for txn in aborted:
        ranges.setdefault(txn.producer_id, []).append((txn.first_offset, txn.last_offset))
    for spans in ranges.values():
        spans.sort()
    return ranges


def _is_aborted(header: RecordBatchHeader, aborted: dict[int, list[tuple[int, int]]]) -> bool:
    if not header.is_transactional:
        return False
    spans = aborted.get(header.producer_id)
    if not spans:
        return False
    i = bisect_right(spans, (header.base_offset, 2**63)) - 1
    return i >= 0 and spans[i][0] <= header.base_offset <= spans[i][1]


def _digest(key: bytes) -> bytes:
    return hashlib.blake2b(key, digest_size=16).digest()
