"""Framing: frames of any size, arriving in pieces of any size and interleaved between connections that
share one scratch buffer, come out whole and in order; large ones are received into a buffer of their
own; a bad declared size is refused before its body arrives."""

from __future__ import annotations

import asyncio
import itertools
import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from odradek.server import connection as connection_module
from odradek.server import framing
from odradek.server.connection import Connection
from odradek.server.framing import FrameReader, FrameSizeError, ReadScratch
from odradek.server.memory_pool import MemoryPool

LIMIT = 100 * 1024 * 1024


def framed(*bodies: bytes) -> bytes:
    return b"".join(struct.pack(">i", len(body)) + body for body in bodies)


def body_of(size: int, seed: int) -> bytes:
    return bytes((seed + i * 7) % 251 for i in range(size))


def read_once(reader: FrameReader, data: bytes, pos: int, chunk: int) -> tuple[int, list[bytearray]]:
    """What the event loop does for one readable event: get a buffer, read into it, report the count."""
    buffer = reader.get_buffer()
    n = min(chunk, len(buffer), len(data) - pos)
    assert n > 0
    buffer[:n] = data[pos : pos + n]
    del buffer
    return pos + n, reader.buffer_updated(n)


def feed(reader: FrameReader, data: bytes, chunk: int) -> list[bytes]:
    """As a connection does: after each read, the frames it completed, then those it left unsplit."""
    frames: list[bytes] = []
    pos = 0
    while pos < len(data):
        pos, got = read_once(reader, data, pos, chunk)
        while got:
            frames += [bytes(frame) for frame in got]
            got = reader.more_frames()
    return frames


sizes = st.one_of(
    st.integers(0, 64),
    st.integers(framing.DIRECT_FRAME_BYTES - 8, framing.DIRECT_FRAME_BYTES + 8),
    st.integers(0, 300_000),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(sizes, min_size=1, max_size=6), st.integers(1, 300_000))
def test_frames_come_out_whole_and_in_order(frame_sizes: list[int], chunk: int) -> None:
    bodies = [body_of(size, seed) for seed, size in enumerate(frame_sizes)]
    reader = FrameReader(ReadScratch(), LIMIT)
    assert feed(reader, framed(*bodies), chunk) == bodies
    assert reader.large_frame is None and not reader.pending


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(sizes, min_size=1, max_size=4), min_size=2, max_size=3),
    st.lists(st.integers(1, 100_000), min_size=1, max_size=8),
    st.randoms(use_true_random=False),
)
def test_connections_sharing_the_scratch_do_not_mix(
    streams: list[list[int]], chunks: list[int], rng: Any
) -> None:
    scratch = ReadScratch()
    readers = [FrameReader(scratch, LIMIT) for _ in streams]
    datas = [framed(*[body_of(size, i * 10 + j) for j, size in enumerate(s)]) for i, s in enumerate(streams)]
    positions = [0] * len(streams)
    received: list[list[bytes]] = [[] for _ in streams]
    step = 0
    while any(pos < len(data) for pos, data in zip(positions, datas, strict=True)):
        i = rng.choice([k for k, data in enumerate(datas) if positions[k] < len(data)])
        positions[i], got = read_once(readers[i], datas[i], positions[i], chunks[step % len(chunks)])
        received[i] += [bytes(frame) for frame in got]
        step += 1
    for i, sizes_ in enumerate(streams):
        assert received[i] == [body_of(size, i * 10 + j) for j, size in enumerate(sizes_)]


def test_a_large_frame_is_received_into_its_own_buffer() -> None:
    body = body_of(200_000, 1)
    reader = FrameReader(ReadScratch(), LIMIT)
    data = framed(body)
    pos, got = read_once(reader, data, 0, 1000)
    assert not got and reader.large_frame is not None
    own = reader.large_frame
    pos, got = read_once(reader, data, pos, len(data))
    while not got:
        pos, got = read_once(reader, data, pos, len(data))
    assert got == [own] and got[0] is own and bytes(own) == body


