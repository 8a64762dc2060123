"""One listener's server socket and the task that accepts its connections under the connection quotas.

asyncio's own server accepts whatever arrives; this loop instead accepts one connection at a time and,
like Kafka's Acceptor, waits while `max.connections` is reached (new connections then wait in the
kernel's listen backlog, `socket.listen.backlog.size`) or while `max.connection.creation.rate` would
be exceeded, and closes a connection at once when its address already has `max.connections.per.ip`
(or its override).

Each accepted socket gets SO_KEEPALIVE and `socket.send.buffer.bytes` as its SO_SNDBUF; its SO_RCVBUF
is the server socket's (`socket.receive.buffer.bytes`, set by `bind_sockets` before listening, as
Kafka's SocketServer: the window scale a connection agrees at its handshake depends on it). -1 leaves
either to the operating system.

On a TLS listener the handshake runs in a task of its own (its timeout is asyncio's), so a slow or
silent client never holds up the next accept; a failed handshake only closes that connection, once the
client has its alert (server/tls_handshake.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
from collections.abc import Callable

from odradek.server.connection import Connection
from odradek.server.connection_quotas import ConnectionQuotas
from odradek.server.tls_handshake import serve_tls

log = logging.getLogger("odradek.acceptor")

#: Makes a Connection for (listener, client address); its on_close must call the given release.
ConnectionFactory = Callable[[Callable[[Connection], None]], Connection]


class Acceptor:
    def __init__(
        self,
        listener: str,
        server_socket: socket.socket,
        backlog: int,
        quotas: ConnectionQuotas,
        factory: ConnectionFactory,
        ssl_context: ssl.SSLContext | None = None,
        send_buffer_bytes: int = -1,
    ) -> None:
        self.listener = listener
        self.socket = server_socket
        self.backlog = backlog
        self.quotas = quotas
        self.factory = factory
        self.task: asyncio.Task[None] | None = None
        self.ssl_context = ssl_context
        self.send_buffer_bytes = send_buffer_bytes
        self.handshakes: set[asyncio.Task[None]] = set()
        #: Connections over their IP's connection rate, closed when their throttle time is over.
        self.throttled: dict[socket.socket, asyncio.TimerHandle] = {}

    @property
    def port(self) -> int:
        return int(self.socket.getsockname()[1])

    def start(self) -> None:
        self.socket.listen(self.backlog)
        self.task = asyncio.get_running_loop().create_task(self._accept_forever())

    def close(self) -> None:
        if self.task is not None:
            self.task.cancel()
        for handshake in self.handshakes:
            handshake.cancel()
        for client, timer in list(self.throttled.items()):
            timer.cancel()
            client.close()
        self.throttled.clear()
        self.socket.close()

    async def _accept_forever(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                client, peer = await loop.sock_accept(self.socket)
            except OSError as error:  # e.g. EMFILE: wait a little rather than spin
                log.warning("accepting on listener %s failed: %s", self.listener, error)
                await asyncio.sleep(0.1)
                continue
            try:
                self._configure(client)
            except OSError as error:  # gone already: only this connection is lost
                log.info("dropping a connection on listener %s: %s", self.listener, error)
                client.close()
                continue
            await self.quotas.wait_for_slot(self.listener)
            await self.quotas.wait_for_creation_rate(self.listener)
            address = str(peer[0])
            throttle_ms = self.quotas.ip_throttle_ms(address)
            if throttle_ms > 0:  # as Kafka's acceptor: closed later, so the client backs off
                log.debug("throttling connection from %s for %d ms", address, throttle_ms)
                self.throttled[client] = loop.call_later(throttle_ms / 1000, self._close_throttled, client)
                continue
            if not self.quotas.admit(self.listener, address):
                client.close()
                continue
            if self.ssl_context is None:
                await self._serve(loop, client, address)
            else:
                handshake = loop.create_task(self._serve(loop, client, address))
                self.handshakes.add(handshake)
                handshake.add_done_callback(self.handshakes.discard)

    def _configure(self, client: socket.socket) -> None:
        """As Kafka's acceptor: keepalive on (asyncio's transport sets TCP_NODELAY), and the send
        buffer unless -1."""
        client.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        if self.send_buffer_bytes != -1:
            client.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.send_buffer_bytes)

    def _close_throttled(self, client: socket.socket) -> None:
        self.throttled.pop(client, None)
        client.close()

    async def _serve(self, loop: asyncio.AbstractEventLoop, client: socket.socket, address: str) -> None:
        released = False

        def release(_: object = None) -> None:
            nonlocal released
            if not released:
                released = True
                self.quotas.release(self.listener, address)

        made: list[Connection] = []

        def make() -> Connection:
            made.append(self.factory(release))
            return made[-1]

        try:
            if self.ssl_context is None:
                await loop.connect_accepted_socket(make, client)
            else:
                await serve_tls(loop, client, self.ssl_context, make())
        except (OSError, ssl.SSLError) as error:
            # TLS: an untrusted or missing client certificate, plaintext on a TLS port, a timeout
            log.info("connection from %s dropped before it was served: %s", address, error)
            for connection in made:  # built, never connected: give its slot back
                connection.on_close(connection)
            release()
            with contextlib.suppress(OSError):
                client.close()


def bind_sockets(host: str | None, port: int, receive_buffer_bytes: int = -1) -> list[socket.socket]:
    """Bound, non-blocking server sockets for `host` (every local address when empty), not listening
    yet so nothing connects before the broker serves. With port 0, all share the first one's port.
    `receive_buffer_bytes` (unless -1) is their SO_RCVBUF, which accepted sockets inherit."""
    infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    sockets: list[socket.socket] = []
    try:
        for family, kind, proto, _, address in dict.fromkeys(infos):
            server_socket = socket.socket(family, kind, proto)
            sockets.append(server_socket)
            server_socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:  # as asyncio: each family on its own socket
                server_socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            if receive_buffer_bytes != -1:
                server_socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer_bytes)
            if port == 0 and len(sockets) > 1:
                address = (address[0], sockets[0].getsockname()[1], *address[2:])
            server_socket.bind(address)
            server_socket.setblocking(False)
    except OSError:
        for server_socket in sockets:
            server_socket.close()
        raise
    return sockets
