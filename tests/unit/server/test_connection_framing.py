"""The connection's framing: frames of any size, arriving in pieces of any size, come out whole and in
order; large ones are received into a buffer of their own; an oversized declared size closes."""

from __future__ import annotations

import struct
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from odradek.server import connection as connection_module
from odradek.server.connection import Connection


class FakeTransport:
    def __init__(self) -> None:
        self.closed = False
        self.paused = False

    def close(self) -> None:
        self.closed = True

    def pause_reading(self) -> None:
        self.paused = True

    def resume_reading(self) -> None:
        self.paused = False


def make_connection(max_request_bytes: int = 100 * 1024 * 1024) -> tuple[Connection, FakeTransport]:
    conn = Connection(
        services=None, listener="PLAINTEXT", max_request_bytes=max_request_bytes, on_close=lambda c: None
    )  # type: ignore[arg-type]
    transport = FakeTransport()
    conn.transport = transport  # type: ignore[assignment]
    return conn, transport


def feed(conn: Connection, data: bytes, chunk: int) -> None:
    """What the event loop does: ask for a buffer, read at most its size into it, report how much."""
    pos = 0
    while pos < len(data) and not conn.closed:
        buffer = conn.get_buffer(-1)
        n = min(chunk, len(buffer), len(data) - pos)
        assert n > 0
        buffer[:n] = data[pos : pos + n]
        del buffer  # the loop drops its view before the next get_buffer
        conn.buffer_updated(n)
        pos += n


def framed(*bodies: bytes) -> bytes:
    return b"".join(struct.pack(">i", len(body)) + body for body in bodies)


def body_of(size: int, seed: int) -> bytes:
    return bytes((seed + i * 7) % 251 for i in range(size))


sizes = st.one_of(
    st.integers(0, 64),
    st.integers(16 * 1024 - 8, 16 * 1024 + 8),
    st.integers(0, 300_000),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(sizes, min_size=1, max_size=6), st.integers(1, 300_000))
def test_frames_come_out_whole_and_in_order(frame_sizes: list[int], chunk: int) -> None:
    bodies = [body_of(size, seed) for seed, size in enumerate(frame_sizes)]
    conn, transport = make_connection()
    feed(conn, framed(*bodies), chunk)
    assert [bytes(frame) for frame in conn.frames] == bodies
    assert all(isinstance(frame, bytearray) for frame in conn.frames)
    assert conn.queued_bytes == sum(frame_sizes)
    assert conn.large_frame is None and not transport.closed


def test_a_frame_larger_than_the_upfront_allocation_grows_as_it_arrives(monkeypatch: Any) -> None:
    monkeypatch.setattr(connection_module, "_UPFRONT_FRAME_BYTES", 100_000)
    body = body_of(1_000_000, 3)
    conn, _ = make_connection()
    feed(conn, framed(body)[:150_000], 65_536)
    assert conn.large_frame is not None and len(conn.large_frame) < len(body)  # not reserved whole
    feed(conn, framed(body)[150_000:] + framed(b"next"), 65_536)
    assert [bytes(frame) for frame in conn.frames] == [body, b"next"]


def test_a_declared_size_over_the_limit_closes_before_the_body_arrives() -> None:
    conn, transport = make_connection(max_request_bytes=1000)
    feed(conn, framed(b"ok") + struct.pack(">i", 1001), 1 << 20)
    assert transport.closed and [bytes(f) for f in conn.frames] == [b"ok"]
    conn, transport = make_connection()
    feed(conn, struct.pack(">i", -1), 4)
    assert transport.closed and not conn.frames


def test_reading_pauses_when_too_many_frames_wait() -> None:
    conn, transport = make_connection()
    feed(conn, framed(*[b"x"] * (connection_module._MAX_QUEUED_FRAMES + 1)), 1 << 20)
    assert transport.paused
