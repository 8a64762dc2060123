"""Writing responses: plain bytes with one write, and Fetch's segment-file regions with sendfile.

A response is encoded into a ResponseOutput (a bytearray). Record data that lives in a segment file is
not copied into it: the codec calls the region's `append_to(out)`, which records where in the byte
stream the region belongs, and the writer then sends the bytes around it with the region itself going
from the page cache to the socket: one direct os.sendfile when nothing is queued before it, and
`loop.sendfile` for whatever the socket did not take at once.

Plain responses are not written one by one: those finished in the same turn of the event loop (a
producer's pipelined requests often arrive, and are answered, together) go out in one write at the end
of it, one system call instead of one each, or as soon as they reach `FLUSH_BYTES`, so that the
transport's flow control sees them and `send` waits while the client does not read.

The writer counts the bytes the kernel took from it (`bytes_taken`): the connection's idle expiry asks
whether the client still takes its answers. File regions go to `loop.sendfile` a chunk at a time for
that count, and `abort` cancels the task waiting in one (asyncio's sendfile never finishes on a
transport aborted under it): that task is the connection's own, so a region costs no task of its own.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any, Final, Protocol

#: Answers gathered for one write are written once they reach this much (asyncio's high-water mark).
FLUSH_BYTES: Final = 64 * 1024
#: A file region is handed to loop.sendfile this much at a time (see bytes_taken).
SENDFILE_CHUNK_BYTES: Final = 1024 * 1024


class FileRegion(Protocol):
    """A run of bytes in an open file: what a fetch serves without copying."""

    fd: int
    position: int
    length: int

    def __len__(self) -> int: ...


class ResponseOutput(bytearray):
    """An encoded response, with the file regions to splice in at recorded offsets."""

    regions: list[tuple[int, FileRegion]]
    #: Bytes of all regions: part of the response on the wire, not of this buffer (see frames.py).
    spliced_length: int

    def __init__(self) -> None:
        super().__init__()
        self.regions = []
        self.spliced_length = 0

    def add_region(self, region: FileRegion) -> None:
        self.regions.append((len(self), region))
        self.spliced_length += region.length


class ResponseWriter:
    """Writes responses to one transport, honouring its flow control."""

    def __init__(self, transport: asyncio.Transport) -> None:
        self.transport = transport
        self.paused = False
        self.drained: asyncio.Future[None] | None = None
        self.lost = False
        #: Plain responses finished in this turn of the loop, written together by `flush`.
        self.pending: list[ResponseOutput] = []
        self.pending_bytes = 0
        #: Bytes handed to the transport or sent with sendfile (see bytes_taken).
        self.handed = 0
        #: The task in loop.sendfile, if any: `abort` cancels it there.
        self.sending: asyncio.Task[Any] | None = None
        self.aborted = False

    def new_output(self) -> ResponseOutput:
        return ResponseOutput()

    def write_now(self, out: ResponseOutput) -> None:
        """Write a response that has no file regions, without waiting for the socket to drain."""
        assert not out.regions
        self.flush()
        self._write(out)

    def flush(self) -> None:
        """Write the pending plain responses (one write, whatever their number)."""
        pending = self.pending
        if not pending:
            return
        self.pending = []
        self.pending_bytes = 0
        if self.lost or self.transport.is_closing():
            return
        if len(pending) == 1:
            self._write(pending[0])
        else:
            self.transport.writelines(pending)
            self.handed += sum(len(out) for out in pending)

    def _write(self, data: bytes | bytearray | memoryview) -> None:
        self.transport.write(data)
        self.handed += len(data)

    @property
    def bytes_taken(self) -> int:
        """Bytes of answers the kernel has taken (what the transport still buffers is not): it grows
        only while the client reads. Counted per chunk for file regions."""
        return self.handed - self.transport.get_write_buffer_size()

    @property
    def backed_up(self) -> bool:
        """Whether answers wait for the client: over the transport's high-water mark, or a file region
        being sent."""
        return self.paused or self.sending is not None

    async def send(self, out: ResponseOutput) -> None:
        if self.lost:
            return
        if not out.regions:
            if not self.pending:
                asyncio.get_running_loop().call_soon(self.flush)
            self.pending.append(out)
            self.pending_bytes += len(out)
            if self.pending_bytes >= FLUSH_BYTES:
                self.flush()
        else:
            self.flush()
            await self._send_with_regions(out)
        if self.paused:
            await self._wait_drained()

    async def drain(self) -> None:
        """Wait until what was written is under the transport's high-water mark again."""
        if self.paused and not self.lost:
            await self._wait_drained()

    def close(self) -> None:
        """Close once the answers given are written (a file region under way cannot finish: abort)."""
        if self.sending is not None:
            self.abort()
            return
        self.flush()  # answers already given go out before the connection closes
        self.transport.close()

    def abort(self) -> None:
        """Close the transport at once, dropping what the client has not taken (answers, a file region
        under way)."""
        self.pending = []
        self.pending_bytes = 0
        self.aborted = True
        if self.sending is not None:
            # before the socket closes: the cancellation takes sendfile's callback off the selector
            self.sending.cancel()
        self.transport.abort()

    async def _send_with_regions(self, out: ResponseOutput) -> None:
        loop = asyncio.get_running_loop()
        view = memoryview(out)
        written = 0
        for at, region in out.regions:
            if at > written:
                self._write(view[written:at])
            written = at
            if region.length:
                await self._send_region(loop, region)
            if self.lost:
                return
        if written < len(out):
            self._write(view[written:])

    async def _send_region(self, loop: asyncio.AbstractEventLoop, region: FileRegion) -> None:
        # The region owns its (duplicated) descriptor: sendfile borrows it, the region closes it.
        try:
            sent = self._sendfile_now(region)
            self.handed += sent
            if sent < region.length:
                self.sending = asyncio.current_task()
                with os.fdopen(region.fd, "rb", buffering=0, closefd=False) as file:
                    position, end = region.position + sent, region.position + region.length
                    while position < end and not self.lost:
                        count = min(end - position, SENDFILE_CHUNK_BYTES)
                        self.handed += await loop.sendfile(
                            self.transport, file, position, count, fallback=True
                        )
                        position += count
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if not self.aborted or task is None:
                raise
            task.uncancel()  # abort's own cancellation, which ends this answer only
            self.lost = True
        except ConnectionError:
            # The client went away mid-response: drop the rest, as any write to a closed socket does.
            self.lost = True
            self.transport.abort()
        except RuntimeError:
            if not self.transport.is_closing():
                raise
            self.lost = True  # closed before this region started: sendfile says "Transport is closing"
        finally:
            self.sending = None
            close = getattr(region, "close", None)
            if close is not None:
                close()

    def _sendfile_now(self, region: FileRegion) -> int:
        """Send what the socket takes right away with one os.sendfile, when nothing is queued before it
        on a plain TCP transport; returns the bytes sent (the rest goes by loop.sendfile). Most fetch
        answers fit the socket's buffer, and this skips loop.sendfile's per-call set-up (pausing reads,
        registering the socket for writability, a future), which was most of the cost of serving them."""
        transport = self.transport
        if transport.get_write_buffer_size() or transport.get_extra_info("sslcontext") is not None:
            return 0
        sock = transport.get_extra_info("socket")
        if sock is None:
            return 0
        try:
            return os.sendfile(sock.fileno(), region.fd, region.position, region.length)
        except (BlockingIOError, InterruptedError):
            return 0
        except OSError as error:
            if isinstance(error, ConnectionError):
                raise
            return 0  # sendfile not possible for this file or socket: loop.sendfile's fallback copies

    def pause_writing(self) -> None:
        self.paused = True

    def resume_writing(self) -> None:
        self.paused = False
        if self.drained is not None and not self.drained.done():
            self.drained.set_result(None)
        self.drained = None

    def connection_lost(self) -> None:
        self.lost = True
        self.resume_writing()

    async def _wait_drained(self) -> None:
        if self.drained is None:
            self.drained = asyncio.get_running_loop().create_future()
        await self.drained
