"""A blocking Kafka-protocol client over a plain socket, built on odradek's own codec, for raw tests.

It sends exactly the frames a test asks for (any version, pipelined or not, malformed on purpose) and
reads responses one frame at a time, so tests can check framing, ordering and connection handling
without a real client library deciding things for them.
"""

from __future__ import annotations

import socket
import struct
import time
from typing import Any

from odradek.protocol.frames import decode_response, encode_request
from odradek.protocol.schema import Request

_SIZE = struct.Struct(">i")


class ConnectionClosedError(Exception):
    """The broker closed the connection (EOF or reset) before a whole response frame arrived."""


class RawClient:
    def __init__(
        self,
        port: int,
        timeout: float = 10.0,
        client_id: str | None = "raw-test",
        source: str | None = None,
        host: str = "127.0.0.1",
    ) -> None:
        """`source`: the local address to connect from (any 127.x.y.z is loopback on Linux); `host`:
        the broker's (a cluster's brokers each have their own)."""
        source_address = (source, 0) if source else None
        self.sock = socket.create_connection((host, port), timeout, source_address)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.timeout = timeout
        self.client_id = client_id
        self.next_correlation_id = 1

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.sock.close()

    # ----- sending -------------------------------------------------------------------------------

    def send(self, body: Request, version: int, correlation_id: int | None = None) -> int:
        """Send one request; returns its correlation id (without waiting for the response)."""
        if correlation_id is None:
            correlation_id = self.next_correlation_id
            self.next_correlation_id += 1
        self.send_bytes(encode_request(body, version, correlation_id, self.client_id))
        return correlation_id

    def send_bytes(self, data: bytes) -> None:
        self.sock.sendall(data)

    # ----- receiving -----------------------------------------------------------------------------

    def read_frame(self) -> bytes:
        """One whole response frame, without its size prefix."""
        (size,) = _SIZE.unpack(self._read_exactly(4))
        return self._read_exactly(size)

    def receive(self, api_key: int, version: int) -> tuple[int, Any]:
        """The next response, decoded: (correlation id, body)."""
        return decode_response(self.read_frame(), api_key, version)

    def request(self, body: Request, version: int) -> Any:
        """Send a request and return its decoded response, checking the correlation id."""
        correlation_id = self.send(body, version)
        answered, response = self.receive(body.API_KEY, version)
        assert answered == correlation_id, f"response to {answered}, expected {correlation_id}"
        return response

    def wait_closed(self, timeout: float = 5.0) -> bool:
        """True when the broker closes the connection within `timeout` (any bytes before EOF are dropped)."""
        deadline = time.monotonic() + timeout
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self.sock.settimeout(remaining)
                if not self.sock.recv(65536):
                    return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False
        finally:
            self.sock.settimeout(self.timeout)

    def _read_exactly(self, size: int) -> bytes:
        chunks = bytearray()
        while len(chunks) < size:
            try:
                chunk = self.sock.recv(size - len(chunks))
            except ConnectionResetError as error:
                raise ConnectionClosedError("connection reset by the broker") from error
            if not chunk:
                raise ConnectionClosedError(f"EOF after {len(chunks)} of {size} bytes")
            chunks += chunk
        return bytes(chunks)
