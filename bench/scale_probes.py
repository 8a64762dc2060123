"""What bench/kafka_scale_bench.py measures with, besides the clusters: a producer that writes one
record to every partition in a loop and tells, per partition, when the first record sent after a moment
was acknowledged; and py-spy recordings of odradek brokers while a phase runs."""

from __future__ import annotations

import contextlib
import functools
import signal
import statistics
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench.failover_bench import PRODUCER
from confluent_kafka import KafkaError, Message, Producer

from broker_bench import flamegraph
from broker_bench.profiling import py_spy_binary

#: Records a second the loop aims at whatever the partition count: each partition gets one every
#: partitions / RATE seconds (5 s at 10,000 partitions), and at most one every MIN_INTERVAL_S.
RATE = 2000
MIN_INTERVAL_S = 0.2
#: Partitions per producer (ProducerLoop's docstring says why), and at most this many producers: each
#: has a thread and a connection per broker (10,000 partitions: 500 each).
PARTITIONS_PER_PRODUCER = 50
MAX_PRODUCERS = 20
#: The delivery reports are served at least this often (the acknowledgements' resolution).
POLL_EVERY_S = 0.005
#: A failover may take minutes at 10,000 partitions: records are retried all along rather than failed.
MESSAGE_TIMEOUT_MS = 600_000
PY_SPY_RATE_HZ = 50
#: Leaves py-spy counts as active though the thread waits (a selector's epoll, a condition variable).
WAITING_LEAVES = ("EpollSelector.select (stdlib/selectors.py)", "Condition.wait (stdlib/threading.py)")


class FirstAcks:
    """Per partition: whether any record was acknowledged yet, and the first acknowledgement of a record
    sent at or after `mark` (monotonic seconds)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.ever: set[int] = set()
        self.mark: float | None = None
        self.first: dict[int, float] = {}
        self.errors: Counter[str] = Counter()

    def delivered(self, sent: float, error: KafkaError | None, message: Message) -> None:
        now = time.monotonic()
        partition = message.partition()
        with self.lock:
            if error is not None:
                self.errors[error.name()] += 1
                return
            assert partition is not None
            self.ever.add(partition)
            if self.mark is not None and sent >= self.mark:
                self.first.setdefault(partition, now - self.mark)

    def start_from(self, mark: float) -> None:
        with self.lock:
            self.mark, self.first = mark, {}

    def after_mark(self) -> dict[int, float]:
        with self.lock:
            return dict(self.first)


class ProducerLoop(threading.Thread):
    """confluent-kafka producers (acks=all, idempotent, bench/failover_bench.py's fast-failover settings)
    sending one 100-byte record to each partition of `topic` in turn, at most `RATE` records a second,
    and never a partition's next record while its last one is unacknowledged.

    Both limits keep librdkafka's queues out of the figures. librdkafka sends each partition's records
    in a ProduceRequest of their own, at most 5 in flight per broker connection when idempotent, and a
    broker (Kafka's as odradek's) answers one request of a connection at a time: a connection carries
    about one partition per acks=all round trip. One producer writing 1,000 partitions every 0.5 s
    queued records faster than its three connections carried them; librdkafka's queues grew without
    bound and some partitions' first record waited behind them for minutes, never sent (the "13 of
    1,000 partitions never acknowledged"). Hence one record in flight per partition, and a producer (its
    own connections) per PARTITIONS_PER_PRODUCER partitions, at most MAX_PRODUCERS."""

    def __init__(self, bootstrap: str, topic: str, partitions: int) -> None:
        super().__init__(daemon=True, name="producer-loop")
        config = {
            "bootstrap.servers": bootstrap,
            **PRODUCER,
            "message.timeout.ms": MESSAGE_TIMEOUT_MS,
            "queue.buffering.max.messages": 2_000_000,
            "log_level": 2,  # the kills' connection errors are expected
        }
        count = min(MAX_PRODUCERS, max(1, -(-partitions // PARTITIONS_PER_PRODUCER)))
        self.producers = [Producer(config) for _ in range(count)]
        self.topic = topic
        self.partitions = partitions
        self.interval_s = max(MIN_INTERVAL_S, partitions / RATE)
        self.acks = FirstAcks()
        self.skipped = 0
        #: Sends passed over because the partition's last record was still unacknowledged.
        self.held_back = 0
        #: Completed passes over every partition.
        self.rounds = 0
        #: Partitions with a record sent and not yet acknowledged (or failed); the loop's thread only.
        self.unacknowledged: set[int] = set()
        self.stopping = threading.Event()

    def producer_of(self, partition: int) -> Producer:
        return self.producers[partition % len(self.producers)]

    def run(self) -> None:
        value = b"x" * 100
        pause = self.interval_s / self.partitions
        next_send = last_poll = time.monotonic()
        while not self.stopping.is_set():
            for partition in range(self.partitions):
                if self.stopping.is_set():
                    break
                if partition in self.unacknowledged:
                    self.held_back += 1
                else:
                    self._send(partition, value)
                next_send += pause
                now = time.monotonic()
                if (left := next_send - now) > 0.002 or now - last_poll > POLL_EVERY_S:
                    self._poll(left)
                    last_poll = time.monotonic()
                next_send = max(next_send, time.monotonic() - 1)  # no burst after a stall
            self._poll(0)
            self.rounds += 1

    def _send(self, partition: int, value: bytes) -> None:
        sent = time.monotonic()
        try:
            self.producer_of(partition).produce(
                self.topic,
                value,
                partition=partition,
                on_delivery=functools.partial(self._delivered, partition, sent),
            )
        except BufferError:
            self.skipped += 1
            return
        self.unacknowledged.add(partition)

    def _delivered(self, partition: int, sent: float, error: KafkaError | None, message: Message) -> None:
        # called by poll(), in the loop's thread
        self.unacknowledged.discard(partition)
        self.acks.delivered(sent, error, message)

    def _poll(self, timeout: float) -> None:
        """Serve every producer's delivery reports, then wait out what is left of `timeout`."""
        deadline = time.monotonic() + max(timeout, 0)
        for producer in self.producers:
            producer.poll(0)
        if (left := deadline - time.monotonic()) > 0:
            self.producers[0].poll(left)

    def stop(self) -> None:
        self.stopping.set()
        self.join(30)
        for producer in self.producers:
            producer.purge()  # what is left unacknowledged says nothing more
            producer.flush(10)

    def close(self) -> None:
        """Producers of a loop never started."""
        for producer in self.producers:
            producer.purge()
            producer.flush(0)


