"""One replica fetcher's connection to a leader's inter-broker endpoint (Kafka's BlockingSend).

Requests go one at a time (a fetcher waits for each answer), so the correlation id only checks that
the answer is the one expected. Once connected (TLS and SASL done through streams), the connection's
answers are received by a `ResponseReceiver`: each frame read by the socket into a bytearray of its
own, which the decoder leaves the records in (no copy of a fetched batch in Python). Every wait is
bounded by `replica.socket.timeout.ms`; the socket's receive buffer is
`replica.socket.receive.buffer.bytes` (-1: the OS default). TLS and SASL are the inter-broker
listener's (cluster/inter_broker_connection.py), as for every broker-to-broker client. Outgoing
connections leave from this broker's own listener address, so that rules on the source address (the
fault harness's loopback firewall) see the broker, not the loopback's first address.
"""

from __future__ import annotations

import asyncio
import socket
from typing import Any

from odradek.cluster.inter_broker_connection import (
    PLAINTEXT,
    InterBrokerSecurity,
    open_inter_broker_connection,
)
from odradek.cluster.replication.response_receiver import ResponseReceiver
from odradek.protocol.codec_error import CodecError
from odradek.protocol.frames import decode_response, encode_request
from odradek.protocol.schema import Request


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
        self._transport: asyncio.WriteTransport | None = None
        self._receiver: ResponseReceiver | None = None
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
            _, writer = await asyncio.wait_for(
                open_inter_broker_connection(self.host, self.port, self.security, self.client_id, sock),
                self.timeout_s,
            )
        except BaseException:
            sock.close()
            raise
        # Every answer of the handshake has been read, and a broker sends nothing unasked: no byte is
        # left in the stream reader the receiver takes over from.
        transport = writer.transport
        self._receiver = ResponseReceiver(transport)
        transport.set_protocol(self._receiver)
        self._transport = transport
        self._writer = writer  # kept: a StreamWriter closes its transport when collected

    @property
    def connected(self) -> bool:
        return self._transport is not None and not self._transport.is_closing()

    async def send(self, body: Request, api_version: int) -> Any:
        """The answer to `body`; raises OSError, asyncio.IncompleteReadError, TimeoutError or
        CodecError, after which the connection is closed."""
        if self._transport is None or self._receiver is None:
            raise ConnectionError(f"not connected to {self.host}:{self.port}")
        self._correlation_id = (self._correlation_id + 1) & 0x7FFFFFFF
        correlation_id = self._correlation_id
        try:
            # One small request at a time: the wait for its answer bounds its write too.
            self._transport.write(encode_request(body, api_version, correlation_id, self.client_id))
            frame = await asyncio.wait_for(self._receiver.next_frame(), self.timeout_s)
            answered, answer = decode_response(frame, body.API_KEY, api_version)
            if answered != correlation_id:
                raise CodecError(f"answer for correlation id {answered}, not {correlation_id}")
            return answer
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()
        self._transport = self._receiver = self._writer = None
