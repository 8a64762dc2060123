"""Responses finished in one turn of the event loop leave in one write, in order; a connection that
closes still sends the answers it already gave."""

from __future__ import annotations

import array
import asyncio
import contextlib
import fcntl
import os
import socket
import termios
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from odradek.server.output import FLUSH_BYTES, ResponseOutput, ResponseWriter
from tests.support.response_writing import (
    PlainRegion,
    held_region,
    random_file,
    writer_and_peer,
    writer_and_tcp_peer,
)


class RecordingTransport:
    def __init__(self) -> None:
        self.writes: list[bytes] = []  # one entry per write call
        self.closing = False

    def write(self, data: bytes) -> None:
        self.writes.append(bytes(data))

    def writelines(self, data: list[bytes]) -> None:
        self.writes.append(b"".join(bytes(d) for d in data))

    def is_closing(self) -> bool:
        return self.closing

    def get_extra_info(self, name: str) -> object:
        return None  # no socket: nothing held by a kernel


def output(data: bytes) -> ResponseOutput:
    out = ResponseOutput()
    out += data
    return out


def test_responses_of_one_loop_turn_leave_in_one_write_in_order() -> None:
    async def scenario() -> list[bytes]:
        transport = RecordingTransport()
        writer = ResponseWriter(transport)  # type: ignore[arg-type]
        for data in (b"one", b"two", b"three"):
            await writer.send(output(data))
        assert transport.writes == []  # not yet: at the end of this turn
        await asyncio.sleep(0)
        await writer.send(output(b"four"))
        await asyncio.sleep(0)
        return transport.writes

    assert asyncio.run(scenario()) == [b"onetwothree", b"four"]


def test_pending_answers_go_out_before_an_immediate_one_and_not_after_loss() -> None:
    async def scenario() -> list[bytes]:
        transport = RecordingTransport()
        writer = ResponseWriter(transport)  # type: ignore[arg-type]
        await writer.send(output(b"first"))
        writer.write_now(output(b"second"))
        await writer.send(output(b"dropped"))
        writer.connection_lost()
        await asyncio.sleep(0)
        return transport.writes

    assert asyncio.run(scenario()) == [b"first", b"second"]


class NeverReadTransport(RecordingTransport):
    """asyncio's flow control over a client that reads nothing: everything written stays buffered, and
    past the high-water mark the writer is paused (for good)."""

    def __init__(self) -> None:
        super().__init__()
        self.writer: ResponseWriter | None = None
        self.aborted = False

    def write(self, data: bytes) -> None:
        super().write(data)
        self._flow_control()

    def writelines(self, data: list[bytes]) -> None:
        super().writelines(data)
        self._flow_control()

    def get_write_buffer_size(self) -> int:
        return sum(len(written) for written in self.writes)

    def abort(self) -> None:
        self.aborted = True

    def _flow_control(self) -> None:
        if self.writer is not None and self.get_write_buffer_size() > 64 * 1024:
            self.writer.pause_writing()


def test_answers_of_one_turn_are_written_once_they_reach_flush_bytes_and_send_then_waits() -> None:
    """A read of thousands of small requests answered in one turn of the loop held all the answers
    (megabytes) before writing any: now a client that does not read stops them at about 64 KiB."""

    async def scenario() -> None:
        transport = NeverReadTransport()
        writer = ResponseWriter(transport)  # type: ignore[arg-type]
        transport.writer = writer

        async def answer_all() -> None:
            for _ in range(1000):
                await writer.send(output(b"a" * 1024))

        answering = asyncio.create_task(answer_all())
        for _ in range(5):
            await asyncio.sleep(0)
        assert not answering.done()
        assert transport.get_write_buffer_size() <= 2 * FLUSH_BYTES
        assert writer.bytes_taken == 0 and writer.backed_up
        answering.cancel()

    asyncio.run(scenario())


def test_bytes_taken_are_those_written_less_those_the_transport_still_buffers() -> None:
    class Draining(RecordingTransport):
        buffered = 0

        def get_write_buffer_size(self) -> int:
            return self.buffered

    async def scenario() -> None:
        transport = Draining()
        writer = ResponseWriter(transport)  # type: ignore[arg-type]
        writer.write_now(output(b"x" * 1000))
        transport.buffered = 600
        assert writer.bytes_taken == 400
        transport.buffered = 0
        assert writer.bytes_taken == 1000

    asyncio.run(scenario())


