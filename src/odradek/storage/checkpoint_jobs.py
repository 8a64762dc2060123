"""Offset checkpoint files written from worker threads, one job at a time and never going back.

``FlushScheduler.prepare_checkpoint`` (a LogManager's ``flushes``) captures, on the loop, what every
log dir's checkpoint files (recovery points, log start offsets, high watermarks, cleaner offsets) must
say, numbering each capture; ``CheckpointJob.run`` writes them in a worker thread. The periodic job
and a topic deletion's may run at once: they take turns, and a capture older than the last one written
is dropped, so the files never name again a partition deleted meanwhile.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

from odradek.storage.checkpoints import write_offset_checkpoint
from odradek.storage.partition import TopicPartition


@dataclass(slots=True)
class CheckpointJob:
    """The offset checkpoint files of every log dir, captured on the loop and written by ``run``."""

    files: list[tuple[Path, dict[TopicPartition, int]]]
    sequence: int = 0
    writer: CheckpointWriter | None = None

    def run(self) -> None:
        if self.writer is None:
            self._write()
            return
        with self.writer.lock:
            if self.sequence < self.writer.written:
                return
            self._write()
            self.writer.written = self.sequence

    def _write(self) -> None:
        for path, offsets in self.files:
            write_offset_checkpoint(path, offsets)


@dataclass(slots=True)
class CheckpointWriter:
    """What the jobs of one LogManager share: whose turn it is, the last capture written."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    written: int = 0
    captured: int = 0
