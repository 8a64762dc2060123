"""What followers' fetch sessions (KIP-227) save: the three brokers' CPU while they replicate many
partitions with little traffic, with sessions (Kafka's default `max.incremental.fetch.session.cache.slots`
1000) and without (0: a leader keeps no session, so every follower fetch names, and every answer
carries, every partition it follows), on the same machine in one run.

    .venv/bin/python bench/fetch_session_bench.py [--partitions N] [--seconds S] [--rate R]

Each run starts the bench cluster (bench_cluster.py), creates one topic of N partitions with RF=3
(each broker leads a third and follows the rest), waits until every replica is in sync, then produces
R records a second (acks=all, round-robin over the partitions) for S seconds while reading each
broker's CPU (/proc/<pid>/stat). Printed as Markdown and written to docs/bench/fetch-sessions.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_cluster import BenchCluster, bench_cluster
from bench.replication_bench import cpu_seconds
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

RESULTS = Path(__file__).resolve().parents[1] / "docs" / "bench" / "fetch-sessions.json"
TOPIC = "many"


def all_in_sync(admin: AdminClient, partitions: int) -> bool:
    described = admin.list_topics(TOPIC, timeout=10).topics.get(TOPIC)
    if described is None or len(described.partitions) != partitions:
        return False
    return all(len(p.isrs) == 3 and p.leader >= 0 for p in described.partitions.values())


def measure(cluster: BenchCluster, partitions: int, seconds: float, rate: int) -> dict[str, Any]:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(TOPIC, partitions, 3)], operation_timeout=120)[TOPIC].result(180)
    deadline = time.monotonic() + 180
    while not all_in_sync(admin, partitions):
        if time.monotonic() > deadline:
            raise RuntimeError("the replicas did not all get in sync within 180 s")
        time.sleep(1)
    time.sleep(5)  # the creation's own work done
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 5})
    failures: list[Any] = []
    pids = {node: b.process.pid for node, b in cluster.brokers.items() if b.process is not None}
    before = {node: cpu_seconds(pid) for node, pid in pids.items()}
    started = time.monotonic()
    sent = 0
    while (elapsed := time.monotonic() - started) < seconds:
        while sent < elapsed * rate:
            producer.produce(
                TOPIC,
                b"v" * 100,
                partition=sent % partitions,
                on_delivery=lambda e, m: e is not None and failures.append(e),
            )
            sent += 1
        producer.poll(0.01)
    cpu = {node: cpu_seconds(pid) - before[node] for node, pid in pids.items()}
    took = time.monotonic() - started
    if producer.flush(60) != 0 or failures:
        raise RuntimeError(f"produce failed: {failures[:3]}")
    return {
        "records": sent,
        "seconds": round(took, 1),
        "cpu_percent": {str(node): round(100 * c / took, 1) for node, c in cpu.items()},
        "cpu_percent_total": round(100 * sum(cpu.values()) / took, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--partitions", type=int, default=600)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--rate", type=int, default=20)
    args = parser.parse_args()
    results: dict[str, Any] = {}
    for name, slots in (("without sessions", "0"), ("with sessions", "1000")):
        overrides = {"max.incremental.fetch.session.cache.slots": slots}
        with bench_cluster("odradek-fetch-session-bench-", overrides) as cluster:
            results[name] = measure(cluster, args.partitions, args.seconds, args.rate)
    report = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "partitions": args.partitions,
        "replication_factor": 3,
        "records_per_second": args.rate,
        "results": results,
    }
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")
    print(
        f"fetch session bench: {args.partitions} partitions RF=3 on 3 brokers, "
        f"{args.rate} records/s for {args.seconds:g} s"
    )
    print("| followers' fetches | CPU % broker 1 | broker 2 | broker 3 | all three |")
    print("| --- | --- | --- | --- | --- |")
    for name, r in results.items():
        c = r["cpu_percent"]
        print(f"| {name} | {c['1']} | {c['2']} | {c['3']} | {r['cpu_percent_total']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
