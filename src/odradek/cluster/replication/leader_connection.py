"""One replica fetcher's connection to a leader's inter-broker endpoint (Kafka's BlockingSend).

Requests go one at a time (a fetcher waits for each answer), so the correlation id only checks that
the answer is the one expected. Every wait is bounded by `replica.socket.timeout.ms`; the socket's
receive buffer is `replica.socket.receive.buffer.bytes` (-1: the OS default). TLS and SASL are the
inter-broker listener's (cluster/inter_broker_connection.py), as for every broker-to-broker client.
Outgoing connections leave from this broker's own listener address, so that rules on the source
address (the fault harness's loopback firewall) see the broker, not the loopback's first address.
"""

from __future__ import annotations

import asyncio
import socket
import struct
from typing import Any

from odradek.cluster.inter_broker_connection import (
    PLAINTEXT,
    InterBrokerSecurity,
    open_inter_broker_connection,
)
from odradek.protocol.codec_error import CodecError
from odradek.protocol.frames import decode_response, encode_request
from odradek.protocol.schema import Request

_SIZE = struct.Struct(">i")


class LeaderConnection:
    def __init__(
        self,
        host: str,
        port: int,
        client_id: str,
        socket_timeout_ms: int,
        receive_buffer_bytes: int,
        local_host: str | None = None,
        security: InterBrokerSecurity = PLAINTEXT,
    ) -> None:
        self.host = host
        self.port = port
        self.client_id = client_id
        self.timeout_s = max(socket_timeout_ms, 1) / 1000
        self.receive_buffer_bytes = receive_buffer_bytes
        self.local_host = local_host
        #: The inter-broker listener's TLS and SASL (the broker's shared object).
        self.security = security
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._correlation_id = 0

    async def connect(self) -> None:
        sock = socket.socket(socket.AF_INET6 if ":" in self.host else socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setblocking(False)
            if self.receive_buffer_bytes > 0:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.receive_buffer_bytes)
            if self.local_host:
                sock.bind((self.local_host, 0))
            loop = asyncio.get_running_loop()
            await asyncio.wait_for(loop.sock_connect(sock, (self.host, self.port)), self.timeout_s)
            self._reader, self._writer = await asyncio.wait_for(
                open_inter_broker_connection(self.host, self.port, self.security, self.client_id, sock),
                self.timeout_s,
            )
        except BaseException:
            sock.close()
            raise

    @property
    def connected(self) -> bool:
        return self._writer is not None and not self._writer.is_closing()

    async def send(self, body: Request, api_version: int) -> Any:
        """The answer to `body`; raises OSError, asyncio.IncompleteReadError, TimeoutError or
        CodecError, after which the connection is closed."""
        if self._reader is None or self._writer is None:
            raise ConnectionError(f"not connected to {self.host}:{self.port}")
        self._correlation_id = (self._correlation_id + 1) & 0x7FFFFFFF
        correlation_id = self._correlation_id
        try:
            self._writer.write(encode_request(body, api_version, correlation_id, self.client_id))
            await asyncio.wait_for(self._writer.drain(), self.timeout_s)
            (size,) = _SIZE.unpack(await asyncio.wait_for(self._reader.readexactly(4), self.timeout_s))
            frame = await asyncio.wait_for(self._reader.readexactly(size), self.timeout_s)
            answered, answer = decode_response(frame, body.API_KEY, api_version)
            if answered != correlation_id:
                raise CodecError(f"answer for correlation id {answered}, not {correlation_id}")
            return answer
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        self._reader = self._writer = None
