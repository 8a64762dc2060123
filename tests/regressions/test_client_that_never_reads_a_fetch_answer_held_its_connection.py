"""A client that never read its Fetch answer held its connection for ever: the answer's file region
waited in asyncio's sendfile for a socket that never drained, the connection counted as busy (never
idle), and aborting the transport under a sendfile left it waiting for good (asyncio never completes
a sendfile whose socket is closed under it), with the region's descriptor open.

Now the writer counts what the client takes (each piece the socket takes), so idle expiry sees a
client that stopped reading, and its `abort` ends the region under way: the answer ends, the region
closes.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from odradek.server.output import ResponseOutput
from tests.support.response_writing import held_region, writer_and_peer

pytestmark = pytest.mark.timeout(30)

REGION_BYTES = 8 * 1024 * 1024


@pytest.fixture
def segment(tmp_path: Path) -> int:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(os.urandom(REGION_BYTES))
    return os.open(path, os.O_RDONLY)


def test_a_writer_whose_client_stopped_reading_a_region_counts_no_progress_and_abort_ends_it(
    segment: int,
) -> None:
    async def scenario() -> None:
        writer, transport, peer = await writer_and_peer()
        region = held_region(segment, 0, REGION_BYTES)
        out = ResponseOutput()
        out += b"\x00\x00\x00\x00header"
        out.add_region(region)
        sending = asyncio.create_task(writer.send(out))
        for _ in range(5):
            await asyncio.sleep(0.01)
        assert not sending.done() and writer.backed_up
        stuck = writer.bytes_taken
        assert stuck < REGION_BYTES

        peer.setblocking(False)  # the client reads a little
        read = 0
        async with asyncio.timeout(10):
            while writer.bytes_taken <= stuck:
                try:
                    read += len(peer.recv(1 << 20))
                except BlockingIOError:
                    await asyncio.sleep(0.01)
        assert writer.bytes_taken > stuck

        writer.abort()  # as idle expiry does
        await asyncio.wait_for(sending, 5)  # waited for ever before the fix
        assert writer.lost and region.fd == -1 and transport.is_closing()
        peer.close()

    try:
        asyncio.run(scenario())
    finally:
        os.close(segment)
