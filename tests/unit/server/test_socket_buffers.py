"""socket.send.buffer.bytes and socket.receive.buffer.bytes on the sockets a listener accepts, as Kafka's
SocketServer sets them: SO_RCVBUF on the server socket before it listens (accepted sockets inherit it,
and the TCP window scale is agreed from it), SO_SNDBUF on each accepted socket; -1 keeps the OS default.
Linux doubles the value set (for its own bookkeeping), so 100 KiB reads back as 200 KiB."""

from __future__ import annotations

import asyncio
import socket
from typing import cast

import pytest

from odradek.config.broker import BrokerConfig
from odradek.config.types import ConfigError
from odradek.server.acceptor import Acceptor, bind_sockets
from odradek.server.connection import Connection
from odradek.server.connection_quotas import ConnectionQuotas


class _Accepted(asyncio.Protocol):
    def __init__(self, accepted: asyncio.Queue[socket.socket]) -> None:
        self.accepted = accepted

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.accepted.put_nowait(transport.get_extra_info("socket"))


SNDBUF = (socket.SOL_SOCKET, socket.SO_SNDBUF)
RCVBUF = (socket.SOL_SOCKET, socket.SO_RCVBUF)
KEEPALIVE = (socket.SOL_SOCKET, socket.SO_KEEPALIVE)
NODELAY = (socket.IPPROTO_TCP, socket.TCP_NODELAY)


def options_of_an_accepted_socket(
    send_buffer_bytes: int, receive_buffer_bytes: int, *options: tuple[int, int]
) -> tuple[int, ...]:
    """`options` of the broker's side of a connection accepted by a listener with these buffer sizes."""

    async def accept_one() -> tuple[int, ...]:
        config = BrokerConfig(
            {"node.id": "1", "listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": "/tmp/unused"},
            warn_unknown=False,
        )
        quotas = ConnectionQuotas(lambda: config, ["PLAINTEXT"])
        accepted: asyncio.Queue[socket.socket] = asyncio.Queue()
        (server_socket,) = bind_sockets("127.0.0.1", 0, receive_buffer_bytes)
        acceptor = Acceptor(
            "PLAINTEXT",
            server_socket,
            5,
            quotas,
            lambda release: cast(Connection, _Accepted(accepted)),
            send_buffer_bytes=send_buffer_bytes,
        )
        acceptor.start()
        client = socket.create_connection(("127.0.0.1", acceptor.port))
        try:
            broker_side = await asyncio.wait_for(accepted.get(), 10)
            return tuple(broker_side.getsockopt(level, option) for level, option in options)
        finally:
            client.close()
            acceptor.close()

    return asyncio.run(accept_one())


def buffers_of_an_accepted_socket(send_buffer_bytes: int, receive_buffer_bytes: int) -> tuple[int, ...]:
    """(SO_SNDBUF, SO_RCVBUF) of the broker's side of a connection accepted by a listener with these."""
    return options_of_an_accepted_socket(send_buffer_bytes, receive_buffer_bytes, SNDBUF, RCVBUF)


def os_default_buffers() -> tuple[int, ...]:
    """(SO_SNDBUF, SO_RCVBUF) of a socket accepted with nothing set."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        with socket.create_connection(server.getsockname()) as _, server.accept()[0] as accepted:
            return (
                accepted.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF),
                accepted.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF),
            )


def test_accepted_sockets_get_socket_send_and_receive_buffer_bytes() -> None:
    assert buffers_of_an_accepted_socket(100 * 1024, 100 * 1024) == (2 * 100 * 1024, 2 * 100 * 1024)
    assert buffers_of_an_accepted_socket(64 * 1024, 32 * 1024) == (2 * 64 * 1024, 2 * 32 * 1024)


def test_minus_one_leaves_the_os_default_socket_buffers() -> None:
    assert buffers_of_an_accepted_socket(-1, -1) == os_default_buffers()


@pytest.mark.parametrize("name", ["socket.send.buffer.bytes", "socket.receive.buffer.bytes"])
@pytest.mark.parametrize("value", ["0", "-2"])
def test_a_socket_buffer_size_neither_minus_one_nor_positive_is_refused_naming_it(
    name: str, value: str
) -> None:
    with pytest.raises(ConfigError, match=name.replace(".", r"\.")):
        BrokerConfig(
            {"node.id": "1", "listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": "/tmp/unused", name: value},
            warn_unknown=False,
        )


@pytest.mark.parametrize(
    "name", ["socket.send.buffer.bytes", "socket.receive.buffer.bytes", "queued.max.requests"]
)
def test_a_listener_scoped_form_kafka_does_not_read_is_refused_naming_it(name: str) -> None:
    """Kafka reads these for the whole broker only: its listener.name.<l>. form would be accepted and do
    nothing (it was refused while the config itself was, and slipped through once that became real)."""
    scoped = f"listener.name.plaintext.{name}"
    with pytest.raises(ConfigError, match=scoped.replace(".", r"\.")):
        BrokerConfig(
            {
                "node.id": "1",
                "listeners": "PLAINTEXT://127.0.0.1:0",
                "log.dirs": "/tmp/unused",
                scoped: "1000",
            },
            warn_unknown=False,
        )


def test_accepted_sockets_have_tcp_keepalive_as_kafkas() -> None:
    """Kafka's acceptor turns SO_KEEPALIVE on for every connection (and TCP_NODELAY, which asyncio's
    transports set); odradek left keepalive off."""
    assert options_of_an_accepted_socket(-1, -1, KEEPALIVE, NODELAY) == (1, 1)
