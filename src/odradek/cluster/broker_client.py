"""A broker's own connection to another broker's inter-broker listener, for requests it sends itself
(the transaction coordinator's WriteTxnMarkers, a partition leader's AddPartitionsToTxn verification).

One connection per destination, opened on first use (its SO_RCVBUF `socket.receive.buffer.bytes`, as
Kafka's marker and AddPartitionsToTxn network clients) and again after a failure; one request in flight
at a time (callers serialise through `request`). A kept connection found dead is replaced once within
the same request (the requests sent here are safe to repeat); other failures surface as
`BrokerUnreachable`, so the caller decides what a retry means for its request.
"""

from __future__ import annotations

import asyncio
from typing import Any

from odradek.cluster.inter_broker_connection import (
    PLAINTEXT,
    InterBrokerSecurity,
    open_inter_broker_connection,
    round_trip,
)
from odradek.cluster.metadata import BrokerEndpoint, ClusterMetadata
from odradek.config.broker import BrokerConfig
from odradek.protocol.codec_error import CodecError
from odradek.protocol.schema import Request

#: Kafka's request.timeout.ms default for inter-broker clients.
REQUEST_TIMEOUT_S = 30.0


class BrokerUnreachable(Exception):
    """The destination could not be reached, or did not answer in time (the connection is dropped)."""


def inter_broker_endpoint(
    config: BrokerConfig, cluster: ClusterMetadata, node_id: int
) -> BrokerEndpoint | None:
    """`node_id`'s endpoint on the inter-broker listener, as the last UpdateMetadata listed it."""
    listener = config.inter_broker_listener_name or config.security_inter_broker_protocol
    broker = cluster.live_brokers.get(node_id)
    return broker.endpoints.get(listener) if broker is not None else None


class BrokerConnection:
    def __init__(
        self,
        host: str,
        port: int,
        client_id: str,
        security: InterBrokerSecurity = PLAINTEXT,
        timeout_s: float = REQUEST_TIMEOUT_S,
        receive_buffer_bytes: int = -1,
    ) -> None:
        self.host = host
        self.port = port
        self.client_id = client_id
        #: The inter-broker listener's TLS and SASL (the broker's one shared object: reloads reach it).
        self.security = security
        self.timeout_s = timeout_s
        self.receive_buffer_bytes = receive_buffer_bytes
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._correlation_id = 0
        self._turn = asyncio.Lock()

    async def request(self, request: Request, version: int) -> Any:
        async with self._turn:
            # A connection kept from earlier may have died with its broker's previous process (a
            # restart on the same port): that failure earns one attempt on a fresh connection.
            attempts = 2 if self._writer is not None else 1
            for attempt in range(1, attempts + 1):
                try:
                    return await asyncio.wait_for(self._exchange(request, version), self.timeout_s)
                except (OSError, asyncio.IncompleteReadError, TimeoutError, CodecError) as error:
                    self.close()
                    if attempt == attempts or isinstance(error, TimeoutError):
                        reason = str(error) or type(error).__name__
                        raise BrokerUnreachable(f"{self.host}:{self.port}: {reason}") from error
            raise AssertionError("unreachable")

    async def _exchange(self, request: Request, version: int) -> Any:
        if self._writer is None or self._reader is None:
            self._reader, self._writer = await open_inter_broker_connection(
                self.host,
                self.port,
                self.security,
                self.client_id,
                receive_buffer_bytes=self.receive_buffer_bytes,
            )
        self._correlation_id += 1
        return await round_trip(
            self._reader, self._writer, request, version, self._correlation_id, self.client_id
        )

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        self._reader = self._writer = None


class BrokerConnections:
    """The connections of one sender, by destination broker (replaced when its endpoint changes)."""

    def __init__(
        self,
        client_id: str,
        security: InterBrokerSecurity = PLAINTEXT,
        timeout_s: float = REQUEST_TIMEOUT_S,
        receive_buffer_bytes: int = -1,
    ) -> None:
        self.client_id = client_id
        self.security = security
        self.receive_buffer_bytes = receive_buffer_bytes
        #: request.timeout.ms, as Kafka's inter-broker network clients (markers, verification) use it.
        self.timeout_s = timeout_s
        self._by_node: dict[int, BrokerConnection] = {}

    @classmethod
    def of_broker(
        cls, config: BrokerConfig, node_id: int, purpose: str, security: InterBrokerSecurity = PLAINTEXT
    ) -> BrokerConnections:
        """A broker's sender to the others, with the broker's request timeout and receive buffer."""
        return cls(
            f"broker-{node_id}-{purpose}",
            security,
            config.request_timeout_ms / 1000,
            config.socket_receive_buffer_bytes,
        )

    def to(self, node_id: int, endpoint: BrokerEndpoint) -> BrokerConnection:
        existing = self._by_node.get(node_id)
        if existing is not None and (existing.host, existing.port) == (endpoint.host, endpoint.port):
            return existing
        if existing is not None:
            existing.close()
        connection = BrokerConnection(
            endpoint.host,
            endpoint.port,
            self.client_id,
            self.security,
            self.timeout_s,
            self.receive_buffer_bytes,
        )
        self._by_node[node_id] = connection
        return connection

    def close(self) -> None:
        for connection in self._by_node.values():
            connection.close()
        self._by_node.clear()
