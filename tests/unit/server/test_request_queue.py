"""queued.max.requests: when that many requests have been read and are waiting to be taken up, across
every connection, a connection that reads stops reading until one is taken up (Kafka's network threads
stop at a full request queue). A request being handled, whatever it waits for, has left the queue, and
so have the requests a connection read behind it (in Kafka they would still be in the socket): a
request that waits on another connection's request never stops that request being read."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Awaitable, Callable

from odradek.server.connection import Connection
from odradek.server.framing import ReadScratch
from odradek.server.request_queue import RequestQueue

Handler = Callable[[str], Awaitable[None]]


class Transport:
    """A socket as the connection sees it: whether it may read, and what it wrote."""

    def __init__(self) -> None:
        self.paused = False
        self.closed = False

    def get_extra_info(self, name: str) -> object:
        return ("127.0.0.1", 50_000) if name == "peername" else None

    def pause_reading(self) -> None:
        self.paused = True

    def resume_reading(self) -> None:
        self.paused = False

    def write(self, data: bytes) -> None:
        pass

    def get_write_buffer_size(self) -> int:
        return 0

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.closed = True


class ScriptedConnection(Connection):
    """A connection whose requests are names handed to a test's handler."""

    def __init__(self, queue: RequestQueue, handler: Handler) -> None:
        super().__init__(
            services=None,  # type: ignore[arg-type]
            listener="PLAINTEXT",
            max_request_bytes=1 << 20,
            on_close=lambda c: None,
            scratch=ReadScratch(),
            request_queue=queue,
        )
        self.handler = handler
        self.socket = Transport()
        self.connection_made(self.socket)  # type: ignore[arg-type]

    async def _handle(self, frame: bytearray) -> None:
        await self.handler(frame.decode())

    def receive(self, *requests: str) -> None:
        """One read bringing these requests, as the socket would deliver them (only while reading)."""
        assert not self.socket.paused, "the kernel would hold these bytes: the connection is not reading"
        data = b"".join(struct.pack(">i", len(name)) + name.encode() for name in requests)
        buffer = self.get_buffer(len(data))
        buffer[: len(data)] = data
        self.buffer_updated(len(data))


async def until(condition: Callable[[], bool]) -> None:
    """Let the loop run until `condition` holds (each step is one turn of the loop, not a time)."""
    for _ in range(1000):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("the connections never got there")


def test_reading_stops_at_queued_max_requests_and_resumes_once_a_request_is_taken_up() -> None:
    async def main() -> None:
        queue = RequestQueue(3)
        handled: list[str] = []

        async def handle(name: str) -> None:
            handled.append(name)

        a, b, c, d = (ScriptedConnection(queue, handle) for _ in range(4))
        a.receive("a1")
        b.receive("b1")
        assert queue.queued == 2 and not (a.socket.paused or b.socket.paused)
        c.receive("c1")  # the third request: the queue is full, this connection reads no more
        assert queue.queued == 3 and c.socket.paused
        d.receive("d1")  # already read when it arrives (the bound is not strict by one read)
        assert queue.queued == 4 and d.socket.paused
        await until(lambda: len(handled) == 4)
        assert sorted(handled) == ["a1", "b1", "c1", "d1"] and queue.queued == 0
        assert not (c.socket.paused or d.socket.paused)
        for connection in (a, b, c, d):
            connection.close()

    asyncio.run(main())


def test_a_request_waiting_on_another_connections_request_never_stops_that_one_being_read() -> None:
    """acks=all waits for the followers' fetches: with the requests read behind it counted, the queue
    stayed full and the follower's connection was never read again."""

    async def main() -> None:
        queue = RequestQueue(1)
        handled: list[str] = []
        go = asyncio.Event()

        async def handle(name: str) -> None:
            if name == "produce":
                await go.wait()
            if name == "fetch":
                go.set()
            handled.append(name)

        producer, follower = ScriptedConnection(queue, handle), ScriptedConnection(queue, handle)
        producer.receive("produce", "produce-2", "produce-3")  # pipelined
        follower.receive("api-versions")  # the queue is full: after this read it reads no more
        assert producer.socket.paused and follower.socket.paused
        await until(lambda: handled == ["api-versions"])
        # the produce waits, and the two behind it are not waiting to be taken up: reading resumes
        assert queue.queued == 0 and not follower.socket.paused
        follower.receive("fetch")
        await until(lambda: len(handled) == 5)
        assert handled == ["api-versions", "fetch", "produce", "produce-2", "produce-3"]
        assert queue.queued == 0
        for connection in (producer, follower):
            connection.close()

    asyncio.run(main())


def test_a_closed_connection_gives_back_its_place_in_the_queue() -> None:
    async def main() -> None:
        queue = RequestQueue(2)

        async def never(name: str) -> None:
            await asyncio.Event().wait()

        closing, waiting = ScriptedConnection(queue, never), ScriptedConnection(queue, never)
        closing.receive("x1", "x2")
        waiting.receive("y1")
        assert queue.queued == 3 and waiting.socket.paused
        closing.connection_lost(None)  # before its task took any up
        assert queue.queued == 1 and not waiting.socket.paused
        waiting.close()

    asyncio.run(main())


def test_a_connection_whose_serving_failed_is_closed_rather_than_holding_its_place_in_the_queue() -> None:
    """A failure escaping a connection's task (a bug outside any handler) left its requests counted
    for good, and with them every other connection stopped being read once the queue was full."""

    async def main() -> None:
        queue = RequestQueue(2)

        async def fail(name: str) -> None:
            raise RuntimeError(name)  # with no services, counting it fails too: the task ends

        failing = ScriptedConnection(queue, fail)
        failing.receive("boom", "next")
        assert queue.queued == 2
        await until(lambda: failing.closed)
        assert failing.socket.closed and queue.queued == 0

    asyncio.run(main())


def test_a_client_that_never_reads_its_answers_holds_no_place_in_the_queue() -> None:
    """A connection waiting for its client to take its answers takes up nothing more (Kafka mutes a
    channel until its response is sent): the requests read meanwhile stayed counted for as long as the
    client did not read, so a few such clients kept the queue full and every other connection unread."""

    async def main() -> None:
        queue = RequestQueue(2)
        handled: list[str] = []

        async def handle(name: str) -> None:
            handled.append(name)

        stalled, other = ScriptedConnection(queue, handle), ScriptedConnection(queue, handle)
        stalled.receive("m1")
        stalled.pause_writing()  # its answers fill the socket: the client does not read them
        await until(
            lambda: handled == ["m1"] and stalled.writer is not None and stalled.writer.drained is not None
        )
        stalled.receive("m2", "m3")  # one more read comes before the connection stops reading
        assert stalled.socket.paused
        assert queue.queued == 0
        other.receive("o1")
        assert not other.socket.paused
        await until(lambda: "o1" in handled)
        stalled.resume_writing()  # the client reads again: its requests are taken up
        await until(lambda: len(handled) == 4)
        assert handled == ["m1", "o1", "m2", "m3"] and queue.queued == 0
        for connection in (stalled, other):
            connection.close()

    asyncio.run(main())
