"""Idle expiry (`connections.max.idle.ms`) as Kafka's Selector does it: a connection is idle when its
client has sent nothing and taken none of its answers for that long, whatever the connection is doing.
Before, a connection with a request being handled or a frame queued was never idle, so a client that
stopped reading (its answer then never finished) held the connection and everything queued on it for
ever; and the idle close was graceful, which waits for the client to read what is pending."""

from __future__ import annotations

from odradek.server.connection import Connection
from odradek.server.framing import ReadScratch
from odradek.server.output import ResponseOutput, ResponseWriter


class Transport:
    """A stream transport whose buffered bytes the test sets (a client reading or not)."""

    def __init__(self) -> None:
        self.buffered = 0
        self.written = 0
        self.closed = False
        self.aborted = False

    def write(self, data: bytes) -> None:
        self.written += len(data)
        self.buffered += len(data)

    def get_write_buffer_size(self) -> int:
        return self.buffered

    def is_closing(self) -> bool:
        return self.closed or self.aborted

    def get_extra_info(self, name: str) -> object:
        return None  # no socket: what leaves `buffered` counts as taken

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.aborted = True

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def connection() -> tuple[Connection, Transport]:
    conn = Connection(
        services=None,  # type: ignore[arg-type]
        listener="PLAINTEXT",
        max_request_bytes=1 << 20,
        on_close=lambda c: None,
        scratch=ReadScratch(),
    )
    transport = Transport()
    conn.transport = transport  # type: ignore[assignment]
    conn.writer = ResponseWriter(transport)  # type: ignore[arg-type]
    conn.peer = ("127.0.0.1", 50_000)
    return conn, transport


def answer(size: int) -> ResponseOutput:
    out = ResponseOutput()
    out += b"a" * size
    return out


def test_a_busy_connection_whose_client_takes_none_of_its_answers_is_idle() -> None:
    conn, _transport = connection()
    assert conn.writer is not None
    conn.writer.write_now(answer(100_000))
    conn.writer.pause_writing()
    conn.busy = True  # waiting for the answer to drain, the next frame queued behind it
    conn.frames.append(bytearray(b"next"))
    conn.last_active = 100.0
    conn.bytes_taken_seen = conn.writer.bytes_taken
    assert conn.idle_for(130.0) == 30.0


def test_answers_the_client_takes_off_the_socket_count_as_life() -> None:
    conn, transport = connection()
    assert conn.writer is not None
    conn.writer.write_now(answer(100_000))
    conn.last_active = 100.0
    transport.buffered = 40_000  # the client reads, slowly
    assert conn.idle_for(130.0) == 0.0
    assert conn.idle_for(140.0) == 10.0  # and then stops
    transport.buffered = 39_000
    assert conn.idle_for(150.0) == 0.0


def test_expiry_closes_at_once_dropping_the_answers_the_client_did_not_take() -> None:
    conn, transport = connection()
    assert conn.writer is not None
    conn.writer.pending.append(answer(10))
    conn.expire(600_000)
    assert transport.aborted and not transport.closed and transport.written == 0
    assert conn.closed
