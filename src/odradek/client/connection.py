"""A blocking connection to one broker that speaks odradek's codec, under TLS and SASL as the client's
settings say (client/security.py)."""

from __future__ import annotations

import socket
import struct
from typing import Any

from odradek.client.security import PLAINTEXT, ClientSecurity, authenticate, secure
from odradek.protocol.codec import decode_from
from odradek.protocol.frames import encode_request, response_header_version
from odradek.protocol.messages import RESPONSES
from odradek.protocol.messages.response_header import ResponseHeader

_SIZE = struct.Struct(">i")
CLIENT_ID = "odradek-2pc"
#: SaslHandshake v1 (the tokens then go in SaslAuthenticate) and SaslAuthenticate v1, as Kafka's clients.
_SASL_VERSION = 1


class BrokerConnection:
    def __init__(self, host: str, port: int, timeout_s: float, security: ClientSecurity = PLAINTEXT) -> None:
        """Connected, through TLS and logged in when `security` asks; raises OSError when the broker
        cannot be reached, ClientSecurityError when it refuses the handshake or the login."""
        self.address = f"{host}:{port}"
        sock = socket.create_connection((host, port), timeout=timeout_s)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = secure(sock, security, host)
        self.correlation_id = 0
        try:
            authenticate(lambda request: self.request(request, _SASL_VERSION), security)
        except BaseException:
            self.sock.close()
            raise

    def request(self, body: Any, version: int) -> Any:
        self.correlation_id += 1
        self.sock.sendall(encode_request(body, version, self.correlation_id, CLIENT_ID))
        (size,) = _SIZE.unpack(self._read(4))
        frame = self._read(size)
        header, start = decode_from(ResponseHeader, frame, 0, response_header_version(body.API_KEY, version))
        if header.correlation_id != self.correlation_id:
            raise ConnectionError(
                f"{self.address}: response {header.correlation_id} to request {self.correlation_id}"
            )
        response, _ = decode_from(RESPONSES[body.API_KEY], frame, start, version)
        return response

    def close(self) -> None:
        self.sock.close()

    def _read(self, size: int) -> bytes:
        buffer = bytearray(size)
        view = memoryview(buffer)
        got = 0
        while got < size:
            n = self.sock.recv_into(view[got:], size - got)
            if n == 0:
                raise ConnectionError(f"{self.address} closed the connection")
            got += n
        return bytes(buffer)


def parse_bootstrap(bootstrap: str) -> list[tuple[str, int]]:
    """`host:port,host:port` (an optional `PLAINTEXT://` scheme is dropped)."""
    addresses = []
    for item in bootstrap.split(","):
        item = item.strip().split("://")[-1]
        if not item:
            continue
        host, _, port = item.rpartition(":")
        addresses.append((host.strip("[]"), int(port)))
    if not addresses:
        raise ValueError(f"no broker address in {bootstrap!r}")
    return addresses
