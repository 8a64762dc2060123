"""Writing responses: plain bytes with one write, and Fetch's segment-file regions with sendfile.

A response is encoded into a ResponseOutput (a bytearray). Record data that lives in a segment file is
not copied into it: the codec calls the region's `append_to(out)`, which records where in the byte
stream the region belongs, and the writer then sends the bytes around it with the region itself going
from the page cache to the socket by os.sendfile, as much as the socket takes each time it is
writable (on TLS, where the kernel cannot encrypt, the region is read in pieces and written). When
sendfile fails other than by the socket, the rest of the region is read instead: a read failing too is
the disk's, told to the region (`read_failed`: its log dir goes offline, later fetches answer
KAFKA_STORAGE_ERROR; Kafka only closes the connection), and the connection closes.

Plain responses are not written one by one: those finished in the same turn of the event loop (a
producer's pipelined requests often arrive, and are answered, together) go out in one write at the end
of it, one system call instead of one each, or as soon as they reach `FLUSH_BYTES`, so that the
transport's flow control sees them and `send` waits while the client does not read.

The writer counts the bytes of answers the client has taken (`bytes_taken`): the connection's idle
expiry asks whether the client still reads, and, as Kafka's Selector refreshes a channel on every write
readiness, each piece the socket takes of a region counts at once. loop.sendfile was not used for that
reason: it reports nothing until a whole call is done, so a client reading steadily but less than one
call's bytes per `connections.max.idle.ms` looked idle. Beyond Kafka, what the socket's send queue
still holds unacknowledged by the client's kernel (Linux's SIOCOUTQ on TCP: not sent yet, as while the
client's receive window is closed, or sent and not acknowledged) is not counted as taken: that buffer
is `socket.send.buffer.bytes` (100 KiB, as Kafka's), but with -1 it is left to the kernel's autotuning
(up to net.ipv4.tcp_wmem's 4 MiB), and a slow reader still draining megabytes the kernel took at the
end of its answer would otherwise look idle. What the client's kernel acknowledged counts, read by the client
or not: TCP does not tell, and that is at most its receive window.
"""

from __future__ import annotations

import array
import asyncio
import fcntl
import logging
import os
import termios
from typing import Final, Protocol

log = logging.getLogger("odradek.connection")

#: Answers gathered for one write are written once they reach this much (asyncio's high-water mark).
FLUSH_BYTES: Final = 64 * 1024
#: Where a region cannot go by sendfile (TLS), it is read and written this much at a time.
COPY_PIECE_BYTES: Final = 256 * 1024


