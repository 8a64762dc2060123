"""A replica fetcher's receiving side: size-prefixed frames read by the socket straight into a
bytearray of their own, whatever the reads' sizes, and a declared size that is impossible or larger
than what arrives never makes the follower allocate more than it was sent."""

from __future__ import annotations

import asyncio
import struct

import pytest

from odradek.cluster.replication.response_receiver import ResponseReceiver


class _Transport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.closed = False

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed


def _frame(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


def _feed(receiver: ResponseReceiver, data: bytes, read_size: int) -> None:
    """What a transport does: ask for a buffer, read at most `read_size` bytes into it, report them."""
    pos = 0
    while pos < len(data):
        buffer = receiver.get_buffer(-1)
        assert len(buffer) > 0
        n = min(len(buffer), read_size, len(data) - pos)
        buffer[:n] = data[pos : pos + n]
        del buffer  # as a transport's: released before the next read (a frame may grow)
        receiver.buffer_updated(n)
        pos += n


@pytest.mark.parametrize("read_size", [1, 3, 7, 4096, 1 << 20])
def test_frames_are_whole_whatever_the_sizes_of_the_reads(read_size: int) -> None:
    async def main() -> None:
        receiver = ResponseReceiver(_Transport())
        bodies = [b"", b"x" * 5, bytes(range(256)) * 300]
        _feed(receiver, b"".join(_frame(body) for body in bodies), read_size)
        for body in bodies:  # frames that arrived before anyone asked are kept, in order
            frame = await receiver.next_frame()
            assert frame.__class__ is bytearray
            assert frame == body

    asyncio.run(main())


def test_a_read_never_spans_two_frames() -> None:
    receiver = ResponseReceiver(_Transport())
    assert len(receiver.get_buffer(-1)) == 4  # the size prefix alone
    _feed(receiver, struct.pack(">i", 10), 4)
    assert len(receiver.get_buffer(-1)) == 10  # then exactly the frame's bytes


def test_an_awaited_frame_is_delivered_when_its_last_byte_arrives() -> None:
    async def main() -> None:
        receiver = ResponseReceiver(_Transport())
        waiting = asyncio.ensure_future(receiver.next_frame())
        await asyncio.sleep(0)
        _feed(receiver, _frame(b"answer")[:7], 1 << 20)
        await asyncio.sleep(0)
        assert not waiting.done()
        _feed(receiver, _frame(b"answer")[7:], 1 << 20)
        assert await waiting == b"answer"

    asyncio.run(main())


def test_a_frame_declared_larger_than_what_arrives_holds_only_a_bounded_buffer() -> None:
    receiver = ResponseReceiver(_Transport(), preallocated_frame_bytes=1024)
    _feed(receiver, struct.pack(">i", 1 << 30), 4)
    assert len(receiver.get_buffer(-1)) == 1024  # not the gigabyte declared
    _feed(receiver, b"y" * 1024, 1 << 20)
    assert len(receiver.get_buffer(-1)) == 1024  # doubled as the bytes came: 2 KiB in all


def test_a_frame_larger_than_the_preallocation_grows_to_its_size() -> None:
    async def main() -> None:
        receiver = ResponseReceiver(_Transport(), preallocated_frame_bytes=1000)
        body = bytes(range(256)) * 40  # 10,240 bytes
        _feed(receiver, _frame(body), 333)
        assert await receiver.next_frame() == body

    asyncio.run(main())


def test_a_negative_size_fails_the_wait_and_closes_the_connection() -> None:
    async def main() -> None:
        transport = _Transport()
        receiver = ResponseReceiver(transport)
        waiting = asyncio.ensure_future(receiver.next_frame())
        await asyncio.sleep(0)
        _feed(receiver, struct.pack(">i", -5) + b"junk after it", 1 << 20)
        with pytest.raises(ConnectionError, match="size -5"):
            await waiting
        assert transport.closed
        with pytest.raises(ConnectionError):
            await receiver.next_frame()

    asyncio.run(main())


def test_a_lost_connection_fails_the_wait_with_an_os_error() -> None:
    async def main() -> None:
        receiver = ResponseReceiver(_Transport())
        waiting = asyncio.ensure_future(receiver.next_frame())
        await asyncio.sleep(0)
        _feed(receiver, _frame(b"half")[:6], 1 << 20)
        assert receiver.eof_received() is False  # the transport closes itself
        receiver.connection_lost(None)
        with pytest.raises(ConnectionResetError, match="closed the connection"):
            await waiting

    asyncio.run(main())
