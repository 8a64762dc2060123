"""A ResponseWriter on a real socket (a socket pair, or TCP on loopback), with the peer's end in the
test's hands (a client that reads slowly, stops reading or goes away), and a file to send regions of."""

from __future__ import annotations

import asyncio
import os
import socket
from dataclasses import dataclass
from pathlib import Path

from odradek.server.output import ResponseWriter
from odradek.storage.fetch import FileRegion, HeldRegion
from odradek.storage.shared_file import SharedFile
from tests.support.ports import free_port


class ForwardingProtocol(asyncio.Protocol):
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


async def writer_and_peer(
    peer_receive_buffer: int = 4096,
) -> tuple[ResponseWriter, asyncio.Transport, socket.socket]:
    """A writer on one end of a socket pair; the other end (blocking, small receive buffer) is the
    client's."""
    ours, peer = socket.socketpair()
    peer.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, peer_receive_buffer)
    transport, protocol = await asyncio.get_running_loop().connect_accepted_socket(ForwardingProtocol, ours)
    assert protocol.writer is not None
    return protocol.writer, transport, peer


async def writer_and_tcp_peer(
    peer_receive_buffer: int = 4096,
) -> tuple[ResponseWriter, asyncio.Transport, socket.socket]:
    """As `writer_and_peer`, over a TCP connection on loopback (as a broker's: the kernel queues and
    acknowledges as TCP does). The client's receive buffer is set before it connects, so the window it
    offers is that small from the start."""
    listener = socket.create_server(("127.0.0.1", free_port()))
    peer = socket.socket()
    try:
        peer.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, peer_receive_buffer)
        peer.connect(listener.getsockname())
        ours, _ = listener.accept()
    except BaseException:
        peer.close()
        raise
    finally:
        listener.close()
    transport, protocol = await asyncio.get_running_loop().connect_accepted_socket(ForwardingProtocol, ours)
    assert protocol.writer is not None
    return protocol.writer, transport, peer


@dataclass
class PlainRegion:
    """A region of a file the test owns (the writer closes a region once sent: here, nothing)."""

    fd: int
    position: int
    length: int

    def __len__(self) -> int:
        return self.length

    def close(self) -> None:
        pass

    def read_failed(self, error: OSError) -> None:
        pass  # the test's own file: no log dir to take offline


def random_file(path: Path, size: int) -> int:
    """A file of `size` random bytes, open for reading; the caller closes it."""
    path.write_bytes(os.urandom(size))
    return os.open(path, os.O_RDONLY)


def held_region(fd: int, position: int, length: int) -> HeldRegion:
    """A region of a file the test opened, held as a Fetch answer holds a segment's: on a duplicate of
    `fd`, closed when the region is (`region.fd` is then -1)."""
    file = SharedFile(os.dup(fd))
    region = FileRegion(file, Path(), position, length).hold()
    file.release()  # the opener's hold, as a segment closed under the answer: the region's is the last
    return region
