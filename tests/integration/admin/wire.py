"""Raw Kafka requests over a plain socket, encoded and decoded by kafka-python's protocol classes.

kafka-python's message classes are generated from Kafka's own JSON schemas and share no code with
odradek's codec, so what these tests see is what any client would see on the wire, at exactly the
version asked for.
"""

from __future__ import annotations

import importlib
import itertools
import socket
import struct
from typing import Any


class Wire:
    """One connection to a broker; `send` writes a request at a version and returns the decoded answer."""

    def __init__(self, bootstrap: str, client_id: str = "odradek-admin-tests") -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=15)
        self.client_id = client_id
        self._correlation_ids = itertools.count(1)

    def send(self, request: Any, version: int) -> Any:
        correlation_id = next(self._correlation_ids)
        request.with_header(correlation_id=correlation_id, client_id=self.client_id)
        self.sock.sendall(request.encode(version=version, header=True, framed=True))
        (size,) = struct.unpack(">i", self._read(4))
        response = response_class(request).decode(self._read(size), version=version, header=True)
        assert response._header.correlation_id == correlation_id
        return response

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> Wire:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _read(self, count: int) -> bytes:
        data = bytearray()
        while len(data) < count:
            chunk = self.sock.recv(count - len(data))
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            data += chunk
        return bytes(data)


def response_class(request: Any) -> Any:
    """kafka-python's response class for a request object (XRequest -> XResponse, same module)."""
    request_class = type(request)
    module = importlib.import_module(request_class.__module__)
    return getattr(module, request_class.__name__.replace("Request", "Response"))
