"""Transactional produce throughput next to idempotent produce, against a local odradek broker process:
confluent-kafka (librdkafka) writing small records to one topic, idempotent; transactional committing
every 1,000 records; transactional committing every 100 ms (the issue's two cadences).

    .venv/bin/python bench/txn_bench.py [--records N] [--value-bytes B]

It prints one line per mode: records per second and MB per second of values, and the commits made.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.broker_process import BrokerProcess

Commit = Callable[[int, float], bool]


def _run(
    bootstrap: str, topic: str, records: int, value: bytes, commit_when: Commit | None
) -> tuple[float, int]:
    config = {"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5}
    if commit_when is not None:
        config["transactional.id"] = f"bench-{topic}"
    producer = Producer(config)
    commits = 0
    started = time.perf_counter()
    if commit_when is not None:
        producer.init_transactions(30)
        producer.begin_transaction()
    opened, in_txn = time.perf_counter(), 0
    for _ in range(records):
        while True:
            try:
                producer.produce(topic, value=value)
                break
            except BufferError:
                producer.poll(0.001)  # the local queue is full: let deliveries drain it
        in_txn += 1
        if commit_when is not None and commit_when(in_txn, time.perf_counter() - opened):
            producer.commit_transaction(30)
            commits += 1
            producer.begin_transaction()
            opened, in_txn = time.perf_counter(), 0
    if commit_when is not None:
        producer.commit_transaction(30)
        commits += 1
    producer.flush(60)
    return time.perf_counter() - started, commits


def broker_log_end(bootstrap: str, topic: str) -> int:
    """The topic's log end offset (records plus one marker per commit for the transactional modes)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-check"})
    try:
        return int(consumer.get_watermark_offsets(TopicPartition(topic, 0), 30)[1])
    finally:
        consumer.close()


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--value-bytes", type=int, default=100)
    args = parser.parse_args()
    value = b"x" * args.value_bytes
    modes: list[tuple[str, Commit | None]] = [
        ("idempotent", None),
        ("transactional, commit every 1,000 records", lambda count, _: count >= 1000),
        ("transactional, commit every 100 ms", lambda _, elapsed: elapsed >= 0.1),
    ]
    with tempfile.TemporaryDirectory() as data:
        broker = BrokerProcess(Path(data) / "data", {"transaction.state.log.num.partitions": "5"}).start()
        try:
            admin = AdminClient({"bootstrap.servers": broker.bootstrap})
            admin.create_topics([NewTopic("bench-warm-up", 1, 1)])["bench-warm-up"].result(30)
            _run(
                broker.bootstrap, "bench-warm-up", 10_000, value, None
            )  # connections and metadata, not measured
            for index, (name, commit_when) in enumerate(modes):
                topic = f"bench-{index}"
                admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
                seconds, commits = _run(broker.bootstrap, topic, args.records, value, commit_when)
                stored = broker_log_end(broker.bootstrap, topic)
                assert stored >= args.records, f"{name}: only {stored} offsets written"
                rate = args.records / seconds
                print(
                    f"{name:45} {rate:10,.0f} records/s {rate * len(value) / 1e6:7.2f} MB/s"
                    f"  ({commits} commits, {seconds:.1f} s)"
                )
        finally:
            broker.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
