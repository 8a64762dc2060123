"""The leader epoch cache: epoch -> first offset written in it, kept in ``leader-epoch-checkpoint``.

It answers OffsetForLeaderEpoch (``end_offset_for``) so a follower or a consumer can detect a diverged
log after a leader change. Entries are strictly increasing in both epoch and start offset.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from pathlib import Path

from odradek.storage.checkpoints import (
    CheckpointFormatError,
    EpochEntry,
    read_leader_epoch_checkpoint,
    unreadable_checkpoint,
    write_leader_epoch_checkpoint,
)
from odradek.storage.errors import LogStorageError
from odradek.storage.files import LEADER_EPOCH_CHECKPOINT

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


class LeaderEpochCache:
    def __init__(self, partition_dir: Path, entries: list[EpochEntry] | None = None) -> None:
        self.path = partition_dir / LEADER_EPOCH_CHECKPOINT
        self._entries: list[EpochEntry] = entries or []

    @classmethod
    def load(cls, partition_dir: Path) -> LeaderEpochCache:
        try:
            entries = read_leader_epoch_checkpoint(partition_dir / LEADER_EPOCH_CHECKPOINT)
        except CheckpointFormatError as e:
            # As Kafka (the log dir goes offline): after a clean shutdown nothing rebuilds the epochs,
            # and OffsetForLeaderEpoch would answer from a history with holes.
            raise LogStorageError(unreadable_checkpoint(e)) from e
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
        # Written without fsync on the loop when it changes; Log.flush fsyncs it off the loop, and
        # recovery re-derives epochs from batch headers above the recovery point anyway.
        write_leader_epoch_checkpoint(self.path, self._entries, fsync=fsync, sync_directory=sync_directory)
