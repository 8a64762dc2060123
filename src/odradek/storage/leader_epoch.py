"""The leader epoch cache: epoch -> first offset written in it, kept in ``leader-epoch-checkpoint``.

It answers OffsetForLeaderEpoch (``end_offset_for``) so a follower or a consumer can detect a diverged
log after a leader change. Entries are strictly increasing in both epoch and start offset.

Durability. Every change rewrites the file (temp file and rename) on the event loop without fsync:
Kafka fsyncs an epoch's assignment in the request thread, but an fsync on our one loop would stall
every connection (a failover assigns an epoch to each partition a broker takes over). The file is
fsynced by every flush of the log, before the recovery point may move past a batch of the new epoch
(the roll flush makes that prompt), and by the job after a truncation, before anything appends to the
log again (flush_scheduler.py; Kafka fsyncs it within truncateFullyAndStartAt, and after truncateTo
on its scheduler without waiting, KAFKA-15046). So the entries below the recovery point are always
durable, and only those above it can be lost. A process crash loses nothing (the page cache survives
it); a power loss may leave the previous file, or, the rename having reached the disk before the data,
an empty, zero-filled or cut-short one. The previous file can name epochs a truncation removed (a
power loss before the job after it) or miss newer ones: after an unclean shutdown ``load_log``
drops every entry from where recovery starts and takes those epochs from the recovered batches, as
the records are what the log holds. A damaged file is ``lost``: ``load_log`` rebuilds the cache from
the epochs stamped in the batches of the whole log, warns, and writes it back. Kafka takes the log dir
offline for an unreadable checkpoint; here a damaged file is what our own crash leaves, and the
batches hold everything it did, so refusing to start would only make an operator delete it by hand.
An epoch a leader assigned without writing a batch in it is not in the batches: after a crash it is
forgotten, which no follower can notice, since none holds records of it.
"""

from __future__ import annotations

import logging
from bisect import bisect_left, bisect_right
from pathlib import Path

from odradek.storage.checkpoints import (
    CheckpointFormatError,
    EpochEntry,
    read_leader_epoch_checkpoint,
    write_leader_epoch_checkpoint,
)
from odradek.storage.files import LEADER_EPOCH_CHECKPOINT

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1

_log = logging.getLogger(__name__)


class LeaderEpochCache:
    def __init__(
        self, partition_dir: Path, entries: list[EpochEntry] | None = None, *, lost: bool = False
    ) -> None:
        self.path = partition_dir / LEADER_EPOCH_CHECKPOINT
        self._entries: list[EpochEntry] = entries or []
        #: The checkpoint was missing or damaged at load: the log's batches must rebuild the entries.
        self.lost = lost

    @classmethod
    def load(cls, partition_dir: Path) -> LeaderEpochCache:
        path = partition_dir / LEADER_EPOCH_CHECKPOINT
        try:
            entries = read_leader_epoch_checkpoint(path)
        except CheckpointFormatError as e:
            _log.warning("rebuilding the leader epochs from the log's batches: %s (a power loss?)", e)
            return cls(partition_dir, lost=True)
        if entries is None:
            if path.exists():
                _log.warning("rebuilding the leader epochs from the log's batches: %s is empty", path)
            return cls(partition_dir, lost=True)
        return cls(partition_dir, entries)

    @property
    def entries(self) -> list[EpochEntry]:
        return list(self._entries)

    @property
    def latest_epoch(self) -> int | None:
        return self._entries[-1].epoch if self._entries else None

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` starts at ``start_offset``; returns whether the cache changed.

        As in Kafka, entries that the new one contradicts (an epoch at or above it, or a start offset at
        or beyond its start) are removed first, so the cache stays monotonic in both.
        """
        if epoch < 0:
            return False
        latest = self._entries[-1] if self._entries else None
        if latest is not None and epoch == latest.epoch and start_offset >= latest.start_offset:
            return False
        self._entries = [e for e in self._entries if e.epoch < epoch and e.start_offset < start_offset]
        self._entries.append(EpochEntry(epoch, start_offset))
        self.write(fsync=False)
        return True

    def epoch_for_offset(self, offset: int) -> int | None:
        """The epoch the record at ``offset`` was written in, if the cache knows it."""
        slot = bisect_right([e.start_offset for e in self._entries], offset) - 1
        return self._entries[slot].epoch if slot >= 0 else None

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, end offset) for OffsetForLeaderEpoch, following Kafka's rules.

        The end offset of an epoch is the start offset of the next larger epoch (the log end offset for
        the latest one); the epoch returned is the largest known epoch <= the requested one.
        """
        if requested_epoch == UNDEFINED_EPOCH or not self._entries:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if requested_epoch == self._entries[-1].epoch:
            return requested_epoch, log_end_offset
        epochs = [e.epoch for e in self._entries]
        higher = bisect_right(epochs, requested_epoch)
        if higher >= len(self._entries):
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        floor = higher - 1
        if floor < 0:
            # Older than anything we still know: the data is gone, point at the first known epoch.
            return requested_epoch, self._entries[higher].start_offset
        return self._entries[floor].epoch, self._entries[higher].start_offset

    def truncate_from_end(self, end_offset: int) -> None:
        """Forget epochs starting at or after ``end_offset`` (the log was truncated there)."""
        keep = [e for e in self._entries if e.start_offset < end_offset]
        if len(keep) != len(self._entries):
            self._entries = keep
            self.write(fsync=False)

    def truncate_from_start(self, start_offset: int) -> None:
        """The log now starts at ``start_offset``: drop epochs wholly before it and move the one that
        spans it to start there."""
        starts = [e.start_offset for e in self._entries]
        slot = bisect_left(starts, start_offset)
        if slot < len(starts) and starts[slot] == start_offset:
            keep = self._entries[slot:]
        elif slot == 0:
            return
        else:
            keep = [EpochEntry(self._entries[slot - 1].epoch, start_offset), *self._entries[slot:]]
        if keep != self._entries:
            self._entries = keep
            self.write(fsync=False)

    def clear(self) -> None:
        self._entries = []
        self.write(fsync=False)

    def write(self, *, fsync: bool = True, sync_directory: bool = True) -> None:
        # Written without fsync on the loop when it changes (see the module's docstring).
        write_leader_epoch_checkpoint(self.path, self._entries, fsync=fsync, sync_directory=sync_directory)