def test_abort_drops_the_answers_not_yet_written() -> None:
    async def scenario() -> None:
        transport = NeverReadTransport()
        writer = ResponseWriter(transport)  # type: ignore[arg-type]
        await writer.send(output(b"never"))
        writer.abort()
        await asyncio.sleep(0)
        assert transport.aborted and transport.writes == []

    asyncio.run(scenario())


# ----- file regions on a real socket ----------------------------------------------------------------

REGION_BYTES = 8 * 1024 * 1024


async def _until(condition: object, seconds: float) -> None:
    """Let the loop run until `condition()` holds or `seconds` pass (the caller asserts it)."""
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:  # type: ignore[operator]
        await asyncio.sleep(0.01)


def _read_available(peer: socket.socket, most: int) -> int:
    try:
        return len(peer.recv(min(most, 65536)))
    except BlockingIOError:
        return 0


def test_a_file_region_being_sent_counts_what_the_client_takes_as_it_goes(tmp_path: Path) -> None:
    """Idle expiry asks how much of its answers the client has taken. A file region counted only each
    whole 1 MiB that loop.sendfile finished, so a consumer reading steadily but less than 1 MiB per
    connections.max.idle.ms looked idle and was closed in the middle of its answer. Kafka's Selector
    counts every time the socket takes more."""
    segment = random_file(tmp_path / "00000000000000000000.log", REGION_BYTES)

    async def scenario() -> tuple[int, int, int]:
        writer, transport, peer = await writer_and_peer()
        out = ResponseOutput()
        out += b"header"
        out.add_region(PlainRegion(segment, 0, REGION_BYTES))
        sending = asyncio.create_task(writer.send(out))
        await _until(lambda: writer.backed_up, 5)
        for _ in range(5):  # the socket's buffers fill; then nothing moves while the client reads nothing
            await asyncio.sleep(0.01)
        stuck = writer.bytes_taken
        peer.setblocking(False)
        read = 0
        deadline = time.monotonic() + 5
        while read < 512 * 1024 and time.monotonic() < deadline:  # half of what loop.sendfile was given
            got = _read_available(peer, 512 * 1024 - read)
            read += got
            await asyncio.sleep(0 if got else 0.005)
        await _until(lambda: writer.bytes_taken > stuck, 2)
        taken = writer.bytes_taken
        writer.abort()
        await asyncio.wait_for(sending, 5)
        assert transport.is_closing() and not sending.cancelled()
        peer.close()
        return stuck, read, taken

    try:
        stuck, read, taken = asyncio.run(scenario())
    finally:
        os.close(segment)
    assert read == 512 * 1024
    assert taken > stuck, f"the client took {read:,} bytes of the region and the writer counted none"


def test_a_region_its_file_no_longer_holds_closes_the_connection_instead_of_sending_the_rest_after_it(
    tmp_path: Path,
) -> None:
    """A log truncated after a fetch read it (a follower's truncation, a leader's log replaced) leaves a
    region longer than its file. The writer went on with the rest of the answer after the bytes it
    could send, so the client took the next bytes (the trailer, the next answer) for the missing
    records. Kafka's FileRecords.writeTo fails there and the connection closes."""
    segment = random_file(tmp_path / "00000000000000000000.log", 100_000)

    async def scenario() -> bytes:
        writer, _transport, peer = await writer_and_peer(peer_receive_buffer=1 << 20)
        out = ResponseOutput()
        out += b"header"
        out.add_region(PlainRegion(segment, 0, 1_000_000))  # read before the file was cut to 100,000
        out += b"trailer"
        await asyncio.wait_for(writer.send(out), 5)
        await writer.send(output(b"next answer"))
        peer.setblocking(False)
        received = bytearray()
        with contextlib.suppress(TimeoutError):  # the end of the stream, or what came within 2 s
            async with asyncio.timeout(2):
                while got := await asyncio.get_running_loop().sock_recv(peer, 1 << 20):
                    received += got
        peer.close()
        return bytes(received)

    try:
        received = asyncio.run(scenario())
    finally:
        os.close(segment)
    assert received == b"header" + received[6:100_006], f"{len(received):,} bytes, ending {received[-20:]!r}"
    assert len(received) == len(b"header") + 100_000


