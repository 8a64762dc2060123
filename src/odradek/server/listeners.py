"""The broker's listeners: each bound to its address first (the advertised ports are then known), then
accepting; the connections they accepted, under the connection quotas and the memory pool."""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable

from odradek.config.broker import BrokerConfig
from odradek.handlers._common.services import Services
from odradek.security.listener_security import ListenerSecurity
from odradek.server.acceptor import Acceptor, bind_sockets
from odradek.server.connection import Connection
from odradek.server.connection_quotas import ConnectionQuotas
from odradek.server.framing import ReadScratch
from odradek.server.memory_pool import MemoryPool
from odradek.server.request_queue import RequestQueue

log = logging.getLogger("odradek.broker")


class ListenerBindError(Exception):
    """A listener's address cannot be bound: port in use, host unknown, no permission."""


class Listeners:
    """Every listener of `listeners`, with its TLS and SASL settings."""

    def __init__(
        self,
        listener_security: dict[str, ListenerSecurity],
        quotas: ConnectionQuotas,
        memory_pool: MemoryPool | None,
        request_queue: RequestQueue,
    ) -> None:
        self.listener_security = listener_security
        self.quotas = quotas
        self.memory_pool = memory_pool
        self.request_queue = request_queue
        self.connections: set[Connection] = set()
        self.acceptors: list[Acceptor] = []
        #: The host and port each listener is bound to (a port 0 is the one the system chose).
        self.bound: dict[str, tuple[str, int]] = {}

    def bind(self, config: BrokerConfig, services: Services) -> None:
        """Bind every listener (serving starts with `serve`), under the connection quotas and memory pool."""
        max_request = config.socket_request_max_bytes
        scratch = ReadScratch()  # shared by every connection this loop reads (see framing.py)
        pool, quotas, request_queue = self.memory_pool, self.quotas, self.request_queue
        for endpoint in config.listener_endpoints():
            name = endpoint.listener_name
            security = self.listener_security.get(name)

            def factory(
                release: Callable[[Connection], None],
                name: str = name,
                security: ListenerSecurity | None = security,
            ) -> Connection:
                def on_close(connection: Connection) -> None:
                    self.connections.discard(connection)
                    release(connection)
                    # What a client keeps per connection goes with it (Kafka's disconnect listeners).
                    services.client_metrics.connection_closed(connection.connection_id)
                    if services.share_partitions is not None:
                        services.share_partitions.connection_closed(connection.connection_id)

                connection = Connection(
                    services, name, max_request, on_close, scratch, pool, security, request_queue
                )
                self.connections.add(connection)
                if quotas.is_protected(services.config, name) and quotas.over_broker_limit():
                    self._close_least_recently_used(name)
                return connection

            try:
                sockets = bind_sockets(endpoint.host, endpoint.port, config.socket_receive_buffer_bytes)
            except OSError as error:
                raise bind_error(f"listener {name}", endpoint.host, endpoint.port, error) from None
            for server_socket in sockets:
                backlog = config.socket_listen_backlog_size
                tls = security.tls.context if security is not None and security.tls is not None else None
                acceptor = Acceptor(
                    name,
                    server_socket,
                    backlog,
                    quotas,
                    factory,
                    tls,
                    send_buffer_bytes=config.socket_send_buffer_bytes,
                )
                self.acceptors.append(acceptor)
                if services.tls is not None:  # its key and trust stores reloaded by AlterConfigs
                    services.tls.add_acceptor(acceptor)
            self.bound[name] = (endpoint.host, int(sockets[0].getsockname()[1]))

    def serve(self) -> None:
        """Listen and accept on every bound listener."""
        for acceptor in self.acceptors:
            acceptor.start()

    def _close_least_recently_used(self, protected_listener: str) -> None:
        """Kafka's answer to an inter-broker connection taken over max.connections: the connection of
        another listener that was active least recently makes room."""
        others = [c for c in self.connections if c.listener != protected_listener and not c.closed]
        if others:
            victim = min(others, key=lambda c: c.last_active)
            log.info(
                "closing the least recently used connection for max.connections",
                extra={"fields": victim.describe()},
            )
            victim.close()


def bind_error(what: str, host: str, port: int, error: OSError) -> ListenerBindError:
    # asyncio's own message repeats the address in a tuple; the operator needs which setting and why.
    if isinstance(error, socket.gaierror) or not error.errno:
        reason = error.strerror or str(error)
    else:
        reason = os.strerror(error.errno)
    return ListenerBindError(f"Socket server failed to bind to {host or '0.0.0.0'}:{port} ({what}): {reason}")
