"""What storage's helpers read and change of a ``Log``, as Protocols.

``log.py`` delegates its reads, appends, offset lookups by time, retention and truncation to helper
modules (``fetch``, ``log_append``, ``offsets_by_time``, ``retention``, ``truncation``); they take the
log through these Protocols, so that ``log.py`` imports them and none of them imports ``log.py``. As
Kafka's UnifiedLog, which hands its LocalLog and LogSegments to the code that works on them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from odradek.storage.config import LogConfig
from odradek.storage.files import Clock
from odradek.storage.leader_epoch import LeaderEpochCache
from odradek.storage.log_dir_failure import LogDirFailures
from odradek.storage.producer_state import ProducerStateManager
from odradek.storage.segment import LogSegment


class ReadableLog(Protocol):
    """A log's offsets, segments and leader epochs: what a Fetch and a ListOffsets read."""

    @property
    def log_start_offset(self) -> int: ...

    @property
    def log_end_offset(self) -> int: ...

    @property
    def high_watermark(self) -> int: ...

    @property
    def last_stable_offset(self) -> int: ...

    @property
    def segments(self) -> Sequence[LogSegment]: ...

    @property
    def leader_epoch_cache(self) -> LeaderEpochCache: ...

    @property
    def failures(self) -> LogDirFailures | None: ...

    def segment_index_for(self, offset: int) -> int: ...


class WritableLog(ReadableLog, Protocol):
    """What an append, retention and truncation change: the segments, the offsets, producer state."""

    cleaner_checkpoint: int | None

    @property
    def dir(self) -> Path: ...

    @property
    def config(self) -> LogConfig: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def producer_state(self) -> ProducerStateManager: ...

    @property
    def auto_high_watermark(self) -> bool: ...

    @property
    def active_segment(self) -> LogSegment: ...

    @property
    def recovery_point(self) -> int: ...

    @property
    def size_in_bytes(self) -> int: ...

    def roll(self) -> LogSegment: ...

    def update_high_watermark(self, high_watermark: int) -> int: ...

    def increment_log_start_offset(self, offset: int) -> None: ...

    def remove_segments(self, segments: Sequence[LogSegment]) -> list[LogSegment]: ...

    def reset_offsets(self, *, log_start_offset: int, recovery_point: int) -> None: ...

    def replace_all_segments(self, make_segment: Callable[[], LogSegment]) -> list[LogSegment]: ...