def test_answers_the_send_queue_holds_behind_a_client_that_stopped_reading_are_not_counted_as_taken() -> None:
    """Idle expiry asks whether the client still takes its answers. The writer counted what the kernel
    took as taken, and the kernel's send buffer grows to megabytes: a slow reader still draining the end
    of a large answer, the broker's part done, looked idle and was closed before it had it all. On TCP
    the kernel tells what its send queue holds unacknowledged (SIOCOUTQ): what waits there because the
    client's window is closed is not counted. What the client's kernel acknowledged counts, read or
    not (TCP does not tell): at most the client's receive window."""
    total = 1 << 20

    async def scenario() -> tuple[int, int, int, int]:
        writer, transport, peer = await writer_and_tcp_peer(peer_receive_buffer=4096)
        sending = asyncio.ensure_future(writer.send(output(b"x" * total)))
        # the kernel took what it could (the transport holds the rest, if any) and the client's window
        # is full
        await _until_still(lambda: (writer.handed - transport.get_write_buffer_size(), _unread(peer)), 5)
        kernel_took = writer.handed - transport.get_write_buffer_size()
        taken = writer.bytes_taken
        received = _unread(peer)  # after `taken`: the client's kernel acknowledges only what it holds
        peer.setblocking(False)
        read = 0
        deadline = time.monotonic() + 10
        while read < total and time.monotonic() < deadline:
            got = _read_available(peer, total - read)
            read += got
            await asyncio.sleep(0 if got else 0.005)
        await asyncio.wait_for(sending, 5)
        await _until(lambda: writer.bytes_taken == total, 5)
        finally_taken = writer.bytes_taken
        transport.abort()
        peer.close()
        return kernel_took, received, taken, finally_taken

    kernel_took, received, taken, finally_taken = asyncio.run(scenario())
    assert kernel_took > received  # the server's send queue held what the closed window kept back
    assert taken <= received, (
        f"{taken:,} bytes counted as taken; the client's kernel had received {received:,} of the "
        f"{kernel_took:,} the server's kernel took"
    )
    assert finally_taken == total


async def _until_still(value: Callable[[], object], seconds: float) -> None:
    """Let the loop run until `value()` stays the same over 5 polls 20 ms apart, or `seconds` pass."""
    deadline = time.monotonic() + seconds
    last, still = value(), 0
    while still < 5 and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
        current = value()
        still = still + 1 if current == last else 0
        last = current


def _unread(peer: socket.socket) -> int:
    """Bytes the client's kernel holds that the client has not read (FIONREAD)."""
    queued = array.array("i", [0])
    fcntl.ioctl(peer.fileno(), termios.FIONREAD, queued)
    return queued[0]


def test_a_region_copied_in_a_worker_thread_keeps_its_file_open_until_the_read_ends_despite_a_cancel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where sendfile cannot write (TLS), a region is read in pieces in a worker thread. The answer's
    task cancelled meanwhile (the connection closing) let go of the region, closing the file, while the
    read still ran on its descriptor: it read a closed descriptor, or whatever file the broker opened
    next under that number."""
    segment = random_file(tmp_path / "00000000000000000000.log", 1000)
    expected = os.pread(segment, 1000, 0)
    region = held_region(segment, 0, 1000)
    held_fd = region.fd
    reading, go_on = threading.Event(), threading.Event()
    reads: list[bytes | OSError] = []
    real_pread = os.pread

    def slow_pread(fd: int, size: int, position: int) -> bytes:
        reading.set()
        go_on.wait(10)
        try:
            piece = real_pread(fd, size, position)
        except OSError as error:
            reads.append(error)
            raise
        reads.append(piece)
        return piece

    monkeypatch.setattr(os, "pread", slow_pread)

    async def scenario() -> None:
        transport = RecordingTransport()  # no socket: the region is copied, as on TLS
        writer = ResponseWriter(transport)  # type: ignore[arg-type]
        out = ResponseOutput()
        out += b"header"
        out.add_region(region)
        sending = asyncio.ensure_future(writer.send(out))
        assert await asyncio.to_thread(reading.wait, 10)
        sending.cancel()
        await asyncio.wait([sending], timeout=1)  # the answer lets go of the region once it can
        go_on.set()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(sending, 10)

    try:
        asyncio.run(scenario())
    finally:
        go_on.set()
        os.close(segment)
    assert reads == [expected], f"the read of the region got {reads!r}"
    assert region.fd == -1 and _closed(held_fd)


def _closed(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return True
    return False