class FileRegion(Protocol):
    """A run of bytes in an open file: what a fetch serves without copying."""

    fd: int
    position: int
    length: int

    def __len__(self) -> int: ...

    def close(self) -> None:
        """Sent or dropped: the writer is done with the file."""

    def read_failed(self, error: OSError) -> None:
        """The file could not be read (the disk, never the socket): its owner takes it out of service."""


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
        #: The task sending a region while the socket is full, if any (see backed_up).
        self.sending: asyncio.Task[None] | None = None
        #: What that task waits for: the socket writable again, the transport drained, or the end.
        self.waiting: asyncio.Future[None] | None = None

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
        """Bytes of answers the client's kernel has acknowledged: neither what the transport still
        buffers nor what the socket's send queue holds unacknowledged. Once the client stops reading,
        it stops growing when the client's receive window is full."""
        return self.handed - self.transport.get_write_buffer_size() - self._unacknowledged()

    def _unacknowledged(self) -> int:
        """Bytes in the socket's send queue the peer has not acknowledged (Linux's SIOCOUTQ: on TCP,
        those not sent yet and those sent but not acknowledged); 0 where that cannot be asked (then the
        kernel's buffer counts as taken, as in Kafka)."""
        sock = self.transport.get_extra_info("socket")
        fd = -1 if sock is None else sock.fileno()  # -1 once closed: never another connection's socket
        if fd < 0:
            return 0
        queued = array.array("i", [0])
        try:
            fcntl.ioctl(fd, termios.TIOCOUTQ, queued)
        except OSError:
            return 0
        return queued[0]

    @property
    def backed_up(self) -> bool:
        """Whether answers wait for the client: over the transport's high-water mark, or a file region
        being sent."""
        return self.paused or self.sending is not None

    async def send(self, out: ResponseOutput) -> None:
        if self.lost:
            for _, region in out.regions:
                region.close()
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
        self.lost = True
        self._wake()  # a region under way ends (and lets go of the socket) before the transport closes it
        self.transport.abort()

    async def _send_with_regions(self, out: ResponseOutput) -> None:
        view = memoryview(out)
        written = 0
        try:
            for at, region in out.regions:
                if self.lost:
                    return
                if at > written:
                    self._write(view[written:at])
                written = at
                if region.length:
                    await self._send_region(region)
            if written < len(out) and not self.lost:
                self._write(view[written:])
        finally:
            for _, region in out.regions:
                region.close()

    async def _send_region(self, region: FileRegion) -> None:
        if self.transport.is_closing():
            self.lost = True  # closed before this region started: the rest of the answer cannot follow
            return
        try:
            fd = self._plain_socket_fd()
            rest = region.position if fd is None else await self._sendfile(fd, region)
            if rest is not None:
                await self._copy(region, rest)
        except ConnectionError:
            # The client went away mid-response: drop the rest, as any write to a closed socket does.
            self.lost = True
            self.transport.abort()
        except OSError as error:  # the segment file could not be read: the answer cannot be completed
            self._end_answer("reading a fetched region failed: %s", error)
        finally:
            self.sending = None

    def _plain_socket_fd(self) -> int | None:
        """The transport's socket when os.sendfile can write to it (not through TLS)."""
        if self.transport.get_extra_info("sslcontext") is not None:
            return None
        sock = self.transport.get_extra_info("socket")
        return None if sock is None else int(sock.fileno())

    async def _sendfile(self, fd: int, region: FileRegion) -> int | None:
        """Send `region` with os.sendfile, as much as the socket takes each time it is writable; None
        once done, or the position from which the rest is to be copied (sendfile failed: its error
        does not say whether the file or the socket did, and reading the file tells)."""
        position, end = region.position, region.position + region.length
        watched = -1
        try:
            while position < end and not self.lost:
                sent = 0
                if not self.transport.get_write_buffer_size():  # else what the transport holds goes first
                    try:
                        sent = os.sendfile(fd, region.fd, position, end - position)
                    except (BlockingIOError, InterruptedError):
                        pass
                    except ConnectionError:
                        raise
                    except OSError:
                        # a file sendfile cannot read (copied instead), or a disk error the copy's
                        # read meets again (and reports): beyond Kafka, whose transferTo error only
                        # closes the connection, a disk failing under a fetch takes its dir offline
                        return position
                    else:
                        if sent == 0:
                            self._end_answer("a fetched region ends %d bytes early", end - position)
                            return None
                if sent:
                    position += sent
                    self.handed += sent
                    continue
                if watched < 0:
                    # The selector refuses a transport's own descriptor: a duplicate is watched instead.
                    watched = os.dup(fd)
                await self._until_writable(watched)
        finally:
            if watched >= 0:
                os.close(watched)
        return None

    async def _until_writable(self, watched: int) -> None:
        loop = asyncio.get_running_loop()
        self.sending = asyncio.current_task()
        self.waiting = loop.create_future()
        loop.add_writer(watched, self._wake)
        try:
            await self.waiting
        finally:
            loop.remove_writer(watched)
            self.waiting = None

    async def _copy(self, region: FileRegion, position: int) -> None:
        """Read `region` from `position` in pieces (in a worker thread: the disk may be slow) and write
        them, waiting while the transport is over its high-water mark. A read error is the file's."""
        loop = asyncio.get_running_loop()
        end = region.position + region.length
        # (closing: the socket failed under sendfile, its loss not delivered yet: nothing to read for)
        while position < end and not self.lost and not self.transport.is_closing():
            size = min(end - position, COPY_PIECE_BYTES)
            try:
                piece = await _to_the_end(loop.run_in_executor(None, os.pread, region.fd, size, position))
            except OSError as error:
                region.read_failed(error)
                raise
            if self.lost:
                return
            if not piece:
                self._end_answer("a fetched region ends %d bytes early", end - position)
                return
            self._write(piece)
            position += len(piece)
            if self.paused:
                self.sending = asyncio.current_task()
                await self._wait_drained()

    def _end_answer(self, reason: str, detail: object) -> None:
        """The answer cannot be completed (a log truncated after the fetch read it, a disk error) and
        whatever followed would be taken for its missing bytes: the connection closes, as Kafka's does."""
        peer = self.transport.get_extra_info("peername")
        where = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        log.warning("closing connection from %s: " + reason, where, detail)
        self.lost = True
        self.transport.abort()

    def _wake(self) -> None:
        waiting = self.waiting
        if waiting is not None and not waiting.done():
            waiting.set_result(None)

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
        self._wake()

    async def _wait_drained(self) -> None:
        if self.drained is None:
            self.drained = asyncio.get_running_loop().create_future()
        await self.drained


async def _to_the_end(read: asyncio.Future[bytes]) -> bytes:
    """Await a read running in a worker thread until it has ended, even when cancelled meanwhile (the
    cancellation is raised after): a thread cannot be stopped, and the caller lets go of the region's
    file once this returns, which would close the descriptor the read still uses (or let another
    file take its number)."""
    cancelled = False
    while not read.done():
        try:
            await asyncio.wait((read,))
        except asyncio.CancelledError:
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError
    return read.result()
