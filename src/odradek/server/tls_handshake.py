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
    transport, _ = await loop.connect_accepted_socket(lambda: tls, client)
    try:
        await handshake_done
    except BaseException:
        # as asyncio's own TLS connect: a failed handshake is closed already, a cancelled one
        # (the listener stopping) is not, and would stay open until the handshake timeout
        transport.close()
        raise


class _AlertingServerProtocol(SSLProtocol):
    """asyncio's TLS protocol (its Python 3.11+ form, with the outgoing TLS bytes in `_outgoing`) that
    sends what a failed handshake left there before asyncio closes the connection."""

    def _on_handshake_complete(self, handshake_exc: BaseException | None) -> None:
        # A Python whose asyncio keeps these elsewhere closes as before (the regression test
        # tests/regressions/test_refused_tls_handshake_closed_without_an_alert.py then fails).
        outgoing = getattr(self, "_outgoing", None)
        if (
            handshake_exc is not None
            and isinstance(outgoing, ssl.MemoryBIO)
            and isinstance(self._transport, asyncio.WriteTransport)
        ):
            alert = outgoing.read()
            if alert:
                # a few bytes into an empty send buffer: written at once, before asyncio's close
                self._transport.write(alert)
        super()._on_handshake_complete(handshake_exc)
