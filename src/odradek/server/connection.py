"""One client connection: size-prefixed framing, requests handled one at a time, responses in order.

Like Kafka, a connection's requests are processed in the order they arrive and each response is
written before the next request is handled, so pipelined requests (a producer with several in flight)
are answered strictly in order. As Kafka mutes a channel from a request's arrival until its answer is
sent, a connection whose read has brought requests reads nothing more until all of them are answered
and its answers are not backed up (under the transport's high-water mark): what the client sends
meanwhile waits in the kernel. The transport is paused only when one more read comes in the meantime
(a pipelining client), since pausing and resuming it costs some 20 us, as much as a fifth of a small
request, and a client waiting for each answer sends nothing meanwhile. So a connection holds at most two
reads (2 x 256 KiB) of requests, or one request (`sasl.server.max.receive.size` before SASL
authentication, `socket.request.max.bytes` otherwise) and one read, plus answers up to the high-water
mark and one batch (`output.FLUSH_BYTES`) or one answer more. A client that does not read its answers
thereby stops being read, and the broker closes it after `connections.max.idle.ms` (`idle_for`,
`expire`). Pipelined requests keep working: they wait in the socket instead of in the broker, and a
read takes all that has arrived.

A declared size above `socket.request.max.bytes` (or negative) closes the connection before the body is
read; a malformed frame closes only this connection. With `queued.max.request.bytes`, request bodies
are reserved in the broker's `MemoryPool`; while it has nothing free the connection stops reading, and
resumes once a request somewhere has been handled. Requests read and waiting to be taken up are counted
in the broker's `RequestQueue` (`queued.max.requests`); while it is full a connection that reads stops
reading, and resumes once a request somewhere has been taken up (request_queue.py says what counts).

Frames are split off the byte stream by `framing.FrameReader` (reads without copies for large frames),
answers written by `output.ResponseWriter`; what stops the connection reading (muting, KIP-219
throttling) and what the request queue counts of it are its base's, `muting.MutableChannel`.

On a TLS listener the transport is TLS (the acceptor wraps it) and a client certificate names the
principal. On a SASL listener frames are kept to `sasl.server.max.receive.size` until authentication
completes. Each request is decoded, admitted (SASL), handled and answered by `request_handling`.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections import deque
from collections.abc import Callable
from typing import Any, Final, cast

from odradek.handlers._common.context import ANONYMOUS_PRINCIPAL, CloseConnection
from odradek.handlers._common.services import Services
from odradek.security.authenticator import SaslAuthenticator
from odradek.security.listener_security import ListenerSecurity
from odradek.security.principal_mapping import PrincipalMappingError, rfc2253_name
from odradek.server import metrics
from odradek.server.framing import FrameReader, FrameSizeError, ReadScratch
from odradek.server.memory_pool import MemoryPool
from odradek.server.muting import MutableChannel
from odradek.server.output import ResponseWriter
from odradek.server.request_handling import count_unexpected_error, handle_frame
from odradek.server.request_queue import RequestQueue

log = logging.getLogger("odradek.connection")

#: How long a connection handles requests back to back before it lets the others in (Kafka's request
#: handlers take requests from every connection in turn).
_FAIR_SHARE_SECONDS: Final = 0.005
#: Numbers the broker's connections from 1 (0 is no connection), as Kafka's connection ids name them.
_CONNECTION_IDS: Final = itertools.count(1)


class Connection(MutableChannel):
    def __init__(
        self,
        services: Services,
        listener: str,
        max_request_bytes: int,
        on_close: Callable[[Connection], None],
        scratch: ReadScratch,
        pool: MemoryPool | None = None,
        security: ListenerSecurity | None = None,
        request_queue: RequestQueue | None = None,
    ) -> None:
        super().__init__(request_queue)
        self.services = services
        self.connection_id = next(_CONNECTION_IDS)
        self.listener = listener
        self.max_request_bytes = max_request_bytes
        self.client_software: tuple[str, str] | None = None
        self.on_close = on_close
        self.peer: tuple[str, int] = ("", 0)
        self.pool = pool
        self.reader = FrameReader(scratch, max_request_bytes, pool)
        self.frames: deque[bytearray] = deque()
        self.queued_bytes = 0
        #: Waiting for the client to take its answers before taking up more (see `_next_frames`).
        self.waiting_for_client = False
        #: When bytes were last read from the client or its answers last taken (see idle_for).
        self.last_active = time.monotonic()
        self.bytes_taken_seen = 0
        self.task: asyncio.Task[None] | None = None
        self.writer: ResponseWriter | None = None
        self.busy = False
        #: Set when the broker stops: no further request is handled (Kafka's stopProcessingRequests).
        self.serving_stopped = False
        self.security = security
        #: The client certificate's principal on TLS listeners; anonymous otherwise.
        self.tls_principal = ANONYMOUS_PRINCIPAL
        self.sasl: SaslAuthenticator | None = None
        if security is not None and security.sasl is not None:
            self.sasl = SaslAuthenticator(security.sasl, services.scram_credential, services.token_credential)
            self.reader.max_frame_bytes = min(max_request_bytes, security.sasl.max_receive_size)

    # ----- asyncio.Protocol --------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream transport (uvloop's do not derive from asyncio.Transport, so no isinstance check).
        transport = cast(asyncio.Transport, transport)
        self.transport = transport
        peer = transport.get_extra_info("peername")
        if isinstance(peer, tuple):
            self.peer = (str(peer[0]), int(peer[1]))
        self.writer = ResponseWriter(transport)
        if self.security is not None and self.security.tls is not None and not self._take_tls_principal():
            self.closed = True
            transport.close()
            return
        self.task = asyncio.get_running_loop().create_task(self._serve())
        self.task.add_done_callback(self._serving_ended)

    def _serving_ended(self, task: asyncio.Task[None]) -> None:
        """A failure that escaped the task (a bug outside any handler) closes the connection: left
        open and unserved, its requests would stay counted in the request queue, and a full queue
        stops every connection reading."""
        if task.cancelled() or task.exception() is None or self.closed:
            return
        log.error("closing connection from %s:%d: serving it failed", *self.peer, exc_info=task.exception())
        self.close()

    def _take_tls_principal(self) -> bool:
        """The client certificate's DN through ssl.principal.mapping.rules; False when no rule applies."""
        assert self.security is not None and self.security.tls is not None and self.transport is not None
        ssl_object = self.transport.get_extra_info("ssl_object")
        certificate = ssl_object.getpeercert() if ssl_object is not None else None
        if not certificate:
            return True  # ssl.client.auth none or requested: anonymous
        dn = rfc2253_name(certificate.get("subject", ()))
        try:
            self.tls_principal = "User:" + self.security.tls.principal_mapper.name(dn)
        except PrincipalMappingError as error:
            log.info("closing TLS connection from %s:%d: %s", *self.peer, error)
            return False
        return True

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.reader.get_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        self.last_active = time.monotonic()
        if self.muted_for_requests and not self.paused_for_requests:
            self.paused_for_requests = True  # after this read, which the transport has made already
            self._update_reading()
        try:
            frames = self.reader.buffer_updated(nbytes)
        except FrameSizeError as error:
            self._refuse_frame_size(error)
            return
        if frames:
            self._queue(frames)
        queue = self.request_queue
        if queue is not None and queue.full and not self.paused_for_queue and not self.closed:
            self.paused_for_queue = True
            queue.wait(self, self._queue_has_room)
            self._update_reading()
        pool = self.pool
        if pool is not None and pool.exhausted and self.reader.large_frame is None and not self.closed:
            self.paused_for_memory = True
            pool.wait(self, self._memory_released)
            self._update_reading()

    def _refuse_frame_size(self, error: FrameSizeError) -> None:
        limit = self.reader.max_frame_bytes
        setting = (
            "socket.request.max.bytes" if limit == self.max_request_bytes else "sasl.server.max.receive.size"
        )
        log.warning(
            "closing connection: declared request size %d (%s=%d) from %s:%d",
            error.size,
            setting,
            limit,
            *self.peer,
        )
        self.close()

    def _queue(self, frames: list[bytearray]) -> None:
        self.frames.extend(frames)
        self.queued_bytes += sum(len(frame) for frame in frames)
        self.wakeup.set()
        self.muted_for_requests = True
        self._recount()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.wakeup.set()
        if self.request_queue is not None:
            self.request_queue.stop_waiting(self)
            self._recount()
        if self.writer is not None:
            self.writer.connection_lost()
        if self.pool is not None:
            self._release_reservations(self.pool)
        self.on_close(self)

    def _release_reservations(self, pool: MemoryPool) -> None:
        """Give back what this connection holds but will never handle (the frame being handled, if
        any, is released by `_serve` when its handler returns)."""
        pool.stop_waiting(self)
        held = self.queued_bytes + self.reader.reserved_in_progress
        self.frames.clear()
        self.queued_bytes = 0
        self.reader.large_frame = None
        if held:
            pool.release(held)

    def pause_writing(self) -> None:
        if self.writer is not None:
            self.writer.pause_writing()

    def resume_writing(self) -> None:
        if self.writer is not None:
            self.writer.resume_writing()

    # ----- processing --------------------------------------------------------------------------

    async def _serve(self) -> None:
        frames = self.frames
        stepped_aside = time.perf_counter()
        while not self.closed:
            if self.muted_until:
                await self._stay_muted()
                continue
            if not frames or self.serving_stopped:
                if not self.serving_stopped and await self._next_frames():
                    continue
                self.wakeup.clear()
                await self.wakeup.wait()
                stepped_aside = time.perf_counter()
                continue
            if time.perf_counter() - stepped_aside > _FAIR_SHARE_SECONDS:
                # handlers that never wait would otherwise run back to back for every request queued
                await asyncio.sleep(0)
                stepped_aside = time.perf_counter()
                continue
            frame = frames.popleft()
            self.queued_bytes -= len(frame)
            self.busy = True
            self._recount()
            started = time.perf_counter()
            try:
                await self._handle(frame)
            except CloseConnection as reason:
                log.info("closing connection from %s:%d: %s", *self.peer, reason)
                self.close()
            except Exception:
                count_unexpected_error(self, frame)
                self.close()
            finally:
                self.busy = False
                self._recount()
                if self.writer is None or not self.writer.backed_up:
                    self.last_active = time.monotonic()  # the answer (if any) is out
                if self.pool is not None:
                    self.pool.release(len(frame))
                if metrics.active is not None:
                    metrics.active.request_done(frame, time.perf_counter() - started)

    async def _next_frames(self) -> bool:
        """Once the requests queued are handled: queue the next ones of what was read already (True),
        or, when the answers are no longer backed up, read again (False)."""
        if not self.muted_for_requests:
            return False
        writer = self.writer
        if writer is not None and writer.paused:
            # Kafka's channel stays muted until its answer is sent: what this client sends meanwhile
            # is not counted in the request queue, or clients that never read would keep it full
            self.waiting_for_client = True
            try:
                await writer.drain()
            finally:
                self.waiting_for_client = False
                self._recount()
            if self.closed or self.frames:  # a read came meanwhile
                return True
        if len(self.reader.pending) >= 4:
            try:
                frames = self.reader.more_frames()
            except FrameSizeError as error:
                self._refuse_frame_size(error)
                return True
            if frames:
                self._queue(frames)
                return True
        self.muted_for_requests = False
        if self.paused_for_requests:
            self.paused_for_requests = False
            self._update_reading()
        return False

    @property
    def security_protocol(self) -> str:
        return self.security.security_protocol if self.security is not None else "PLAINTEXT"

    @property
    def principal(self) -> str:
        if self.sasl is not None and self.sasl.authenticated:
            return self.sasl.principal
        return self.tls_principal

    async def _handle(self, frame: bytearray) -> None:
        await handle_frame(self, frame)

    # ----- control -----------------------------------------------------------------------------

    def idle_for(self, now: float) -> float:
        """How long since the client last showed life: bytes read from it, or answers of its taken off
        the socket. As Kafka's idle expiry (which counts any I/O), whatever the connection is doing: a
        request being handled or answers the client does not read keep it no more than silence does."""
        if self.writer is not None:
            taken = self.writer.bytes_taken
            if taken > self.bytes_taken_seen:
                self.bytes_taken_seen = taken
                self.last_active = now
        return now - self.last_active

    def expire(self, idle_ms: int) -> None:
        """Close at once for `connections.max.idle.ms`, dropping answers the client has not taken: a
        graceful close would wait for it to read them, for ever if it never does."""
        log.info(
            "closing connection from %s:%d: idle for more than %d ms (connections.max.idle.ms)",
            *self.peer,
            idle_ms,
            extra={"fields": {"listener": self.listener, "principal": self.principal}},
        )
        self.closed = True
        self.wakeup.set()
        self._recount()
        if self.writer is not None:
            self.writer.abort()
        elif self.transport is not None:
            self.transport.abort()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.wakeup.set()
            self._recount()
            if self.writer is not None:
                self.writer.close()  # answers already given go out before the connection closes
            elif self.transport is not None:
                self.transport.close()

    def stop_serving(self) -> None:
        """Handle no request after the one under way (if any); the connection closes after. Those
        queued are never answered, as when Kafka's broker stops: the client sends them again
        elsewhere, rather than getting answers from services that are stopping."""
        self.serving_stopped = True
        self._recount()

    async def drain(self) -> None:
        """Wait until the request being handled (if any) is answered; used at shutdown."""
        while self.busy and not self.closed:
            await asyncio.sleep(0.01)

    def describe(self) -> dict[str, Any]:
        return {
            "peer": f"{self.peer[0]}:{self.peer[1]}",
            "listener": self.listener,
            "principal": self.principal,
        }
