"""Splitting a connection's byte stream into size-prefixed frames, with as few copies as possible.

Every connection of an event loop reads into one shared scratch buffer: asyncio asks a protocol for a
buffer, reads into it and reports the byte count in one synchronous step, so the scratch is free again
by the time the next connection reads. From there a small frame is copied out once, and the few bytes
of an incomplete one are kept by its connection until the rest arrives. A large frame (a produce
request, typically) gets a buffer of its own as soon as its size is known, and the socket then fills
that buffer directly: its records reach the log without being copied in Python. That buffer starts
small and doubles as the bytes arrive, so a peer that declares a huge frame and sends little makes the
broker hold only what it sent.

At most `MAX_FRAMES_AT_ONCE` frames are split off at a time: the rest of what a read brought stays in
`pending`, unsplit, until the connection has handled those and asks for `more_frames`. A read of
256 KiB may hold 18,000 tiny requests, and as Python objects they would take six times their bytes.

With `queued.max.request.bytes` set, every frame is also accounted in a `MemoryPool`: a large frame's
declared size is reserved before its buffer is made, a complete frame's size once it has been read
(split off or not), and while the pool has nothing free a connection reads no more than a size prefix
(the connection then stops reading until memory is released). Each frame is taken once, as Kafka
reserves each receive once: the reader remembers how far into `pending` the complete frames are
taken, so that each split looks only at the bytes that arrived since (a read of 17,000 tiny frames
would otherwise cost 17,000 / 32 walks of what is left).
"""

from __future__ import annotations

import struct
from typing import Final

from odradek.server.memory_pool import MemoryPool

_SIZE: Final = struct.Struct(">i")
#: The shared buffer's size: as much as asyncio reads at once by default.
SCRATCH_BYTES: Final = 256 * 1024
#: Frames at least this large are received into a buffer of their own (below: one copy from scratch).
DIRECT_FRAME_BYTES: Final = 16 * 1024
#: A large frame's buffer is allocated at this size (or its own, if smaller) and doubles as its bytes
#: arrive, so a peer that declares a huge frame and sends little cannot make the broker hold all of it.
INITIAL_FRAME_BYTES: Final = 64 * 1024
#: What a connection reads while the memory pool has nothing free: one size prefix at most.
_OUT_OF_MEMORY_READ_BYTES: Final = 4
#: Frames split off a connection's bytes at once (see the module doc).
MAX_FRAMES_AT_ONCE: Final = 32


class FrameSizeError(Exception):
    """A declared frame size that is negative or above the limit."""

    def __init__(self, size: int) -> None:
        super().__init__(f"declared frame size {size}")
        self.size = size


class ReadScratch:
    """The buffer all connections of one event loop read into."""

    def __init__(self, size: int = SCRATCH_BYTES) -> None:
        self.buffer = bytearray(size)
        self.view = memoryview(self.buffer)


