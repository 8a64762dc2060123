"""The receiving side of a replica fetcher's connection: size-prefixed response frames, each read by
the socket straight into a bytearray of its own (Kafka's NetworkReceive).

A Fetch response is mostly record batches on their way to a segment. Read through a StreamReader,
each megabyte was copied three times in Python (into the reader's buffer, out of it, and once more by
the decoder) and the reader paused and resumed the socket as its buffer filled: together more CPU
than the leader spent on the same bytes. Here the transport calls `get_buffer`, the kernel copies into
the frame's own bytearray, and the decoder's records fields are views of it (protocol/frames.py), so
the records' only copies are the kernel's: socket to frame, frame to page cache.

Requests go one at a time, so at most one frame is awaited; one that arrives early is kept. The size
prefix is read on its own (4 bytes) so that a read never spans two frames.
"""

from __future__ import annotations

import asyncio
import collections
import struct
from typing import Final

_SIZE: Final = struct.Struct(">i")
#: A frame is allocated at its declared size up to this, else here and doubled as its bytes arrive: a
#: peer that declares a huge frame and sends little makes this broker hold only what it sent.
PREALLOCATED_FRAME_BYTES: Final = 16 << 20


class ResponseReceiver(asyncio.BufferedProtocol):
    """Set as the protocol of a connected `transport` (`transport.set_protocol`), after any handshake."""

    def __init__(
        self, transport: asyncio.BaseTransport, preallocated_frame_bytes: int = PREALLOCATED_FRAME_BYTES
    ) -> None:
        self.transport = transport
        self.preallocated_frame_bytes = preallocated_frame_bytes
        self._prefix = bytearray(_SIZE.size)
        #: The frame being received (None: its size prefix is), its declared size and bytes so far.
        self._frame: bytearray | None = None
        self._size = 0
        self._filled = 0
        self._ready: collections.deque[bytearray] = collections.deque()
        self._waiter: asyncio.Future[bytearray] | None = None
        self._lost: OSError | None = None

    async def next_frame(self) -> bytearray:
        """The next response frame (without its size prefix); raises OSError once the connection is
        lost or sent an impossible size."""
        if self._ready:
            return self._ready.popleft()
        if self._lost is not None:
            raise self._lost
        waiter: asyncio.Future[bytearray] = asyncio.get_running_loop().create_future()
        self._waiter = waiter
        try:
            return await waiter
        finally:
            self._waiter = None

    # ----- asyncio.BufferedProtocol --------------------------------------------------------------------

    def get_buffer(self, sizehint: int) -> memoryview:
        frame = self._frame
        if self._lost is not None:  # bytes after an impossible size prefix: read and dropped
            return memoryview(bytearray(sizehint if sizehint > 0 else 4096))
        if frame is None:
            return memoryview(self._prefix)[self._filled :]
        if self._filled == len(frame):  # allocated in part: grow it
            frame.extend(bytes(min(len(frame), self._size - self._filled)))
        return memoryview(frame)[self._filled :]

    def buffer_updated(self, nbytes: int) -> None:
        self._filled += nbytes
        if self._frame is None:
            if self._filled < len(self._prefix):
                return
            (size,) = _SIZE.unpack(self._prefix)
            if size < 0:
                self._fail(ConnectionError(f"the leader sent a frame of size {size}"))
                return
            self._frame = bytearray(min(size, self.preallocated_frame_bytes))
            self._size, self._filled = size, 0
        if self._filled < self._size:
            return
        frame, self._frame, self._filled = self._frame, None, 0
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(frame)
        else:
            self._ready.append(frame)

    def eof_received(self) -> bool:
        return False  # the transport closes; connection_lost tells the waiter

    def connection_lost(self, exc: Exception | None) -> None:
        closed = ConnectionResetError("the leader closed the connection")
        self._fail(exc if isinstance(exc, OSError) else closed)

    def _fail(self, error: OSError) -> None:
        if self._lost is None:
            self._lost = error
            self.transport.close()
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_exception(self._lost)
