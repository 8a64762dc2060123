"""A TLS listener's server handshake that tells a refused client why, as Kafka's does.

asyncio's TLS protocol drops the connection when the handshake fails without sending the alert OpenSSL
has just written for the client (no certificate where ssl.client.auth=required, an untrusted one, no
common protocol version). Kafka's broker sends it before closing, and a Java client that reads it
raises SslAuthenticationException at once; one that sees the connection merely closed takes it for a
network fault and retries until its timeout. So the failed handshake's last bytes are written first.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from asyncio.sslproto import SSLProtocol


async def serve_tls(
    loop: asyncio.AbstractEventLoop,
    client: socket.socket,
    context: ssl.SSLContext,
    protocol: asyncio.BaseProtocol,
) -> None:
    """Run the server handshake on the accepted `client`, then hand the connection to `protocol`;
    raises what the handshake failed with (after the client has been sent its alert)."""
    handshake_done = loop.create_future()
    tls = _AlertingServerProtocol(loop, protocol, context, handshake_done, server_side=True)
    await loop.connect_accepted_socket(lambda: tls, client)
    await handshake_done


class _AlertingServerProtocol(SSLProtocol):
    # asyncio's own attributes (Python 3.11+), which typeshed leaves out
    _outgoing: ssl.MemoryBIO

    def _on_handshake_complete(self, handshake_exc: BaseException | None) -> None:
        if handshake_exc is not None and isinstance(self._transport, asyncio.WriteTransport):
            alert = self._outgoing.read()
            if alert:
                # written at once when the socket's send buffer is empty, as it is mid-handshake; what
                # cannot be is dropped with the connection, as before
                self._transport.write(alert)
        super()._on_handshake_complete(handshake_exc)
