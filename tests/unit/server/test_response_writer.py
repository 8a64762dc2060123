"""Responses finished in one turn of the event loop leave in one write, in order; a connection that
closes still sends the answers it already gave."""

from __future__ import annotations

import asyncio

from odradek.server.output import ResponseOutput, ResponseWriter


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
