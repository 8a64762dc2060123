"""FlushJob: the fsyncs behind ``flush.messages``/``flush.ms``, separable from the event loop.

``Log.prepare_flush`` (on the loop) lists the segments and small files written since the recovery
point; ``FlushJob.run`` (in a worker thread) fsyncs them; ``Log.complete_flush`` (on the loop) moves the
recovery point, so a later start only recovers what was not fsynced.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass, field
from pathlib import Path

from odradek.storage.files import fsync_dir
from odradek.storage.segment import LogSegment


@dataclass(slots=True)
class FlushJob:
    """fsyncs for ``Log.flush``: built on the loop, ``run`` anywhere, then ``Log.complete_flush``."""

    flush_offset: int
    segments: list[LogSegment]
    files: list[Path] = field(default_factory=list)
    directory: Path | None = None
    #: The log's truncation count when the job was prepared (``Log.complete_flush`` compares it).
    truncations: int = 0

    def run(self) -> None:
        for segment in self.segments:
            if segment.closed:
                continue
            try:
                segment.flush()
            except (FileNotFoundError, OSError) as e:
                # Deleted (and closed after file.delete.delay.ms) while we waited: nothing to keep.
                if not segment.closed and e.errno not in (errno.EBADF, errno.ENOENT):
                    raise
        for path in self.files:
            try:
                fd = os.open(path, os.O_RDONLY)
            except FileNotFoundError:
                continue
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        if self.directory is not None:
            fsync_dir(self.directory)
