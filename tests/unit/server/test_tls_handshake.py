"""server/tls_handshake.py: the TLS handshake of an accepted connection, run outside asyncio's own
connect_accepted_socket(ssl=...) so that a refused client gets its alert."""

from __future__ import annotations

import asyncio
import socket
import ssl

import trustme

from odradek.server.tls_handshake import serve_tls


def _server_context() -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    trustme.CA().issue_cert("127.0.0.1").configure_cert(context)
    return context


def test_a_handshake_cancelled_at_shutdown_closes_the_connection() -> None:
    """Stopping a listener cancels the handshakes under way: the transport was left open (asyncio's
    connect_accepted_socket closes it on any failure, cancellation included), so the socket stayed
    open with a silent client until asyncio's 60 s handshake timeout, after the listener had gone."""

    async def main() -> None:
        loop = asyncio.get_running_loop()
        server, client = socket.socketpair()
        client.setblocking(False)
        handshake = loop.create_task(serve_tls(loop, server, _server_context(), asyncio.Protocol()))
        for _ in range(10):  # the transport is made: the handshake waits for a ClientHello
            await asyncio.sleep(0)
        assert not handshake.done()
        handshake.cancel()
        try:
            # the end of the stream, not the 60 s timeout's
            assert await asyncio.wait_for(loop.sock_recv(client, 1), 10) == b""
        finally:
            client.close()
            server.close()

    asyncio.run(main())
