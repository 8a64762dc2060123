"""Responses finished in one turn of the event loop leave in one write, in order; a connection that
closes still sends the answers it already gave."""

from __future__ import annotations

import asyncio

from odradek.server.output import FLUSH_BYTES, ResponseOutput, ResponseWriter


class RecordingTransport:
    def __init__(self) -> None:
        self.writes: list[bytes] = []  # one entry per write call
        self.closing = False

    def write(self, data: bytes) -> None:
        self.writes.append(bytes(data))

    def writelines(self, data: list[bytes]) -> None:
        self.writes.append(b"".join(bytes(d) for d in data))

    def is_closing(self) -> bool:
        return self.closing


def output(data: bytes) -> ResponseOutput:
    out = ResponseOutput()
    out += data
    return out


def test_responses_of_one_loop_turn_leave_in_one_write_in_order() -> None:
    async def scenario() -> list[bytes]:
        transport = RecordingTransport()
        writer = ResponseWriter(transport)  # type: ignore[arg-type]
        for data in (b"one", b"two", b"three"):
            await writer.send(output(data))
        assert transport.writes == []  # not yet: at the end of this turn
        await asyncio.sleep(0)
        await writer.send(output(b"four"))
        await asyncio.sleep(0)
        return transport.writes

    assert asyncio.run(scenario()) == [b"onetwothree", b"four"]


def test_pending_answers_go_out_before_an_immediate_one_and_not_after_loss() -> None:
    async def scenario() -> list[bytes]:
        transport = RecordingTransport()
        writer = ResponseWriter(transport)  # type: ignore[arg-type]
        await writer.send(output(b"first"))
        writer.write_now(output(b"second"))
        await writer.send(output(b"dropped"))
        writer.connection_lost()
        await asyncio.sleep(0)
        return transport.writes

    assert asyncio.run(scenario()) == [b"first", b"second"]


class NeverReadTransport(RecordingTransport):
    """asyncio's flow control over a client that reads nothing: everything written stays buffered, and
    past the high-water mark the writer is paused (for good)."""

    def __init__(self) -> None:
        super().__init__()
        self.writer: ResponseWriter | None = None
        self.aborted = False

    def write(self, data: bytes) -> None:
        super().write(data)
        self._flow_control()

    def writelines(self, data: list[bytes]) -> None:
        super().writelines(data)
        self._flow_control()

    def get_write_buffer_size(self) -> int:
        return sum(len(written) for written in self.writes)

    def abort(self) -> None:
        self.aborted = True

    def _flow_control(self) -> None:
        if self.writer is not None and self.get_write_buffer_size() > 64 * 1024:
            self.writer.pause_writing()


def test_answers_of_one_turn_are_written_once_they_reach_flush_bytes_and_send_then_waits() -> None:
    """A read of thousands of small requests answered in one turn of the loop held all the answers
    (megabytes) before writing any: now a client that does not read stops them at about 64 KiB."""

    async def scenario() -> None:
        transport = NeverReadTransport()
        writer = ResponseWriter(transport)  # type: ignore[arg-type]
        transport.writer = writer

        async def answer_all() -> None:
            for _ in range(1000):
                await writer.send(output(b"a" * 1024))

        answering = asyncio.create_task(answer_all())
        for _ in range(5):
            await asyncio.sleep(0)
        assert not answering.done()
        assert transport.get_write_buffer_size() <= 2 * FLUSH_BYTES
        assert writer.bytes_taken == 0 and writer.backed_up
        answering.cancel()

    asyncio.run(scenario())


def test_bytes_taken_are_those_written_less_those_the_transport_still_buffers() -> None:
    class Draining(RecordingTransport):
        buffered = 0

        def get_write_buffer_size(self) -> int:
            return self.buffered

    async def scenario() -> None:
        transport = Draining()
        writer = ResponseWriter(transport)  # type: ignore[arg-type]
        writer.write_now(output(b"x" * 1000))
        transport.buffered = 600
        assert writer.bytes_taken == 400
        transport.buffered = 0
        assert writer.bytes_taken == 1000

    asyncio.run(scenario())


def test_abort_drops_the_answers_not_yet_written() -> None:
    async def scenario() -> None:
        transport = NeverReadTransport()
        writer = ResponseWriter(transport)  # type: ignore[arg-type]
        await writer.send(output(b"never"))
        writer.abort()
        await asyncio.sleep(0)
        assert transport.aborted and transport.writes == []

    asyncio.run(scenario())
