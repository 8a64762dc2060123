"""Drive hostile frames into a broker on many connections while a well-behaved client works.

Shared by `bench/bad_input.py` (100k+ frames, figures) and `tests/integration/test_bad_input.py`
(a few thousand, pass/fail). The well-behaved client is confluent-kafka: an acks=all producer and an
assigned consumer in a thread, which must see no error and read back exactly what was acknowledged.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaError, Message, Producer

from tests.support.hostile_frames import HostileFrames

#: How long a connection may stay quiet before the load closes it (the broker keeps a connection
#: open when every frame was valid, or when a frame's size prefix promised bytes that never came).
QUIET_SECONDS = 0.05


@dataclass
class LoadStats:
    frames: int = 0
    #: Frames the broker certainly decoded: on each connection, those up to the first hostile one
    #: (a lower bound: many mutated frames still decode and the connection goes on).
    frames_surely_decoded: int = 0
    bytes: int = 0
    connections: int = 0
    closed_by_broker: int = 0
    closed_by_us: int = 0
    response_bytes: int = 0
    kinds: Counter[str] = field(default_factory=Counter)
    connect_errors: int = 0


async def hostile_load(
    port: int, frames: int, concurrency: int, seed: int, max_frames_per_connection: int = 8
) -> LoadStats:
    """Send `frames` hostile frames over `concurrency` parallel connection loops; returns what happened."""
    stats = LoadStats()
    generator = HostileFrames(random.Random(seed))
    sizes = random.Random(seed + 1)

    async def worker() -> None:
        while stats.frames < frames:
            batch = [generator.next() for _ in range(sizes.randint(1, max_frames_per_connection))]
            stats.frames += len(batch)
            stats.kinds.update(kind for kind, _ in batch)
            kinds = [kind for kind, _ in batch]
            stats.frames_surely_decoded += (
                kinds.index(next((k for k in kinds if k != "valid"), kinds[-1])) + 1
            )
            payload = b"".join(frame for _, frame in batch)
            stats.bytes += len(payload)
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                stats.connect_errors += 1
                continue
            stats.connections += 1
            try:
                writer.write(payload)
                await writer.drain()
                while True:
                    data = await asyncio.wait_for(reader.read(1 << 16), QUIET_SECONDS)
                    if not data:
                        stats.closed_by_broker += 1
                        break
                    stats.response_bytes += len(data)
            except TimeoutError:
                stats.closed_by_us += 1
            except OSError:  # reset by the broker while we were still writing
                stats.closed_by_broker += 1
            finally:
                writer.close()
                with contextlib.suppress(OSError):
                    await writer.wait_closed()

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return stats


def rss_kib(pid: int) -> int:
    """Resident set size of a process, from /proc/<pid>/status (VmRSS, in KiB)."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")


class RssSampler:
    """Samples a process's RSS every `interval` seconds in a thread."""

    def __init__(self, pid: int, interval: float = 0.25) -> None:
        self.pid = pid
        self.interval = interval
        self.samples: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> RssSampler:
        self.samples.append((time.monotonic(), rss_kib(self.pid)))
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self.samples.append((time.monotonic(), rss_kib(self.pid)))

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.samples.append((time.monotonic(), rss_kib(self.pid)))

    @property
    def peak_kib(self) -> int:
        return max(rss for _, rss in self.samples)


class WellBehavedClient:
    """Produces (acks=all) and consumes one partition in a thread; records anything that goes wrong."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.topic = topic
        self.errors: list[str] = []
        common: dict[str, Any] = {"bootstrap.servers": bootstrap, "error_cb": self._error}
        self.producer = Producer({**common, "acks": "all", "linger.ms": 2})
        self.consumer = Consumer(
            {**common, "group.id": "well-behaved", "enable.auto.commit": False, "fetch.wait.max.ms": 50}
        )
        from confluent_kafka import TopicPartition

        self.consumer.assign([TopicPartition(topic, 0, 0)])
        self.produced = 0
        self.acknowledged: list[int] = []
        self.consumed: list[bytes] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> WellBehavedClient:
        self._thread.start()
        return self

    def stop(self, timeout: float = 30) -> None:
        """Stop producing, then read until everything acknowledged has been consumed (or `timeout`)."""
        self._stop.set()
        self._thread.join(timeout)
        if self.producer.flush(timeout) != 0:
            self.errors.append("producer: messages still queued after flush")
        deadline = time.monotonic() + timeout
        while len(self.consumed) < len(self.acknowledged) and time.monotonic() < deadline:
            self._consume(0.1)
        self.consumer.close()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.producer.produce(
                    self.topic, value=b"%09d" % self.produced, partition=0, on_delivery=self._delivered
                )
                self.produced += 1
            except BufferError:
                self.errors.append("producer: local queue full")
            self.producer.poll(0)
            self._consume(0.002)

    def _consume(self, timeout: float) -> None:
        for message in self.consumer.consume(500, timeout):
            error = message.error()
            if error is not None:
                if error.code() != KafkaError._PARTITION_EOF:
                    self.errors.append(f"consumer: {error}")
                continue
            value = message.value()
            assert value is not None
            self.consumed.append(value)

    def _delivered(self, error: KafkaError | None, message: Message) -> None:
        if error is not None:
            self.errors.append(f"delivery: {error}")
        else:
            self.acknowledged.append(int(message.value() or b"-1"))

    def _error(self, error: KafkaError) -> None:
        self.errors.append(f"client: {error}")

    def check(self) -> list[str]:
        """Everything that went wrong: errors, and any difference between acknowledged and consumed."""
        problems = list(self.errors)
        if sorted(self.acknowledged) != list(range(len(self.acknowledged))):
            problems.append("acknowledged values are not 0..n-1")
        if self.consumed != [b"%09d" % i for i in range(len(self.consumed))]:
            problems.append("consumed values are out of order or duplicated")
        if len(self.consumed) != len(self.acknowledged):
            problems.append(f"consumed {len(self.consumed)} of {len(self.acknowledged)} acknowledged")
        return problems


@dataclass
class HeldFrames:
    """Connections that each declared a large frame, sent part of it and then went quiet."""

    writers: list[asyncio.StreamWriter] = field(default_factory=list)
    bytes_sent: int = 0
    #: Connections whose sending stalled (the broker stopped reading them: its memory pool was full).
    stalled: int = 0

    async def close(self) -> None:
        for writer in self.writers:
            writer.close()
        for writer in self.writers:
            with contextlib.suppress(OSError):
                await writer.wait_closed()


async def hold_half_sent_frames(
    port: int, count: int, declared_bytes: int, sent_bytes: int, stall_seconds: float = 5.0
) -> HeldFrames:
    """Open `count` connections, each declaring a `declared_bytes` frame and sending `sent_bytes` of
    it (in 64 KiB writes, so this process holds little); returns once all have sent or stalled."""
    held = HeldFrames()
    chunk = bytes(64 * 1024)

    async def hold() -> None:
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        held.writers.append(writer)
        writer.write(declared_bytes.to_bytes(4, "big"))
        remaining = sent_bytes
        try:
            while remaining > 0:
                piece = chunk[: min(len(chunk), remaining)]
                writer.write(piece)
                await asyncio.wait_for(writer.drain(), stall_seconds)
                remaining -= len(piece)
                held.bytes_sent += len(piece)
        except TimeoutError:
            held.stalled += 1

    await asyncio.gather(*(hold() for _ in range(count)))
    return held
