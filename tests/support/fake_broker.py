"""A fake broker for controller tests: an asyncio TCP server that decodes what the controller sends
(LeaderAndIsr, UpdateMetadata, StopReplica...) with odradek's own codec, records it in order and
answers success. Register it in ZooKeeper with `registration()` so the controller connects to it.

Reusable by the wiring step: `FakeBroker(broker_id)`, `await start()`, `requests_of(api_key)`,
`await wait_for(predicate)`, `await stop()`. A test that plays the controller (AlterPartition) gives a
`responder`: it returns the response to send, or None to leave the request unanswered.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from odradek.cluster.zookeeper.broker_znode import BrokerRegistration, ListenerEndpoint
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.frames import decode_request, encode_response
from odradek.protocol.messages import RESPONSES
from odradek.protocol.messages.request_header import RequestHeader

_SIZE = struct.Struct(">i")


@dataclass(frozen=True)
class Received:
    header: RequestHeader
    body: Any

    @property
    def api_key(self) -> int:
        return int(self.header.request_api_key)


class FakeBroker:
    def __init__(
        self,
        broker_id: int,
        listener: str = "PLAINTEXT",
        host: str = "127.0.0.1",
        responder: Callable[[Received], Awaitable[Any]] | None = None,
    ) -> None:
        self.broker_id = broker_id
        self.responder = responder
        self.listener = listener
        self.host = host
        self.port = 0
        self.received: list[Received] = []
        self._server: asyncio.base_events.Server | None = None
        self._connections: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> FakeBroker:
        self._server = await asyncio.start_server(self._serve, self.host, self.port or 0)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self

    async def stop(self) -> None:
        """Close the listener and every connection (the controller sees a broker gone away)."""
        if self._server is not None:
            self._server.close()
            for writer in list(self._connections):
                writer.close()
            await self._server.wait_closed()
            self._server = None
        tasks, self._tasks = self._tasks, set()
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def registration(self, timestamp_ms: int | None = None) -> BrokerRegistration:
        """Its /brokers/ids/<id> registration, advertising this server on `listener`."""
        endpoint = ListenerEndpoint(self.listener, self.host, self.port, "PLAINTEXT")
        return BrokerRegistration(self.broker_id, (endpoint,), timestamp_ms or int(time.time() * 1000))

    def requests_of(self, api_key: ApiKey) -> list[Any]:
        return [r.body for r in self.received if r.api_key == api_key]

    def api_keys(self) -> list[ApiKey]:
        return [ApiKey(r.api_key) for r in self.received]

    def clear(self) -> None:
        self.received.clear()

    async def wait_for(self, predicate: Callable[[FakeBroker], bool], timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while not predicate(self):
            if time.monotonic() > deadline:
                raise TimeoutError(f"fake broker {self.broker_id} received only {self.api_keys()}")
            await asyncio.sleep(0.02)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._connections.add(writer)
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            while True:
                (size,) = _SIZE.unpack(await reader.readexactly(4))
                header, body = decode_request(await reader.readexactly(size))
                received = Received(header, body)
                self.received.append(received)
                if self.responder is not None:
                    response = await self.responder(received)
                    if response is None:
                        continue
                else:
                    # every field of a response has a default meaning success (error_code 0, no errors)
                    response = RESPONSES[header.request_api_key](error_code=0)
                writer.write(encode_response(response, header.request_api_version, header.correlation_id))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            # the connection ends (or the fake broker stops): a top-level handler has nobody to tell
            pass
        finally:
            self._connections.discard(writer)
            if task is not None:
                self._tasks.discard(task)
            writer.close()
