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
from odradek.storage.errors import LogStorageError
from odradek.storage.log_dir_failure import LogDirFailures
from odradek.storage.partition import TopicPartition


class CheckpointWriteError(LogStorageError):
    """Some checkpoint files could not be written: the log dirs they are in have failed (the files of
    the other dirs were written)."""

    def __init__(self, failures: dict[Path, OSError]) -> None:
        super().__init__(
            "writing the offset checkpoints failed in "
            + ", ".join(f"{log_dir}: {error}" for log_dir, error in failures.items())
        )
        #: Each failed log dir with the first error seen there.
        self.failures = failures

    @property
    def log_dirs(self) -> list[Path]:
        return list(self.failures)


@dataclass(slots=True)
class CheckpointJob:
    """The offset checkpoint files of every log dir, captured on the loop and written by ``run``."""

    files: list[tuple[Path, dict[TopicPartition, int]]]
    sequence: int = 0
    writer: CheckpointWriter | None = None
    #: Where a failed dir is reported (it goes offline); None: only raised.
    failures: LogDirFailures | None = None

    def run(self) -> None:
        """Write every file; one that fails does not stop the others (its dir has failed, theirs has
        not). Raises CheckpointWriteError naming the failed dirs."""
        failures: dict[Path, OSError] = {}
        if self.writer is None:
            for path, offsets in self.files:
                _write(path, offsets, failures)
        else:
            with self.writer.lock:
                for path, offsets in self.files:
                    if self.sequence < self.writer.written.get(path, 0):
                        continue
                    if _write(path, offsets, failures):
                        self.writer.written[path] = self.sequence
        if failures:
            raised = CheckpointWriteError(failures)
            if self.failures is not None:
                for log_dir, error in failures.items():
                    self.failures.mark_offline(log_dir, error)
            raise raised


def _write(path: Path, offsets: dict[TopicPartition, int], failures: dict[Path, OSError]) -> bool:
    if path.parent in failures:
        return False  # one error per dir is enough: the dir is going offline
    try:
        write_offset_checkpoint(path, offsets)
    except OSError as error:
        failures[path.parent] = error
        return False
    return True


@dataclass(slots=True)
class CheckpointWriter:
    """What the jobs of one LogManager share: whose turn it is, each file's last capture written."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    written: dict[Path, int] = field(default_factory=dict)
    captured: int = 0
