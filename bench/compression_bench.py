"""What a topic's compression.type costs the broker: produce throughput and broker CPU when batches keep
the producer's codec (``producer``, or a topic codec that matches: the no-copy path) and when the broker
rewrites them in another codec (decompress, read every record, compress, new CRC), against one local
odradek broker, in one run; then the same record work timed in this process, step by step.

    .venv/bin/python bench/compression_bench.py [--records N] [--value-bytes B] [--rounds R]

confluent-kafka (librdkafka) produces N compressible text records (log lines of about B bytes)
idempotently with acks=all, linger.ms=5, to a one-partition topic per mode; each mode runs R times,
interleaved with the others. The broker's CPU (user + system, every thread: the rewriting runs in its
record threads) is read from /proc before and after, in 10 ms ticks. Printed as Markdown: each mode's
median over the rounds, and the range (slowest to fastest round, least to most CPU), since the
machine's load moves single rounds by tens of percent; written (every round) to
docs/bench/compression.json. The in-process part times, per MiB of records, what a rewrite does with
one lz4 batch of 1 MiB of those records (decompress, walk the records, compress in zstd) and the walk
alone on records of 16 bytes, the median of R x 10 runs of each (CPU time of this process).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.replication_bench import cpu_seconds
from confluent_kafka import KafkaError, Message, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from odradek.protocol.records import (
    Compression,
    RecordBatchBuilder,
    RecordBatchHeader,
    compress,
    records_section,
    walk_records,
)
from odradek.storage.config import LogConfig
from odradek.storage.prepared_appends import prepare_append
from tests.support.broker_process import BrokerProcess

RESULTS = Path(__file__).resolve().parents[1] / "docs" / "bench" / "compression.json"


@dataclass(frozen=True)
class Mode:
    name: str
    producer_codec: str
    topic_codec: str


MODES = (
    Mode("producer (lz4 kept)", "lz4", "producer"),
    Mode("topic lz4, producer lz4 (matching)", "lz4", "lz4"),
    Mode("topic zstd, producer lz4", "lz4", "zstd"),
    Mode("topic gzip, producer lz4", "lz4", "gzip"),
    Mode("topic snappy, producer lz4", "lz4", "snappy"),
    Mode("topic uncompressed, producer lz4", "lz4", "uncompressed"),
    Mode("topic zstd, producer none", "none", "zstd"),
)


@dataclass
class Round:
    mode: str
    seconds: float
    broker_cpu_seconds: float
    stored_bytes: int

    def records_per_second(self, records: int) -> float:
        return records / self.seconds


def values(count: int, size: int, seed: int = 7) -> list[bytes]:
    """Log-like lines of about `size` bytes: repetitive structure, varying fields (compressible ~3-6x)."""
    rng = random.Random(seed)
    words = ["GET", "POST", "/api/v1/orders", "/api/v1/users", "200", "404", "503", "cache-hit", "cache-miss"]
    out = []
    for n in range(count):
        line = (
            f'{{"ts":"2026-01-{1 + n % 28:02d}T12:{n % 60:02d}:{rng.randrange(60):02d}Z",'
            f'"request_id":"{rng.getrandbits(64):016x}","host":"web-{rng.randrange(40):02d}",'
            f'"msg":"{" ".join(rng.choice(words) for _ in range(12))}","latency_ms":{rng.randrange(2000)}}}'
        )
        out.append((line * (size // len(line) + 1)).encode()[:size])
    return out


def produce(bootstrap: str, topic: str, codec: str, payloads: list[bytes], records: int) -> float:
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
            "compression.type": codec,
        }
    )
    failures: list[KafkaError] = []

    def delivered(error: KafkaError | None, _: Message) -> None:
        if error is not None:
            failures.append(error)

    started = time.perf_counter()
    for n in range(records):
        while True:
            try:
                producer.produce(topic, value=payloads[n % len(payloads)], partition=0, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.001)  # the local queue is full: let deliveries drain it
    if producer.flush(120) != 0:
        raise RuntimeError(f"{topic}: deliveries still pending after 120 s")
    if failures:
        raise RuntimeError(f"{topic}: {len(failures)} failed deliveries, first {failures[0]}")
    return time.perf_counter() - started


def stored_bytes(data: Path, topic: str) -> int:
    return sum(f.stat().st_size for f in data.glob(f"{topic}-*/*.log"))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--value-bytes", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    payloads = values(2000, args.value_bytes)
    rounds: list[Round] = []
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        broker = BrokerProcess(data).start()
        try:
            assert broker.process is not None
            pid = broker.process.pid
            admin = AdminClient({"bootstrap.servers": broker.bootstrap})
            topics = {"warm-up": "producer"} | {
                f"r{r}-m{m}": mode.topic_codec for r in range(args.rounds) for m, mode in enumerate(MODES)
            }
            created = admin.create_topics(
                [NewTopic(t, 1, 1, config={"compression.type": codec}) for t, codec in topics.items()]
            )
            for future in created.values():
                future.result(60)
            produce(
                broker.bootstrap, "warm-up", "lz4", payloads, 20_000
            )  # connections, metadata: not measured
            for r in range(args.rounds):
                for m, mode in enumerate(MODES):
                    topic = f"r{r}-m{m}"
                    before = cpu_seconds(pid)
                    seconds = produce(broker.bootstrap, topic, mode.producer_codec, payloads, args.records)
                    rounds.append(
                        Round(mode.name, seconds, cpu_seconds(pid) - before, stored_bytes(data, topic))
                    )
                    print(
                        f"  round {r + 1} {mode.name}: {args.records / seconds:,.0f} records/s",
                        file=sys.stderr,
                    )
        finally:
            broker.stop()
    report(rounds, args)
    return 0


def report(rounds: list[Round], args: argparse.Namespace) -> None:
    megabytes = args.records * args.value_bytes / 1e6
    print(
        f"\n{args.records:,} records of {args.value_bytes} B ({megabytes:.0f} MB of values) per mode, "
        f"{args.rounds} rounds: median (range); broker CPU in 10 ms ticks\n"
    )
    print("| mode | records/s | broker CPU ms per MB | stored MB |")
    print("| --- | ---: | ---: | ---: |")
    for mode in MODES:
        of_mode = [r for r in rounds if r.mode == mode.name]
        rates = [r.records_per_second(args.records) for r in of_mode]
        cpu = [r.broker_cpu_seconds * 1000 / megabytes for r in of_mode]
        stored = statistics.median(r.stored_bytes for r in of_mode) / 1e6
        print(
            f"| {mode.name} | {statistics.median(rates):,.0f} ({min(rates):,.0f}-{max(rates):,.0f}) "
            f"| {statistics.median(cpu):.1f} ({min(cpu):.1f}-{max(cpu):.1f}) | {stored:.1f} |"
        )
    steps = record_work(args)
    print(
        f"\nrecord work in this process, ms of CPU per MiB of records (median of {len(steps[0][1])} runs)\n"
    )
    print("| step | ms per MiB |")
    print("| --- | ---: |")
    for name, timings in steps:
        print(f"| {name} | {statistics.median(timings):.1f} |")
    document: dict[str, Any] = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "records": args.records,
        "value_bytes": args.value_bytes,
        "rounds": [asdict(r) for r in rounds],
        "modes": [asdict(m) for m in MODES],
        "record_work_ms_per_mib": {name: timings for name, timings in steps},
    }
    RESULTS.write_text(json.dumps(document, indent=1) + "\n")
    print(
        f"\nevery round: {RESULTS.relative_to(Path.cwd()) if RESULTS.is_relative_to(Path.cwd()) else RESULTS}"
    )


def record_work(args: argparse.Namespace) -> list[tuple[str, list[float]]]:
    """CPU ms per MiB of records of each step of a rewrite (lz4 to zstd), and of the walk alone."""
    payloads = values(2000, args.value_bytes)
    builder = RecordBatchBuilder(0, compression=Compression.LZ4)
    size = 0
    while size < 1 << 20:
        value = payloads[len(builder) % len(payloads)]
        builder.append(1_700_000_000_000, None, value)
        size += len(value) + 8
    sent = bytearray(builder.build())
    header = RecordBatchHeader.read(sent)
    section = records_section(sent, header)
    config = LogConfig(compression_type="zstd")
    now = 1_700_000_000_000  # the records' timestamps: within the bounds
    tiny = RecordBatchBuilder(0)
    while tiny.estimated_size < 1 << 20:
        tiny.append(1_700_000_000_000, b"k", b"0123456789")
    tiny_batch = tiny.build()
    tiny_header = RecordBatchHeader.read(tiny_batch)
    tiny_section = records_section(tiny_batch, tiny_header)
    mib = len(section) / (1 << 20)
    tiny_mib = len(tiny_section) / (1 << 20)
    steps: list[tuple[str, Callable[[], object], float]] = [
        ("decompress lz4", lambda: records_section(sent, header), mib),
        (
            f"walk the records ({args.value_bytes} B values)",
            lambda: walk_records(section, header.records_count, header.base_timestamp),
            mib,
        ),
        ("compress zstd (level 3)", lambda: compress(Compression.ZSTD, section), mib),
        ("the whole rewrite (prepare_append)", lambda: prepare_append(sent, [header], config, now), mib),
        (
            "walk the records (16 B records)",
            lambda: walk_records(tiny_section, tiny_header.records_count, tiny_header.base_timestamp),
            tiny_mib,
        ),
    ]
    results = []
    for name, step, megabytes in steps:
        timings = []
        for _ in range(args.rounds * 10):
            started = time.process_time()
            step()
            timings.append((time.process_time() - started) * 1000 / megabytes)
        results.append((name, timings))
    return results


if __name__ == "__main__":
    raise SystemExit(main())