def test_a_large_frame_buffer_grows_only_as_its_bytes_arrive() -> None:
    """A peer that declares 50 MB and sends 150 kB makes the broker hold about 150 kB, not 50 MB."""
    declared = 50_000_000
    reader = FrameReader(ReadScratch(), LIMIT)
    data = struct.pack(">i", declared) + body_of(150_000, 3)
    assert feed(reader, data, 65_536) == []
    assert reader.large_frame is not None and len(reader.large_frame) <= 2 * 150_000


def test_a_frame_larger_than_the_initial_allocation_grows_as_it_arrives(monkeypatch: Any) -> None:
    monkeypatch.setattr(framing, "INITIAL_FRAME_BYTES", 100_000)
    body = body_of(1_000_000, 3)
    reader = FrameReader(ReadScratch(), LIMIT)
    assert feed(reader, framed(body)[:150_000], 65_536) == []
    assert reader.large_frame is not None and len(reader.large_frame) < len(body)  # not reserved whole
    assert feed(reader, framed(body)[150_000:] + framed(b"next"), 65_536) == [body, b"next"]


@pytest.mark.parametrize("size", [-1, -(2**31), 1001])
def test_a_bad_declared_size_is_refused_before_the_body(size: int) -> None:
    reader = FrameReader(ReadScratch(), 1000)
    with pytest.raises(FrameSizeError):
        feed(reader, struct.pack(">i", size), 4)


# ----- the connection around it ---------------------------------------------------------------------


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


def make_connection(
    max_request_bytes: int = LIMIT, pool: MemoryPool | None = None
) -> tuple[Connection, FakeTransport]:
    conn = Connection(
        services=None,  # type: ignore[arg-type]
        listener="PLAINTEXT",
        max_request_bytes=max_request_bytes,
        on_close=lambda c: None,
        scratch=ReadScratch(),
        pool=pool,
    )
    transport = FakeTransport()
    conn.transport = transport  # type: ignore[assignment]
    return conn, transport


def feed_connection(conn: Connection, data: bytes) -> None:
    buffer = conn.get_buffer(-1)
    buffer[: len(data)] = data
    del buffer
    conn.buffer_updated(len(data))


def test_the_connection_queues_frames_and_closes_on_an_oversized_one() -> None:
    conn, transport = make_connection(max_request_bytes=1000)
    feed_connection(conn, framed(b"ok", b"fine"))
    assert [bytes(f) for f in conn.frames] == [b"ok", b"fine"] and conn.queued_bytes == 6
    feed_connection(conn, struct.pack(">i", 1001))
    assert transport.closed


def test_a_connection_reads_nothing_more_until_the_requests_of_a_read_are_answered() -> None:
    """As Kafka mutes a channel from a request's arrival until its answer is sent: what the client
    sends meanwhile waits in the kernel, not in the broker (it queued up to 64 MiB before). The
    transport is paused at the first read that comes while requests are unanswered."""

    async def scenario() -> None:
        conn, transport = make_connection()
        handled: list[bytes] = []
        answered = asyncio.Event()

        async def handle(frame: bytearray) -> None:
            handled.append(bytes(frame))
            await answered.wait()

        conn._handle = handle  # type: ignore[method-assign]
        task = asyncio.get_running_loop().create_task(conn._serve())
        feed_connection(conn, framed(b"one", b"two"))
        await settle()
        assert handled == [b"one"] and not transport.paused  # a client waiting for answers sends nothing
        feed_connection(conn, framed(b"three"))  # but this one pipelines
        assert transport.paused
        await settle()
        assert handled == [b"one"] and transport.paused
        answered.set()
        await settle()
        assert handled == [b"one", b"two", b"three"] and not transport.paused
        answered.clear()
        feed_connection(conn, framed(b"four"))  # the next read
        await settle()
        assert handled[-1] == b"four" and not transport.paused
        feed_connection(conn, framed(b"five"))
        assert transport.paused
        answered.set()
        await settle()
        assert handled[-1] == b"five" and not transport.paused
        conn.close()
        await task

    asyncio.run(scenario())