def spread(seconds: list[float]) -> dict[str, float]:
    """p50, p99 and max of per-partition seconds."""
    ordered = sorted(seconds)
    if len(ordered) == 1:
        return {"p50_s": round(ordered[0], 3), "p99_s": round(ordered[0], 3), "max_s": round(ordered[0], 3)}
    cuts = statistics.quantiles(ordered, n=100, method="inclusive")
    return {"p50_s": round(cuts[49], 3), "p99_s": round(cuts[98], 3), "max_s": round(ordered[-1], 3)}


@contextmanager
def profiled(pids: dict[int, int], out_dir: Path, label: str, into: dict[str, Any]) -> Iterator[None]:
    """py-spy records each of `pids` (broker id -> pid) while the block runs; `into[broker]` gets its
    non-idle samples and hot spots, and the busiest broker's flame graph goes to `out_dir`."""
    spy = py_spy_binary()
    if spy is None:
        into["error"] = "py-spy is not installed (pip install -e '.[bench]')"
        yield
        return
    out_dir.mkdir(parents=True, exist_ok=True)
    raws = {broker: out_dir / f"{label}-broker{broker}.txt" for broker in pids}
    recorders = {
        broker: subprocess.Popen(
            [
                *(spy, "record", "--pid", str(pid), "--rate", str(PY_SPY_RATE_HZ), "--threads"),
                *("--format", "raw", "--full-filenames", "--output", str(raws[broker])),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for broker, pid in pids.items()
    }
    try:
        yield
    finally:
        for recorder in recorders.values():
            recorder.send_signal(signal.SIGINT)
        for recorder in recorders.values():
            try:
                recorder.wait(60)
            except subprocess.TimeoutExpired:
                recorder.kill()
                recorder.wait()
        into |= _summarise(raws, out_dir, label)


def _summarise(raws: dict[int, Path], out_dir: Path, label: str) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    busiest: tuple[int, Counter[tuple[str, ...]]] | None = None
    for broker, raw in raws.items():
        if not raw.exists():
            summary[f"broker{broker}"] = {"error": "py-spy wrote nothing (the broker died or ptrace refused)"}
            continue
        stacks, idle = flamegraph.read_collapsed(raw)
        raw.unlink()
        waiting = [stack for stack in stacks if flamegraph.function_of(stack[-1]) in WAITING_LEAVES]
        idle += sum(stacks.pop(stack) for stack in waiting)
        spots = flamegraph.hot_spots(stacks, top=12)
        summary[f"broker{broker}"] = {
            "samples": sum(stacks.values()),
            "idle_samples_dropped": idle,
            **{kind: [asdict(s) for s in spots[kind]] for kind in ("self", "total", "threads")},
        }
        if busiest is None or sum(stacks.values()) > sum(busiest[1].values()):
            busiest = (broker, stacks)
    if busiest is not None:
        broker, stacks = busiest
        svg = out_dir / f"{label}.svg"
        title = f"odradek broker {broker}, {label}: {sum(stacks.values())} samples at {PY_SPY_RATE_HZ} Hz"
        with contextlib.suppress(OSError):
            flamegraph.write_svg(stacks, svg, title)
            summary["flame_graph"] = svg.name
    return summary
