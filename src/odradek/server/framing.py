"""Splitting a connection's byte stream into size-prefixed frames, with as few copies as possible.

Every connection of an event loop reads into one shared scratch buffer: asyncio asks a protocol for a
buffer, reads into it and reports the byte count in one synchronous step, so the scratch is free again
by the time the next connection reads. From there a small frame is copied out once, and the few bytes
of an incomplete one are kept by its connection until the rest arrives. A large frame (a produce
request, typically) gets a buffer of its own as soon as its size is known, and the socket then fills
that buffer directly: its records reach the log without being copied in Python. That buffer starts
small and doubles as the bytes arrive, so a peer that declares a huge frame and sends little makes the
broker hold only what it sent.

With `queued.max.request.bytes` set, every frame is also accounted in a `MemoryPool`: a large frame's
declared size is reserved before its buffer is made, and while the pool has nothing free a connection
reads no more than a size prefix (the connection then stops reading until memory is released).
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
        #: Bytes of an incomplete small frame (or size prefix), waiting for the rest.
        self.pending = bytearray()
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
        """Bytes reserved in the pool for the large frame being received (0 if none)."""
        return self.large_frame_size if self.large_frame is not None and self.pool is not None else 0

    def buffer_updated(self, nbytes: int) -> list[bytearray]:
        """The complete frames (without their size prefix) that the last `nbytes` read completed.

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
            buffer = self.pending
        else:
            buffer = self.scratch.buffer
        end = len(buffer) if buffer is self.pending else nbytes
        frames: list[bytearray] = []
        start = 0
        while end - start >= 4:
            (size,) = _SIZE.unpack_from(buffer, start)
            if size < 0 or size > self.max_frame_bytes:
                raise FrameSizeError(size)
            body = start + 4
            if end - body >= size:
                frames.append(buffer[body : body + size])
                if self.pool is not None:
                    self.pool.take(size)  # already read: accounted, never refused
                start = body + size
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
        elif start < end:
            self.pending = bytearray(self.scratch.view[start:end])
        return frames