def test_a_read_of_thousands_of_tiny_requests_is_split_a_few_at_a_time() -> None:
    """256 KiB of 14-byte frames are 18,000 Python objects, six times their bytes: the rest of the read
    waits unsplit (and still counted in the pool) until the first ones are handled."""
    pool = MemoryPool(10_000_000)
    conn, _ = make_connection(pool=pool)
    feed_connection(conn, framed(*[b"r" * 10] * 18_000))
    assert len(conn.frames) == framing.MAX_FRAMES_AT_ONCE
    assert len(conn.reader.pending) == (18_000 - framing.MAX_FRAMES_AT_ONCE) * 14
    assert pool.available == 10_000_000 - 18_000 * 10
    assert [bytes(f) for f in conn.reader.more_frames()] == [b"r" * 10] * framing.MAX_FRAMES_AT_ONCE
    assert pool.available == 10_000_000 - 18_000 * 10  # taken once, when read
    conn._queue(conn.reader.more_frames())
    conn.connection_lost(None)  # what it holds comes back, queued or unsplit (not the batch taken out)
    assert pool.available == 10_000_000 - framing.MAX_FRAMES_AT_ONCE * 10


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


# ----- queued.max.request.bytes ---------------------------------------------------------------------


def test_a_large_frame_reserves_its_declared_size_in_the_pool() -> None:
    pool = MemoryPool(1_000_000)
    reader = FrameReader(ReadScratch(), LIMIT, pool)
    assert feed(reader, struct.pack(">i", 300_000) + b"x" * 10, 4096) == []
    assert pool.available == 700_000 and reader.reserved_in_progress == 300_000


def test_with_the_pool_exhausted_a_large_frame_waits_unreserved_in_pending() -> None:
    pool = MemoryPool(100_000)
    pool.try_reserve(100_000)
    reader = FrameReader(ReadScratch(), LIMIT, pool)
    assert len(reader.get_buffer()) == 4  # reads no more than a size prefix
    assert feed(reader, struct.pack(">i", 50_000), 4) == []
    assert reader.large_frame is None and bytes(reader.pending) == struct.pack(">i", 50_000)
    pool.release(100_000)
    assert feed(reader, body_of(50_000, 5), 65_536) == [body_of(50_000, 5)]
    assert pool.available == 50_000


def test_one_frame_may_take_the_pool_below_zero_when_anything_is_free() -> None:
    pool = MemoryPool(100_000)
    reader = FrameReader(ReadScratch(), LIMIT, pool)
    feed(reader, struct.pack(">i", 300_000), 4)
    assert reader.large_frame is not None and pool.available == -200_000 and pool.exhausted


def test_the_connection_stops_reading_while_the_pool_is_exhausted_and_resumes_when_memory_is_released() -> (
    None
):
    pool = MemoryPool(100_000)
    holder, _ = make_connection(pool=pool)
    feed_connection(holder, framed(b"a" * 100_000))  # a whole frame, queued and not yet handled
    assert pool.exhausted
    conn, transport = make_connection(pool=pool)
    feed_connection(conn, struct.pack(">i", 20_000))
    assert transport.paused and conn.paused_for_memory
    holder.connection_lost(None)  # its queued frame will never be handled: its memory comes back
    assert pool.available == 100_000 and not transport.paused
    feed_connection(conn, b"b" * 1000)
    assert conn.reader.large_frame is not None and pool.available == 80_000


def test_a_closed_connection_gives_back_its_queued_frames_and_its_partial_frame() -> None:
    pool = MemoryPool(1_000_000)
    conn, _ = make_connection(pool=pool)
    feed_connection(conn, framed(b"q" * 100) + struct.pack(">i", 200_000) + b"p" * 10)
    assert pool.available == 1_000_000 - 100 - 200_000
    conn.connection_lost(None)
    assert pool.available == 1_000_000


