"""One client connection: size-prefixed framing, requests handled one at a time, responses in order.

Like Kafka, a connection's requests are processed in the order they arrive and each response is
written before the next request is handled, so pipelined requests (a producer with several in flight)
are answered strictly in order. Frames that arrive meanwhile are queued; past a bound the socket stops
being read (back-pressure) until the queue drains. A declared size above `socket.request.max.bytes` (or
negative) closes the connection before the body is read; a malformed frame closes only this connection.

Reading is buffered without copies where it matters: the socket is read into a fixed scratch buffer, a
small frame is copied out of it once, and a large frame (a produce request, typically) gets a buffer of
its own that the socket then fills directly, so its records reach the log without ever being copied in
Python (the codec hands them out as a view of that buffer).
"""

from __future__ import annotations

import asyncio
import logging
import struct
import time
from collections import deque
from collections.abc import Callable
from typing import Any, Final

from odradek.handlers.context import RequestContext
from odradek.handlers.registry import registration_for
from odradek.handlers.services import Services
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.codec_error import CodecError
from odradek.protocol.frames import UnsupportedRequestError, decode_request, encode_response_into
from odradek.protocol.messages.request_header import RequestHeader
from odradek.server import metrics
from odradek.server.output import ResponseWriter

log = logging.getLogger("odradek.connection")

_SIZE: Final = struct.Struct(">i")
#: Queued-but-unhandled bytes past which the socket is no longer read.
_MAX_QUEUED_BYTES: Final = 64 * 1024 * 1024
_MAX_QUEUED_FRAMES: Final = 1000
#: The buffer every read lands in, unless a large frame is being received.
_SCRATCH_BYTES: Final = 256 * 1024
#: Frames at least this large are received into a buffer of their own (below: one copy from scratch).
_DIRECT_FRAME_BYTES: Final = 16 * 1024
#: A large frame's buffer is allocated whole up to this size, and grows as its bytes arrive beyond it,
#: so a peer that declares a huge frame and sends little cannot make the broker reserve it all.
_UPFRONT_FRAME_BYTES: Final = 8 * 1024 * 1024


