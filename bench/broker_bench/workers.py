"""Client processes (librdkafka through confluent-kafka), one per producer or consumer.

Run as `python -m broker_bench.workers ROLE CONFIG_JSON`. A worker connects and fetches metadata,
prints `READY`, waits for a line on stdin (so that several start together), does its work within its
time bounds, and prints `RESULT <json>`. Times are CLOCK_MONOTONIC (`time.monotonic`), which every
process on the machine shares, so the runner can combine workers' start and end times.
"""

from __future__ import annotations

import json
import random
import sys
import time
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition

#: At most this many latency samples per worker are sent back (evenly strided over the run).
MAX_LATENCY_SAMPLES = 20_000
_WORDS = [
    f"{word}{index}"
    for index, word in enumerate(
        ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"] * 8
    )
]


def payloads(size: int, count: int = 64, seed: int = 7) -> list[bytes]:
    """Values of `size` bytes built from a small vocabulary: text that lz4 can compress (about 2-3x),
    as real event payloads can, rather than random bytes (incompressible) or zeros (absurdly so)."""
    rng = random.Random(seed)
    values = []
    for index in range(count):
        text = f"{index:08d} " + " ".join(rng.choice(_WORDS) for _ in range(size // 4 + 2))
        values.append(text.encode()[:size])
    return values


def produce(config: dict[str, Any]) -> dict[str, Any]:
    producer = Producer(
        {
            "bootstrap.servers": config["bootstrap"],
            "acks": config["acks"],
            "compression.type": config["compression"],
            "linger.ms": config.get("linger_ms", 5),
            "client.id": f"bench-producer-{config.get('index', 0)}",
            "message.timeout.ms": int(config["drain_timeout"] * 1000),
        }
    )
    topic, partitions, duration = config["topic"], config["partitions"], config["duration"]
    values = payloads(config["value_size"])
    producer.list_topics(topic, timeout=20)
    latencies: list[float] = []
    failures: list[str] = []
    last_delivery = [0.0]

    def delivered(error: Any, message: Any) -> None:
        if error is None:
            latencies.append(message.latency())
            last_delivery[0] = time.monotonic()
        elif len(failures) < 20:
            failures.append(str(error))
        else:
            failures.append("")

    _ready()
    cpu_started = time.process_time()
    started = time.monotonic()
    deadline = started + duration
    sent = 0
    offset = config.get("index", 0)  # producers start on different partitions
    produce_one = producer.produce
    while True:
        if not sent & 1023 and time.monotonic() >= deadline:
            break
        try:
            produce_one(
                topic, values[sent & 63], partition=(sent + offset) % partitions, on_delivery=delivered
            )
        except BufferError:
            producer.poll(0.005)
            continue
        sent += 1
        if not sent & 255:
            producer.poll(0)
    produced_until = time.monotonic()
    undelivered = producer.flush(config["drain_timeout"])
    ended = last_delivery[0] or time.monotonic()
    client_cpu = time.process_time() - cpu_started
    stride = max(1, len(latencies) // MAX_LATENCY_SAMPLES)
    return {
        "sent": sent,
        "delivered": len(latencies),
        "failed": len(failures),
        "failure_examples": sorted({f for f in failures if f})[:5],
        "undelivered": undelivered,
        "value_bytes": len(latencies) * config["value_size"],
        "started": started,
        "produced_until": produced_until,
        "ended": ended,
        "client_cpu_s": client_cpu,
        "latency_samples": latencies[::stride],
    }


def consume(config: dict[str, Any]) -> dict[str, Any]:
    """Read every partition from the beginning until `expected` records arrived (or the time is up)."""
    consumer = Consumer(
        {
            "bootstrap.servers": config["bootstrap"],
            "group.id": f"bench-reader-{config['topic']}",
            "enable.auto.commit": False,
            "client.id": "bench-consumer",
            # librdkafka stops fetching for fetch.queue.backoff.ms (default 1000) whenever its queue
            # holds more than queued.min.messages (100,000): with 100-byte records two 1 MiB fetches
            # exceed that, and the run then measures that pause, not the broker. A broker that ignores
            # max.partition.fetch.bytes pauses less often (Tansu returned ~5 MB per fetch against the
            # 1 MiB limit, with 100-byte lz4 records), so the default favoured it for a reason that has
            # nothing to do with speed. Both brokers get the same setting.
            "fetch.queue.backoff.ms": 10,
        }
    )
    topic, partitions, expected = config["topic"], config["partitions"], config["expected"]
    consumer.list_topics(topic, timeout=20)
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    _ready()
    cpu_started = time.process_time()
    started = time.monotonic()
    deadline = started + config["timeout"]
    received = value_bytes = errors = 0
    first = 0.0
    size = config["value_size"]
    wrong_size = 0
    while received < expected and time.monotonic() < deadline:
        batch = consumer.consume(10_000, 0.2)
        if batch and not first:
            first = time.monotonic()
        for message in batch:
            if message.error() is not None:
                errors += 1
                continue
            received += 1
            if len(message) != size:
                wrong_size += 1
    ended = time.monotonic()
    client_cpu = time.process_time() - cpu_started
    value_bytes = received * size
    consumer.close()
    return {
        "received": received,
        "expected": expected,
        "errors": errors,
        "wrong_size": wrong_size,
        "value_bytes": value_bytes,
        "started": started,
        "first": first,
        "ended": ended,
        "client_cpu_s": client_cpu,
    }


def end_to_end(config: dict[str, Any]) -> dict[str, Any]:
    """One message at a time: produce it, wait until the consumer sees it; the time between is one sample."""
    bootstrap, topic = config["bootstrap"], config["topic"]
    producer = Producer(
        {"bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 0, "client.id": "bench-e2e-p"}
    )
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-e2e-{topic}",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": config["fetch_wait_max_ms"],
            "client.id": "bench-e2e-c",
        }
    )
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    # Warm up: one message through the whole path, so connections and the fetch loop are running.
    producer.produce(topic, b"warmup", partition=0)
    producer.flush(20)
    warm_deadline = time.monotonic() + 10
    warmed_up = False
    while not warmed_up and time.monotonic() < warm_deadline:
        message = consumer.poll(0.1)
        warmed_up = message is not None and message.error() is None
    _ready()
    latencies: list[float] = []
    deadline = time.monotonic() + config["timeout"]
    lost = 0
    for sequence in range(config["messages"]):
        if time.monotonic() >= deadline:
            break
        value = b"%d" % sequence
        sent = time.monotonic()
        producer.produce(topic, value, partition=0)
        producer.poll(0)
        wait_until = sent + config["lost_after"]
        while True:
            message = consumer.poll(0.05)
            now = time.monotonic()
            if message is not None and message.error() is None and message.value() == value:
                latencies.append(now - sent)
                break
            if now > wait_until:
                lost += 1
                break
        producer.poll(0)
    producer.flush(10)
    consumer.close()
    return {"latencies": latencies, "lost": lost, "requested": config["messages"], "warmed_up": warmed_up}


def group_members(config: dict[str, Any]) -> dict[str, Any]:
    """Several consumers, each in its own group, subscribe and read the whole topic, then commit."""
    bootstrap, topic, expected = config["bootstrap"], config["topic"], config["expected"]
    consumers = [
        Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "client.id": f"bench-{group}",
            }
        )
        for group in config["groups"]
    ]
    _ready()
    started = time.monotonic()
    for consumer in consumers:
        consumer.subscribe([topic])
    counts = [0] * len(consumers)
    assigned_at: list[float] = [0.0] * len(consumers)
    done_at: list[float] = [0.0] * len(consumers)
    deadline = started + config["timeout"]
    commit_errors = 0
    while time.monotonic() < deadline and not all(done_at):
        for index, consumer in enumerate(consumers):
            if done_at[index]:
                continue
            for message in consumer.consume(1000, 0.01):
                if message.error() is None:
                    counts[index] += 1
                    if not assigned_at[index]:
                        assigned_at[index] = time.monotonic()
            if counts[index] >= expected:
                try:
                    consumer.commit(asynchronous=False)
                except KafkaException:
                    commit_errors += 1
                done_at[index] = time.monotonic()
    for consumer in consumers:
        consumer.close()
    return {
        "started": started,
        "counts": counts,
        "first_record_at": assigned_at,
        "done_at": done_at,
        "commit_errors": commit_errors,
    }


def _ready() -> None:
    print("READY", flush=True)
    sys.stdin.readline()


_ROLES = {"produce": produce, "consume": consume, "end_to_end": end_to_end, "group_members": group_members}


def main() -> None:
    role, raw = sys.argv[1], sys.argv[2]
    result = _ROLES[role](json.loads(raw))
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
