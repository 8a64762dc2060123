"""A client that went away while its Fetch response was being sent by sendfile made the broker log an
"unexpected error" with a traceback (ConnectionError "Connection closed by peer", or RuntimeError
"Transport is closing" when the transport closed between two regions): a normal disconnect, found by
bench/bad_input.py, that must end the response quietly like any write to a closed connection.
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


def _response_with_region(fd: int) -> ResponseOutput:
    out = ResponseOutput()
    out += b"\x00\x00\x00\x00header"
    out.add_region(held_region(fd, 0, REGION_BYTES))
    out += b"trailer"
    return out


@pytest.fixture
def segment(tmp_path: Path) -> int:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(os.urandom(REGION_BYTES))
    return os.open(path, os.O_RDONLY)


def test_peer_closing_in_the_middle_of_a_sendfile_region_ends_the_response_quietly(segment: int) -> None:
    async def scenario() -> bool:
        writer, transport, peer = await writer_and_peer()
        sending = asyncio.create_task(writer.send(_response_with_region(segment)))
        for _ in range(3):  # 8 MiB cannot fit in the socket buffers of a peer that does not read
            await asyncio.sleep(0)
        assert not sending.done()
        peer.close()
        await asyncio.wait_for(sending, 10)  # raised ConnectionError before the fix
        transport.close()
        return writer.lost

    try:
        assert asyncio.run(scenario())
    finally:
        os.close(segment)


def test_a_transport_closed_before_a_region_starts_ends_the_response_quietly(segment: int) -> None:
    async def scenario() -> bool:
        writer, transport, peer = await writer_and_peer()
        transport.close()  # closing, and connection_lost not yet delivered (it is scheduled)
        async with asyncio.timeout(10):  # no new task: send runs before connection_lost
            await writer.send(_response_with_region(segment))  # raised RuntimeError before the fix
        peer.close()
        return writer.lost

    try:
        assert asyncio.run(scenario())
    finally:
        os.close(segment)
