"""Kafka's ``.txnindex``: the aborted transactions whose abort marker lies in a segment.

Each entry is 34 bytes, big-endian: version int16 (0), producer id int64, first offset int64, last
offset int64 (the abort marker), last stable offset int64 (the LSO when the marker was written).
A read_committed Fetch returns the aborted transactions overlapping the fetched range so the consumer
can drop their records. Like Kafka, the file exists only once a segment has an entry.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import NamedTuple

from odradek.storage.errors import CorruptIndexError
from odradek.storage.files import atomic_write, delete_if_exists, write_all

_ENTRY = struct.Struct(">hqqqq")
_VERSION = 0


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


class TransactionIndex:
    def __init__(self, path: Path, entries: list[AbortedTxn] | None = None) -> None:
        self.path = path
        self.entries: list[AbortedTxn] = entries or []

    @classmethod
    def load(cls, path: Path) -> TransactionIndex:
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return cls(path)
        if len(raw) % _ENTRY.size:
            raise CorruptIndexError(f"transaction index {path} has a partial entry")
        entries = []
        for version, *fields in _ENTRY.iter_unpack(raw):
            if version != _VERSION:
                raise CorruptIndexError(f"transaction index {path} has entry version {version}")
            entries.append(AbortedTxn(*fields))
        return cls(path, entries)

    def append(self, txn: AbortedTxn) -> None:
        if self.entries and txn.last_offset <= self.entries[-1].last_offset:
            raise ValueError(f"aborted transaction {txn} is not after {self.entries[-1]}")
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            write_all(fd, _ENTRY.pack(_VERSION, *txn), len(self.entries) * _ENTRY.size)
        finally:
            os.close(fd)
        self.entries.append(txn)

    def collect(self, fetch_offset: int, upper_bound_offset: int) -> tuple[list[AbortedTxn], bool]:
        """Aborted transactions overlapping [fetch_offset, upper_bound_offset), and whether the search
        is complete (an entry's LSO reached the upper bound, so later segments cannot add any)."""
        found = []
        for txn in self.entries:
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound_offset:
                found.append(txn)
            if txn.last_stable_offset >= upper_bound_offset:
                return found, True
        return found, False

    def truncate_to(self, offset: int) -> None:
        """Drop entries whose marker is at or after ``offset``."""
        keep = [t for t in self.entries if t.last_offset < offset]
        if len(keep) != len(self.entries):
            self._rewrite(keep)

    def reset(self) -> None:
        self._rewrite([])

    def flush(self) -> None:
        if self.entries and self.path.exists():
            fd = os.open(self.path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def rename(self, new_path: Path) -> None:
        if self.path.exists():
            os.rename(self.path, new_path)
        self.path = new_path

    def _rewrite(self, entries: list[AbortedTxn]) -> None:
        self.entries = entries
        if not entries:
            delete_if_exists(self.path)
            return
        # Replaced whole (a crash mid-write left a cut file); fsynced by the segment's next flush.
        atomic_write(self.path, b"".join(_ENTRY.pack(_VERSION, *t) for t in entries), fsync=False)
