"""Replication's cost: produce throughput with RF=3 acks=all next to RF=1 on the same three-broker
cluster (ZooKeeper and three broker processes on 127.0.0.2-4), in one run, and each broker's CPU per MB
written: the leader's against its followers'.

    .venv/bin/python bench/replication_bench.py [--megabytes N] [--value-bytes B]

Both topics have one partition led by broker 1 (RF=3: followers 2 and 3), so the RF=1 run is the
leader's work alone, and the RF=3 run adds serving two followers and waiting for them. CPU is read
from /proc/<pid>/stat (user + system) before and after each run. Results are printed as Markdown and
written as JSON to docs/bench/replication.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_cluster import bench_cluster
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

RESULTS = Path(__file__).resolve().parents[1] / "docs" / "bench" / "replication.json"


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])  # utime, stime
    return ticks / os.sysconf("SC_CLK_TCK")


def produce(bootstrap: str, topic: str, count: int, value: bytes) -> float:
    producer = Producer(
        {"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 5}
    )
    failures: list[Any] = []
    started = time.perf_counter()
    for _ in range(count):
        while True:
            try:
                producer.produce(
                    topic, value, partition=0, on_delivery=lambda e, m: e is not None and failures.append(e)
                )
                break
            except BufferError:
                producer.poll(0.001)
    if producer.flush(300) != 0 or failures:
        raise RuntimeError(f"produce to {topic} failed: {failures[:3]}")
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--megabytes", type=float, default=50)
    parser.add_argument("--value-bytes", type=int, default=1000)
    args = parser.parse_args()
    value = b"r" * args.value_bytes
    count = int(args.megabytes * 1_000_000 / args.value_bytes)
    with bench_cluster("odradek-replication-bench-") as cluster:
        brokers = cluster.brokers
        bootstrap = cluster.bootstrap
        admin = AdminClient({"bootstrap.servers": bootstrap})
        topics = [
            NewTopic("rf3", num_partitions=1, replica_assignment=[[1, 2, 3]]),
            NewTopic("rf1", num_partitions=1, replica_assignment=[[1]], config={"min.insync.replicas": "1"}),
        ]
        for future in admin.create_topics(topics, operation_timeout=30).values():
            future.result(60)
        time.sleep(2)  # leaders elected and followers connected
        produce(bootstrap, "rf3", 1000, value)  # warm-up: connections, metadata
        produce(bootstrap, "rf1", 1000, value)
        results: dict[str, Any] = {}
        for topic in ("rf1", "rf3"):
            pids = {node: b.process.pid for node, b in brokers.items() if b.process is not None}
            before = {node: cpu_seconds(pid) for node, pid in pids.items()}
            seconds = produce(bootstrap, topic, count, value)
            time.sleep(1)  # followers finish the last fetches
            cpu = {node: cpu_seconds(pid) - before[node] for node, pid in pids.items()}
            megabytes = count * len(value) / 1_000_000
            results[topic] = {
                "seconds": round(seconds, 2),
                "mb_per_s": round(megabytes / seconds, 2),
                "cpu_s_per_mb": {str(node): round(c / megabytes, 4) for node, c in cpu.items()},
            }
    report = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "records": count,
        "value_bytes": args.value_bytes,
        "results": results,
    }
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")
    print(f"replication bench, {count} records of {args.value_bytes} B, acks=all, leader broker 1")
    print("| topic | MB/s | CPU s/MB leader (1) | CPU s/MB follower 2 | CPU s/MB follower 3 |")
    print("| --- | --- | --- | --- | --- |")
    for topic, r in results.items():
        c = r["cpu_s_per_mb"]
        print(f"| {topic} | {r['mb_per_s']} | {c['1']} | {c['2']} | {c['3']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
