"""A TCP proxy on 127.0.0.1 in front of a ZooKeeper server that can drop connections mid-SASL.

ZooKeeper's client frames are a 4-byte size and a body: first the ConnectRequest, then requests that
start with a header (xid, op code). `drop_during_sasl(n)` makes the proxy close the next `n`
connections whose client sends a SASL request (op code 102), without forwarding it: the session was
created (its ConnectResponse came back) and the login never answered, as when a network path breaks in
the middle of the exchange. `drop_all()` closes every connection open now, so clients reconnect.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading

from tests.support.broker_process import free_port

_SIZE = struct.Struct(">i")
_HEADER = struct.Struct(">ii")
#: ZooKeeper's OpCode.sasl.
SASL_OP = 102


class ZooKeeperProxy:
    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.port = free_port()
        #: SASL requests dropped so far (each with its connection).
        self.dropped = 0
        self._drops_left = 0
        self._listener = socket.create_server(("127.0.0.1", self.port))
        self._listener.settimeout(0.2)
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._threads: list[threading.Thread] = []

    @property
    def connect_string(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> ZooKeeperProxy:
        self._spawn(self._accept_loop)
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._listener.close()
        self.drop_all()
        for thread in self._threads:
            thread.join(5)

    def drop_during_sasl(self, connections: int) -> None:
        with self._lock:
            self._drops_left = connections

    def drop_all(self) -> None:
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for pair in pairs:
            _close(*pair)

    # ----- internals -----------------------------------------------------------------------------

    def _spawn(self, target: object, *args: object) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)  # type: ignore[arg-type]
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
                upstream = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                self._pairs.append((client, upstream))
            self._spawn(self._requests, client, upstream)
            self._spawn(self._responses, upstream, client)

    def _requests(self, client: socket.socket, upstream: socket.socket) -> None:
        buffer = bytearray()
        first = True
        try:
            while chunk := client.recv(1 << 16):
                buffer += chunk
                while len(buffer) >= _SIZE.size:
                    (size,) = _SIZE.unpack_from(buffer)
                    if len(buffer) < _SIZE.size + size:
                        break
                    frame = bytes(buffer[: _SIZE.size + size])
                    del buffer[: _SIZE.size + size]
                    if not first and self._drops_sasl(frame):
                        return
                    first = False
                    upstream.sendall(frame)
        except OSError:
            pass
        finally:
            _close(client, upstream)

    def _drops_sasl(self, frame: bytes) -> bool:
        if len(frame) < _SIZE.size + _HEADER.size:
            return False
        _, op = _HEADER.unpack_from(frame, _SIZE.size)
        with self._lock:
            if op != SASL_OP or self._drops_left <= 0:
                return False
            self._drops_left -= 1
            self.dropped += 1
        return True

    def _responses(self, upstream: socket.socket, client: socket.socket) -> None:
        try:
            while chunk := upstream.recv(1 << 16):
                client.sendall(chunk)
        except OSError:
            pass
        finally:
            _close(upstream, client)


def _close(*sockets: socket.socket) -> None:
    for sock in sockets:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        sock.close()