class Connection(asyncio.BufferedProtocol):
    def __init__(
        self,
        services: Services,
        listener: str,
        max_request_bytes: int,
        on_close: Callable[[Connection], None],
    ) -> None:
        self.services = services
        self.listener = listener
        self.max_request_bytes = max_request_bytes
        self.on_close = on_close
        self.transport: asyncio.Transport | None = None
        self.peer: tuple[str, int] = ("", 0)
        self.scratch = bytearray(_SCRATCH_BYTES)
        self.scratch_view = memoryview(self.scratch)
        self.scratch_start = 0  # unparsed bytes are scratch[scratch_start:scratch_end]
        self.scratch_end = 0
        self.large_frame: bytearray | None = None  # a large frame being received, with its size
        self.large_frame_size = 0
        self.large_frame_filled = 0
        self.frames: deque[bytearray] = deque()
        self.queued_bytes = 0
        self.reading_paused = False
        self.wakeup = asyncio.Event()
        self.closed = False
        self.last_active = time.monotonic()
        self.task: asyncio.Task[None] | None = None
        self.writer: ResponseWriter | None = None
        self.busy = False

    # ----- asyncio.Protocol --------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        peer = transport.get_extra_info("peername")
        if isinstance(peer, tuple):
            self.peer = (str(peer[0]), int(peer[1]))
        self.writer = ResponseWriter(transport)
        self.task = asyncio.get_running_loop().create_task(self._serve())

    def get_buffer(self, sizehint: int) -> memoryview:
        frame = self.large_frame
        if frame is not None:
            filled = self.large_frame_filled
            if filled == len(frame):  # allocated in part (see _UPFRONT_FRAME_BYTES): grow it
                frame.extend(bytes(min(len(frame), self.large_frame_size - filled)))
            return memoryview(frame)[filled:]
        if _SCRATCH_BYTES - self.scratch_end < _DIRECT_FRAME_BYTES * 2:
            # Too little room left: move the unparsed tail (less than one small frame) to the front.
            start, end = self.scratch_start, self.scratch_end
            self.scratch[: end - start] = self.scratch_view[start:end]
            self.scratch_start, self.scratch_end = 0, end - start
        return self.scratch_view[self.scratch_end :]

    def buffer_updated(self, nbytes: int) -> None:
        self.last_active = time.monotonic()
        frame = self.large_frame
        if frame is not None:
            self.large_frame_filled += nbytes
            if self.large_frame_filled == self.large_frame_size:
                self.large_frame = None
                self._queue(frame)
                self._queued()
            return
        self.scratch_end += nbytes
        self._split_scratch()
        if self.frames:
            self._queued()

    def _split_scratch(self) -> None:
        """Queue the complete frames in scratch; start receiving a large incomplete one on its own."""
        scratch = self.scratch
        start, end = self.scratch_start, self.scratch_end
        while end - start >= 4:
            (size,) = _SIZE.unpack_from(scratch, start)
            if size < 0 or size > self.max_request_bytes:
                log.warning(
                    "closing connection: declared request size %d (socket.request.max.bytes=%d) from %s:%d",
                    size,
                    self.max_request_bytes,
                    *self.peer,
                )
                self.close()
                return
            body = start + 4
            if end - body >= size:
                self._queue(scratch[body : body + size])
                start = body + size
                continue
            if size >= _DIRECT_FRAME_BYTES:
                frame = bytearray(min(size, _UPFRONT_FRAME_BYTES))
                have = end - body
                frame[:have] = self.scratch_view[body:end]
                self.large_frame, self.large_frame_size, self.large_frame_filled = frame, size, have
                start = end
            break
        if start == end:
            start = end = 0
        self.scratch_start, self.scratch_end = start, end

    def _queue(self, frame: bytearray) -> None:
        self.frames.append(frame)
        self.queued_bytes += len(frame)

    def _queued(self) -> None:
        self.wakeup.set()
        if self.queued_bytes > _MAX_QUEUED_BYTES or len(self.frames) > _MAX_QUEUED_FRAMES:
            self._pause_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.wakeup.set()
        if self.writer is not None:
            self.writer.connection_lost()
        self.on_close(self)

    def pause_writing(self) -> None:
        if self.writer is not None:
            self.writer.pause_writing()

    def resume_writing(self) -> None:
        if self.writer is not None:
            self.writer.resume_writing()

    # ----- processing --------------------------------------------------------------------------

    async def _serve(self) -> None:
        frames = self.frames
        while not self.closed:
            if not frames:
                self.wakeup.clear()
                await self.wakeup.wait()
                continue
            frame = frames.popleft()
            self.queued_bytes -= len(frame)
            if self.reading_paused and self.queued_bytes < _MAX_QUEUED_BYTES // 2:
                self._resume_reading()
            self.busy = True
            started = time.perf_counter()
            try:
                await self._handle(frame)
            except Exception:
                log.exception("closing connection from %s:%d after an unexpected error", *self.peer)
                self.close()
            finally:
                self.busy = False
                self.last_active = time.monotonic()
                if metrics.active is not None:
                    metrics.active.request_done(frame, time.perf_counter() - started)

    async def _handle(self, frame: bytearray) -> None:
        try:
            header, request = decode_request(frame)
        except UnsupportedRequestError as error:
            self._answer_unsupported(error.header, str(error))
            return
        except CodecError as error:
            log.info("closing connection from %s:%d: malformed request: %s", *self.peer, error)
            self.close()
            return
        registration = registration_for(header.request_api_key, header.request_api_version)
        if registration is None:
            self._answer_unsupported(header, "not served")
            return
        context = RequestContext(
            header=header,
            api_version=header.request_api_version,
            client_host=self.peer[0],
            client_port=self.peer[1],
            listener=self.listener,
            services=self.services,
        )
        response = await registration.handler(request, context)
        if response is None or self.closed:
            return  # acks=0 produce: Kafka sends nothing back
        assert self.writer is not None
        out = self.writer.new_output()
        encode_response_into(out, response, header.request_api_version, header.correlation_id)
        await self.writer.send(out)

    def _answer_unsupported(self, header: RequestHeader, reason: str) -> None:
        """ApiVersions newer than ours gets a v0 error answer; any other unknown (key, version) closes."""
        if header.request_api_key == ApiKey.API_VERSIONS:
            from odradek.handlers.api_versions import unsupported_version_response

            assert self.writer is not None
            out = self.writer.new_output()
            encode_response_into(out, unsupported_version_response(), 0, header.correlation_id)
            self.writer.write_now(out)
            return
        log.info(
            "closing connection from %s:%d: api key %d version %d %s",
            *self.peer,
            header.request_api_key,
            header.request_api_version,
            reason,
        )
        self.close()

    # ----- control -----------------------------------------------------------------------------

    def _pause_reading(self) -> None:
        if not self.reading_paused and self.transport is not None:
            self.reading_paused = True
            self.transport.pause_reading()

    def _resume_reading(self) -> None:
        if self.reading_paused and self.transport is not None and not self.closed:
            self.reading_paused = False
            self.transport.resume_reading()

    def idle_for(self, now: float) -> float:
        return 0.0 if self.busy or self.frames else now - self.last_active

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.wakeup.set()
            if self.transport is not None:
                self.transport.close()

    async def drain(self) -> None:
        """Wait until the request being handled (if any) is answered; used at shutdown."""
        while self.busy and not self.closed:
            await asyncio.sleep(0.01)

    def describe(self) -> dict[str, Any]:
        return {"peer": f"{self.peer[0]}:{self.peer[1]}", "listener": self.listener}
