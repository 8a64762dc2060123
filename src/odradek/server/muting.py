"""What stops a connection reading, and how many of its requests the request queue counts (Kafka's
KafkaChannel mute states, which its Processor drives).

A connection stops reading while any of these holds, and reads again once none does:
- its requests are being answered and one more read came meanwhile (`paused_for_requests`; Kafka mutes
  a channel from a request's arrival until its answer is sent, connection.py says why only then);
- the memory pool of `queued.max.request.bytes` has nothing free (`paused_for_memory`);
- the request queue of `queued.max.requests` is full (`paused_for_queue`);
- KIP-219: a throttled response was sent, and the client's quota delay has not passed (`muted_until`);
  nothing is handled meanwhile either.

The request queue counts a connection's requests read and waiting to be taken up: none while it
handles one, waits for its client to take its answers, is muted for a quota, or is done
(request_queue.py says why).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque

from odradek.server.request_queue import RequestQueue


class MutableChannel(asyncio.BufferedProtocol):
    """A connection's muting; `Connection` reads, handles and answers."""

    #: what the connection keeps, read here: its requests read and not yet taken up, and whether it
    #: handles one, waits for its client to take its answers, or has stopped serving
    frames: deque[bytearray]
    busy: bool
    waiting_for_client: bool
    serving_stopped: bool

    def __init__(self, request_queue: RequestQueue | None) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.wakeup = asyncio.Event()
        self.request_queue = request_queue
        #: How many of this connection's requests the request queue counts now (see `_recount`).
        self.requests_counted = 0
        #: From a read that brought requests until they are answered nothing more is read (Kafka's
        #: muted channel): the transport is paused at the next read that comes meanwhile. Reading
        #: stops too while the memory pool has nothing free.
        self.reading_paused = False
        self.muted_for_requests = False
        self.paused_for_requests = False
        self.paused_for_memory = False
        self.paused_for_queue = False
        #: KIP-219: after a throttled response the connection reads and handles nothing until then.
        self.muted_until = 0.0

    def mute(self, throttle_ms: int) -> None:
        """Stop reading and handling for `throttle_ms` (Kafka mutes a throttled client's channel)."""
        self.muted_until = max(self.muted_until, time.monotonic() + throttle_ms / 1000)
        self._recount()
        self._update_reading()

    async def _stay_muted(self) -> None:
        remaining = self.muted_until - time.monotonic()
        if remaining > 0:
            self.wakeup.clear()
            with contextlib.suppress(TimeoutError):  # close() sets wakeup: closing stops the wait
                await asyncio.wait_for(self.wakeup.wait(), remaining)
            if time.monotonic() < self.muted_until:
                return
        self.muted_until = 0.0
        self._recount()
        self._update_reading()

    def _memory_released(self) -> None:
        self.paused_for_memory = False
        self._update_reading()

    def _queue_has_room(self) -> None:
        self.paused_for_queue = False
        self._update_reading()

    def _recount(self) -> None:
        """Tell the request queue how many requests this connection has waiting to be taken up: none
        while it handles one (those behind it would not have been read yet in Kafka, and the one under
        way has left Kafka's queue, whatever it waits for), waits for its client to take its answers, is
        muted for a quota, or is done."""
        queue = self.request_queue
        if queue is None:
            return
        held = self.busy or self.waiting_for_client or self.muted_until or self.closed or self.serving_stopped
        waiting = 0 if held else len(self.frames)
        if waiting != self.requests_counted:
            delta, self.requests_counted = waiting - self.requests_counted, waiting
            queue.change(delta)

    def _update_reading(self) -> None:
        paused = (
            self.paused_for_requests
            or self.paused_for_memory
            or self.paused_for_queue
            or self.muted_until > 0
        )
        if paused == self.reading_paused or self.transport is None or self.closed:
            return
        self.reading_paused = paused
        if paused:
            self.transport.pause_reading()
        else:
            self.transport.resume_reading()
