"""What TLS and SASL cost: one broker with PLAINTEXT, SSL and SASL_SSL (SCRAM-SHA-256) listeners, and a
confluent-kafka producer then consumer moving the same messages through each, alternating listeners.

    .venv/bin/python bench/security_bench.py [--messages 200000] [--size 1024] [--rounds 2]

Prints MB/s per listener (median of the rounds). Certificates are made with trustme; the broker runs as
a child process on 127.0.0.1 and is stopped at the end.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from tests.support.security import start_secure_broker
from tests.support.security_clients import Access, librdkafka_settings

ACCESSES = {
    "PLAINTEXT": Access("PLAINTEXT", "PLAINTEXT"),
    "SSL": Access("SSL", "SSL"),
    "SASL_SSL (SCRAM-SHA-256)": Access("SASL_SSL", "SASL_SSL", "SCRAM-SHA-256", "carol", "carol-secret"),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    payload = b"x" * args.size
    megabytes = args.messages * args.size / 1e6
    results: dict[str, dict[str, list[float]]] = {name: {"produce": [], "consume": []} for name in ACCESSES}
    with tempfile.TemporaryDirectory(prefix="odradek-security-bench-") as directory:
        broker = start_secure_broker(Path(directory), {"num.partitions": "1"})
        try:
            for round_number in range(args.rounds):
                for name, access in ACCESSES.items():
                    settings = librdkafka_settings(broker, access)
                    topic = f"bench-{access.listener.lower().replace('_', '-')}-{round_number}"
                    results[name]["produce"].append(
                        megabytes / _produce(settings, topic, payload, args.messages)
                    )
                    results[name]["consume"].append(megabytes / _consume(settings, topic, args.messages))
        finally:
            broker.process.stop()
    print(f"{args.messages} messages of {args.size} bytes, median of {args.rounds} rounds (MB/s)")
    print(f"{'listener':28} {'produce':>9} {'consume':>9}")
    for name, figures in results.items():
        produce, consume = statistics.median(figures["produce"]), statistics.median(figures["consume"])
        print(f"{name:28} {produce:9.1f} {consume:9.1f}")
    return 0


def _produce(settings: dict[str, str], topic: str, payload: bytes, count: int) -> float:
    producer = Producer({**settings, "linger.ms": 5, "batch.size": 1_000_000, "acks": "1"})
    producer.list_topics(topic, timeout=10)  # creates the topic; the clock starts once it exists
    started = time.perf_counter()
    for _ in range(count):
        while True:
            try:
                producer.produce(topic, payload)
                break
            except BufferError:
                producer.poll(0.01)
    assert producer.flush(60) == 0
    return time.perf_counter() - started


def _consume(settings: dict[str, str], topic: str, count: int) -> float:
    # assigned, not subscribed: the clock measures fetching, not a group join
    consumer = Consumer({**settings, "group.id": f"bench-{topic}", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    received = 0
    started = time.perf_counter()
    while received < count:
        for message in consumer.consume(10_000, 1.0):
            if message.error() is None:
                received += 1
    elapsed = time.perf_counter() - started
    consumer.close()
    return elapsed


if __name__ == "__main__":
    raise SystemExit(main())
