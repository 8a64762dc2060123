"""Offset checkpoint files written from worker threads, one job at a time and never going back.

``FlushScheduler.prepare_checkpoint`` (a LogManager's ``flushes``) captures, on the loop, what every
log dir's checkpoint files (recovery points, log start offsets, high watermarks, cleaner offsets) must
say, numbering each capture; ``CheckpointJob.run`` writes them in a worker thread. The periodic job
and a topic deletion's may run at once: they take turns, and a file is not written from a capture older
than the last one written to it, so the files never name again a partition deleted meanwhile (nor go
back). Per file: the high watermark job writes only its own, and must not void a truncation's
recovery points captured just before it.
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
            for path, offsets in self.files:
                write_offset_checkpoint(path, offsets)
            return
        with self.writer.lock:
            for path, offsets in self.files:
                if self.sequence < self.writer.written.get(path, 0):
                    continue
                write_offset_checkpoint(path, offsets)
                self.writer.written[path] = self.sequence


@dataclass(slots=True)
class CheckpointWriter:
    """What the jobs of one LogManager share: whose turn it is, each file's last capture written."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    written: dict[Path, int] = field(default_factory=dict)
    captured: int = 0