def test_a_connection_handling_requests_back_to_back_lets_other_connections_in(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Handlers that never wait (ApiVersions, Metadata, DescribeConfigs: up to milliseconds each) ran
    back to back for every request a read brought, holding every other connection up meanwhile. The
    connection now steps aside once it has run for a few milliseconds without waiting."""
    clock = [1000.0]
    monkeypatch.setattr(connection_module.time, "perf_counter", lambda: clock[0])

    async def scenario() -> list[int]:
        conn, _ = make_connection()
        handled: list[bytes] = []

        async def handle(frame: bytearray) -> None:  # 2 ms of work, no await
            handled.append(bytes(frame))
            clock[0] += 0.002

        conn._handle = handle  # type: ignore[method-assign]
        others_saw: list[int] = []

        async def other_connection() -> None:
            for _ in range(4):
                others_saw.append(len(handled))
                await asyncio.sleep(0)

        feed_connection(conn, framed(*[b"r"] * 30))
        task = asyncio.get_running_loop().create_task(conn._serve())
        other = asyncio.get_running_loop().create_task(other_connection())
        await settle()
        await other
        conn.close()
        await task
        return others_saw

    seen = asyncio.run(scenario())  # requests handled each time the other connection got its turn
    assert seen[0] <= 4 and all(later - earlier <= 4 for earlier, later in itertools.pairwise(seen)), seen


class _CountingSize(struct.Struct):
    """The framing's size-prefix reader, counting the prefixes it reads."""

    reads = 0

    def unpack_from(self, buffer: Any, offset: int = 0) -> tuple[Any, ...]:
        _CountingSize.reads += 1
        return super().unpack_from(buffer, offset)


def test_the_pool_bookkeeping_of_frames_left_unsplit_reads_each_size_prefix_a_bounded_number_of_times(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With queued.max.request.bytes, every split of MAX_FRAMES_AT_ONCE frames walked all the complete
    frames still pending to reserve them: two reads of 17,476 tiny ApiVersions frames cost 19 million
    size reads (3.2 s on the event loop, which an unauthenticated client could make it do over and over)
    where splitting them needs one per frame. Kafka reserves each receive once."""
    monkeypatch.setattr(framing, "_SIZE", _CountingSize(">i"))
    _CountingSize.reads = 0
    pool = MemoryPool(100 * 1024 * 1024)
    reader = FrameReader(ReadScratch(), LIMIT, pool)
    tiny = framed(b"\x00\x12\x00\x00\x00\x00\x00\x01\x00\x01x")  # an ApiVersions v0 request, 15 bytes
    read = tiny * (framing.SCRATCH_BYTES // len(tiny))
    frames = 0
    for _ in range(2):  # a muted connection holds two reads
        _, got = read_once(reader, read, 0, len(read))
        frames += len(got)
    while got := reader.more_frames():
        frames += len(got)
    assert frames == 2 * (framing.SCRATCH_BYTES // len(tiny))
    assert pool.available == pool.capacity - frames * (len(tiny) - 4)
    assert _CountingSize.reads <= 3 * frames, (
        f"{_CountingSize.reads:,} size prefixes read for {frames:,} frames"
    )


@settings(max_examples=120, deadline=None)
@given(
    st.lists(st.one_of(st.integers(0, 40), st.integers(0, 40_000)), min_size=1, max_size=120),
    st.lists(st.integers(1, 70_000), min_size=1, max_size=6),
    st.lists(st.integers(0, 3), min_size=1, max_size=6),
)
def test_with_a_pool_every_frame_is_taken_once_whatever_the_reads_and_splits(
    frame_sizes: list[int], chunks: list[int], splits_between_reads: list[int]
) -> None:
    """What the pool holds is always the frames handed out plus what the reader still keeps (frames
    unsplit in `pending`, a large frame arriving), however reads and splits interleave."""
    pool = MemoryPool(10**9)
    reader = FrameReader(ReadScratch(), LIMIT, pool)
    bodies = [body_of(size, seed) for seed, size in enumerate(frame_sizes)]
    data = framed(*bodies)
    received: list[bytes] = []

    def holds_what_it_should() -> bool:
        handed_out = sum(len(body) for body in received)
        return pool.capacity - pool.available == handed_out + reader.reserved_in_progress

    pos, step = 0, 0
    while pos < len(data):
        pos, got = read_once(reader, data, pos, chunks[step % len(chunks)])
        received += [bytes(frame) for frame in got]
        assert holds_what_it_should()
        for _ in range(splits_between_reads[step % len(splits_between_reads)]):
            received += [bytes(frame) for frame in reader.more_frames()]
            assert holds_what_it_should()
        step += 1
    while got := reader.more_frames():
        received += [bytes(frame) for frame in got]
    assert received == bodies
    assert reader.reserved_in_progress == 0 and pool.available == pool.capacity - sum(frame_sizes)