class FrameReader:
    """One connection's framing state: what `get_buffer` hands the socket, and what came of it."""

    def __init__(self, scratch: ReadScratch, max_frame_bytes: int, pool: MemoryPool | None = None) -> None:
        self.scratch = scratch
        self.max_frame_bytes = max_frame_bytes
        #: With queued.max.request.bytes: every frame returned is reserved here until its owner releases it.
        self.pool = pool
        #: Bytes read and not yet split into frames: complete frames past MAX_FRAMES_AT_ONCE, then an
        #: incomplete small frame (or size prefix) waiting for the rest.
        self.pending = bytearray()
        #: Of the complete frames in `pending`, the bytes already taken from the pool, and where in
        #: `pending` those frames end (what lies past it has not been looked at yet).
        self.pending_reserved = 0
        self.reserved_end = 0
        #: A large frame being received, its declared size and how much of it has arrived.
        self.large_frame: bytearray | None = None
        self.large_frame_size = 0
        self.large_frame_filled = 0

    def get_buffer(self) -> memoryview:
        frame = self.large_frame
        if frame is None:
            if self.pool is not None and self.pool.exhausted:
                return self.scratch.view[:_OUT_OF_MEMORY_READ_BYTES]
            return self.scratch.view
        filled = self.large_frame_filled
        if filled == len(frame):  # allocated in part (see INITIAL_FRAME_BYTES): grow it
            frame.extend(bytes(min(len(frame), self.large_frame_size - filled)))
        return memoryview(frame)[filled:]

    @property
    def reserved_in_progress(self) -> int:
        """Bytes reserved in the pool for frames not handed out yet: the large frame being received and
        the complete frames waiting in `pending` (0 without a pool)."""
        if self.pool is None:
            return 0
        return self.pending_reserved + (self.large_frame_size if self.large_frame is not None else 0)

    def buffer_updated(self, nbytes: int) -> list[bytearray]:
        """The complete frames (without their size prefix) that the last `nbytes` read completed, at
        most MAX_FRAMES_AT_ONCE of them (`more_frames` gives the others).

        With a memory pool, each frame returned is reserved there (its owner releases it once handled);
        a large frame that cannot be reserved stays in `pending` until the connection reads again.
        Raises FrameSizeError for a declared size that is negative or above the limit."""
        frame = self.large_frame
        if frame is not None:
            self.large_frame_filled += nbytes
            if self.large_frame_filled < self.large_frame_size:
                return []
            self.large_frame = None
            return [frame]
        if self.pending:
            self.pending += self.scratch.view[:nbytes]
            return self._split(self.pending, len(self.pending))
        return self._split(self.scratch.buffer, nbytes)

    def more_frames(self) -> list[bytearray]:
        """The next complete frames among the bytes already read (as `buffer_updated`); [] when those
        hold none, and the connection must read again."""
        if self.large_frame is not None or len(self.pending) < 4:
            return []
        return self._split(self.pending, len(self.pending))

    def _split(self, buffer: bytearray, end: int) -> list[bytearray]:
        frames: list[bytearray] = []
        start = 0
        while end - start >= 4:
            (size,) = _SIZE.unpack_from(buffer, start)
            if size < 0 or size > self.max_frame_bytes:
                raise FrameSizeError(size)
            body = start + 4
            if end - body >= size:
                if len(frames) == MAX_FRAMES_AT_ONCE:
                    break
                frames.append(buffer[body : body + size])
                start = body + size
                if self.pool is not None:
                    self._account(size, reserved=buffer is self.pending and start <= self.reserved_end)
                continue
            if size >= DIRECT_FRAME_BYTES:
                if self.pool is not None and not self.pool.try_reserve(size):
                    break  # kept in pending; the connection stops reading until memory is released
                frame = bytearray(min(size, INITIAL_FRAME_BYTES))
                frame[: end - body] = memoryview(buffer)[body:end]
                self.large_frame, self.large_frame_size = frame, size
                self.large_frame_filled = end - body
                start = end
            break
        if buffer is self.pending:
            del self.pending[:start]
            self.reserved_end = max(self.reserved_end - start, 0)
        elif start < end:
            self.pending = bytearray(self.scratch.view[start:end])
        if len(frames) == MAX_FRAMES_AT_ONCE and self.pool is not None:
            self._reserve_pending()
        return frames

    def _account(self, size: int, reserved: bool) -> None:
        """Take a complete frame's size from the pool (already read: never refused), unless it was
        taken while the frame waited in `pending`."""
        assert self.pool is not None
        if reserved:
            self.pending_reserved -= size
        else:
            self.pool.take(size)

    def _reserve_pending(self) -> None:
        """Take from the pool the complete frames left in `pending` (they are read, so they count),
        looking only past those taken already."""
        assert self.pool is not None
        pending, at, complete = self.pending, self.reserved_end, 0
        while len(pending) - at >= 4:
            (size,) = _SIZE.unpack_from(pending, at)
            if size < 0 or len(pending) - at - 4 < size:
                break  # a bad size is refused when its turn comes; an incomplete frame is not read yet
            complete += size
            at += 4 + size
        self.reserved_end = at
        if complete:
            self.pool.take(complete)
            self.pending_reserved += complete
