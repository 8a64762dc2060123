"""A client that never read its Fetch answer held its connection for ever: the answer's file region
waited in asyncio's sendfile for a socket that never drained, the connection counted as busy (never
idle), and aborting the transport under a sendfile left it waiting for good (asyncio never completes
a sendfile whose socket is closed under it), with the region's descriptor open.

Now the writer counts what the client takes (per sendfile chunk), so idle expiry sees a client that
stopped reading, and its `abort` cancels the sendfile under way: the answer ends, the region closes.
"""

from __future__ import annotations

import asyncio
import os
import socket
from pathlib import Path

import pytest

from odradek.handlers.file_records import OwnedRegion
from odradek.server.output import SENDFILE_CHUNK_BYTES, ResponseOutput, ResponseWriter

pytestmark = pytest.mark.timeout(30)

REGION_BYTES = 8 * 1024 * 1024


class _Forwarding(asyncio.Protocol):
    """The flow-control half of the broker's Connection, enough to drive a ResponseWriter."""

    def __init__(self) -> None:
        self.writer: ResponseWriter | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.writer = ResponseWriter(transport)

    def connection_lost(self, exc: Exception | None) -> None:
        assert self.writer is not None
        self.writer.connection_lost()

    def pause_writing(self) -> None:
        assert self.writer is not None
        self.writer.pause_writing()

    def resume_writing(self) -> None:
        assert self.writer is not None
        self.writer.resume_writing()


@pytest.fixture
def segment(tmp_path: Path) -> int:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(os.urandom(REGION_BYTES))
    return os.open(path, os.O_RDONLY)


def test_a_writer_whose_client_stopped_reading_a_region_counts_no_progress_and_abort_ends_it(
    segment: int,
) -> None:
    async def scenario() -> None:
        ours, peer = socket.socketpair()
        peer.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        transport, protocol = await asyncio.get_running_loop().connect_accepted_socket(_Forwarding, ours)
        writer = protocol.writer
        assert writer is not None
        region = OwnedRegion(segment, 0, REGION_BYTES)
        out = ResponseOutput()
        out += b"\x00\x00\x00\x00header"
        out.add_region(region)
        sending = asyncio.create_task(writer.send(out))
        for _ in range(5):
            await asyncio.sleep(0.01)
        assert not sending.done() and writer.backed_up
        stuck = writer.bytes_taken
        assert stuck < REGION_BYTES

        peer.setblocking(False)  # the client reads a little: a chunk or more gets through
        read = 0
        async with asyncio.timeout(10):
            while writer.bytes_taken <= stuck:
                try:
                    read += len(peer.recv(1 << 20))
                except BlockingIOError:
                    await asyncio.sleep(0.01)
        assert writer.bytes_taken >= stuck + SENDFILE_CHUNK_BYTES

        writer.abort()  # as idle expiry does
        await asyncio.wait_for(sending, 5)  # waited for ever before the fix
        assert writer.lost and region.fd == -1 and transport.is_closing()
        peer.close()

    try:
        asyncio.run(scenario())
    finally:
        os.close(segment)
