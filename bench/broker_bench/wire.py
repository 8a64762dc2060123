"""Just enough of the Kafka wire protocol, by hand, to talk to any broker without a client library.

ApiVersions v0 is the one request every Kafka-compatible broker must answer at version 0: the bench
uses it to see that a broker is up, to hold idle-but-real connections, and to ask which APIs a broker
serves (to skip the consumer-group scenario where JoinGroup is not served).
"""

from __future__ import annotations

import socket
import struct
import time

API_VERSIONS = 18
JOIN_GROUP = 11

_CLIENT_ID = b"odradek-bench"


def api_versions_request(correlation_id: int) -> bytes:
    """A whole ApiVersions v0 frame: size, header v1 (key, version, correlation id, client id)."""
    body = struct.pack(">hhih", API_VERSIONS, 0, correlation_id, len(_CLIENT_ID)) + _CLIENT_ID
    return struct.pack(">i", len(body)) + body


def read_frame(sock: socket.socket) -> bytes:
    (size,) = struct.unpack(">i", _read_exactly(sock, 4))
    return _read_exactly(sock, size)


def parse_api_versions(frame: bytes) -> dict[int, tuple[int, int]]:
    """ApiVersions v0 response: correlation id, error code, [api key, min version, max version]."""
    _, error_code, count = struct.unpack_from(">ihi", frame, 0)
    if error_code != 0:
        raise RuntimeError(f"ApiVersions error {error_code}")
    versions = {}
    for index in range(count):
        key, low, high = struct.unpack_from(">hhh", frame, 10 + 6 * index)
        versions[key] = (low, high)
    return versions


def api_versions(host: str, port: int, timeout: float = 5.0) -> dict[int, tuple[int, int]]:
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(api_versions_request(1))
        return parse_api_versions(read_frame(sock))


def wait_until_serving(host: str, port: int, timeout: float, alive: object = None) -> float:
    """Poll with ApiVersions until the broker answers; returns the seconds it took."""
    started = time.monotonic()
    deadline = started + timeout
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        if callable(alive) and not alive():
            raise RuntimeError("broker process exited while starting")
        try:
            api_versions(host, port, timeout=1.0)
            return time.monotonic() - started
        except (OSError, RuntimeError, struct.error) as error:
            last_error = error
            time.sleep(0.05)
    raise TimeoutError(f"broker at {host}:{port} did not answer ApiVersions in {timeout}s: {last_error}")


def _read_exactly(sock: socket.socket, size: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = sock.recv(size - len(chunks))
        if not chunk:
            raise ConnectionError("connection closed by the broker")
        chunks += chunk
    return bytes(chunks)
