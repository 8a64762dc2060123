"""Switchable TCP proxies on 127.0.0.1: the network cuts of the fault harness, without privileges.

Every broker reaches ZooKeeper through a proxy of its own, and reaches the other brokers' inter-broker
listener (advertised as the proxy's address) through one proxy per destination broker. Clients use the
brokers' client listener directly, so a cut broker still serves them, as in Kafka's "isolated leader"
scenario. Which broker opened a connection to an inter-broker proxy is found from the kernel's socket
table (/proc/net/tcp, then the broker processes' open files): all of them connect from 127.0.0.1, and
this does not depend on how a broker names itself in its requests.

A cut black-holes the links of a broker: bytes sent on them are read and dropped, as a dropped path
would, so the sender waits for its own timeouts; new connections are accepted and held the same way.
Healing closes those connections (their peers have given up on them by then) and lets new ones through.
Everything lives in this process: nothing is left behind in the kernel when it ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

#: Who owns the other end of a connection: a broker id, or None for anyone else.
SourceFinder = Callable[[int], "int | None"]


@dataclass(eq=False)
class _Connection:
    source: int | None
    destination: int | None
    writers: list[asyncio.StreamWriter] = field(default_factory=list)
    black_holed: bool = False


class LinkProxies:
    """All proxies of a run, served by one event loop in a daemon thread."""

    def __init__(self, broker_pids: Callable[[], dict[int, int]]) -> None:
        #: pid -> broker id of the brokers running now, to identify where a connection comes from.
        self.broker_pids = broker_pids
        self.isolated: set[int] = set()
        self._connections: set[_Connection] = set()
        self._servers: list[asyncio.Server] = []
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="link-proxies", daemon=True)
        self._thread.start()

    def to_zookeeper(self, owner: int, host: str, port: int) -> int:
        """A proxy to ZooKeeper used by broker `owner` alone; returns its port."""
        return int(self._call(self._serve((host, port), destination=None, owner=owner)))

    def to_broker(self, destination: int, host: str, port: int) -> int:
        """A proxy to broker `destination`'s inter-broker listener, used by every other broker."""
        return int(self._call(self._serve((host, port), destination=destination, owner=None)))

    def isolate(self, broker: int) -> None:
        """Cut `broker` off from ZooKeeper and from the other brokers (both directions)."""
        self._call(self._isolate(broker))

    def heal(self) -> None:
        """Undo every cut."""
        self._call(self._heal())

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._call(self._close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    # ----- internals (on the proxies' loop) ----------------------------------------------------

    def _call(self, coroutine):  # type: ignore[no-untyped-def]
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(30)

    def _blocked(self, connection: _Connection) -> bool:
        ends = {connection.source, connection.destination} - {None}
        return bool(ends & self.isolated) and connection.source != connection.destination

    async def _serve(self, upstream: tuple[str, int], destination: int | None, owner: int | None) -> int:
        async def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            peer_port = writer.get_extra_info("peername")[1]
            own_port = writer.get_extra_info("sockname")[1]
            source = owner if owner is not None else find_source(peer_port, own_port, self.broker_pids())
            connection = _Connection(source, destination, [writer])
            self._connections.add(connection)
            try:
                await self._relay(connection, reader, writer, upstream)
            finally:
                self._connections.discard(connection)
                for each in connection.writers:
                    each.close()

        server = await asyncio.start_server(accepted, "127.0.0.1", 0)
        self._servers.append(server)
        return int(server.sockets[0].getsockname()[1])

    async def _relay(
        self,
        connection: _Connection,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        upstream: tuple[str, int],
    ) -> None:
        if self._blocked(connection):
            connection.black_holed = True
            await _drain_forever(reader)
            return
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(*upstream)
        except OSError:
            return
        connection.writers.append(upstream_writer)
        pumps = [
            asyncio.ensure_future(self._pump(connection, reader, upstream_writer)),
            asyncio.ensure_future(self._pump(connection, upstream_reader, writer)),
        ]
        await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        for pump in pumps:
            pump.cancel()

    async def _pump(
        self, connection: _Connection, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while chunk := await reader.read(1 << 16):
                if connection.black_holed:
                    continue  # dropped on the cut path
                writer.write(chunk)
                await writer.drain()

    async def _isolate(self, broker: int) -> None:
        self.isolated.add(broker)
        for connection in self._connections:
            if self._blocked(connection):
                connection.black_holed = True

    async def _heal(self) -> None:
        self.isolated.clear()
        for connection in list(self._connections):
            if connection.black_holed:
                for writer in connection.writers:
                    writer.close()

    async def _close(self) -> None:
        for server in self._servers:
            server.close()
        for connection in list(self._connections):
            for writer in connection.writers:
                writer.close()


async def _drain_forever(reader: asyncio.StreamReader) -> None:
    with contextlib.suppress(OSError):
        while await reader.read(1 << 16):
            pass


def find_source(peer_port: int, proxy_port: int, broker_pids: dict[int, int]) -> int | None:
    """The broker whose socket is 127.0.0.1:`peer_port` -> 127.0.0.1:`proxy_port`, None if no broker's.

    /proc/net/tcp names the socket's inode; the broker holding it has it among its open files.
    """
    inode = _socket_inode(peer_port, proxy_port)
    if inode is None:
        return None
    wanted = f"socket:[{inode}]"
    for pid, broker in broker_pids.items():
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{pid}/fd"):
                with contextlib.suppress(OSError):
                    if os.readlink(f"/proc/{pid}/fd/{fd}") == wanted:
                        return broker
    return None


def _socket_inode(local_port: int, remote_port: int) -> str | None:
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                local, remote, inode = fields[1], fields[2], fields[9]
                if (
                    int(local.rsplit(":", 1)[1], 16) == local_port
                    and int(remote.rsplit(":", 1)[1], 16) == remote_port
                ):
                    return inode
    return None
