"""A TCP proxy on 127.0.0.1 that splits Kafka traffic into frames and hands each to a callback.

Start the broker advertising the proxy's port (`advertised.listeners=PLAINTEXT://127.0.0.1:<proxy
port>`) so clients keep talking through it after bootstrapping. Requests are matched to responses by
order on each connection (the broker answers in order); a Produce with acks=0 expects no response.
Used by `bench/capture_golden.py` to record golden frames, and by tests that check framing.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from tests.support.broker_process import free_port

_SIZE = struct.Struct(">i")
_HEADER = struct.Struct(">hhi")
_PRODUCE = 0


@dataclass(frozen=True)
class Exchange:
    """One frame seen by the proxy (without its size prefix), with the request it belongs to."""

    connection: int
    direction: str  # "request" or "response"
    api_key: int
    api_version: int
    correlation_id: int
    frame: bytes


FrameCallback = Callable[[Exchange], None]


class FrameProxy:
    def __init__(
        self,
        upstream_port: int,
        on_frame: FrameCallback,
        port: int | None = None,
        upstream_host: str = "127.0.0.1",
    ) -> None:
        """`on_frame` runs on the pumping thread before the bytes that completed the frame are passed
        on: a callback that blocks holds the rest of that connection's traffic in that direction."""
        self.upstream_port = upstream_port
        self.upstream_host = upstream_host
        self.on_frame = on_frame
        self.port = port or free_port()
        self.errors: list[str] = []
        self._listener = socket.create_server(("127.0.0.1", self.port))
        self._listener.settimeout(0.2)
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._connections = 0

    def start(self) -> FrameProxy:
        self._spawn(self._accept_loop)
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._listener.close()
        with self._lock:
            for sock in self._sockets:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
        for thread in self._threads:
            thread.join(5)

    def __enter__(self) -> FrameProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ----- internals -----------------------------------------------------------------------------

    def _spawn(self, target: Callable[..., None], *args: object) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _accept_loop(self) -> None:
        while not self._stopping.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            try:
                upstream = socket.create_connection((self.upstream_host, self.upstream_port))
            except OSError:  # the broker is down: the client sees its connection closed
                client.close()
                continue
            with self._lock:
                self._connections += 1
                number = self._connections
                self._sockets += [client, upstream]
            pending: deque[tuple[int, int, int]] = deque()
            self._spawn(self._pump, number, client, upstream, pending, True)
            self._spawn(self._pump, number, upstream, client, pending, False)

    def _pump(
        self,
        number: int,
        source: socket.socket,
        sink: socket.socket,
        pending: deque[tuple[int, int, int]],
        requests: bool,
    ) -> None:
        buffer = bytearray()
        try:
            while True:
                chunk = source.recv(1 << 16)
                if not chunk:
                    break
                buffer += chunk
                # Requests are noted before they are forwarded, so their responses always find them.
                while len(buffer) >= 4:
                    (size,) = _SIZE.unpack_from(buffer, 0)
                    if len(buffer) < 4 + size:
                        break
                    frame = bytes(buffer[4 : 4 + size])
                    del buffer[: 4 + size]
                    self._frame(number, frame, pending, requests)
                sink.sendall(chunk)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def _frame(self, number: int, frame: bytes, pending: deque[tuple[int, int, int]], request: bool) -> None:
        if request:
            if len(frame) < _HEADER.size:
                self.errors.append(f"connection {number}: request frame of {len(frame)} bytes")
                return
            api_key, api_version, correlation_id = _HEADER.unpack_from(frame, 0)
            if not (api_key == _PRODUCE and _produce_acks(frame, api_version) == 0):
                pending.append((api_key, api_version, correlation_id))
            self.on_frame(Exchange(number, "request", api_key, api_version, correlation_id, frame))
            return
        correlation_id = _SIZE.unpack_from(frame, 0)[0] if len(frame) >= 4 else -1
        if not pending:
            self.errors.append(f"connection {number}: response {correlation_id} to no request")
            return
        api_key, api_version, expected = pending.popleft()
        if correlation_id != expected:
            self.errors.append(
                f"connection {number}: response correlation id {correlation_id}, expected {expected} "
                f"(api {api_key} v{api_version}, {len(frame)} bytes)"
            )
        self.on_frame(Exchange(number, "response", api_key, api_version, correlation_id, frame))


def _produce_acks(frame: bytes, api_version: int) -> int | None:
    """The acks of a Produce request frame, or None if it cannot be read."""
    from odradek.protocol.frames import decode_request

    try:
        _, body = decode_request(frame)
    except Exception:
        return None
    return int(body.acks)
