"""The "one replica left in sync" probe: with min.insync.replicas=2, acks=all writes must be refused.

A topic of one partition (RF=3, min.insync.replicas=2); both followers are stopped; once the leader has
had time to drop them from the ISR (replica.lag.time.max.ms), a plain acks=all producer writes a few
values. Kafka answers NOT_ENOUGH_REPLICAS (nothing appended), or NOT_ENOUGH_REPLICAS_AFTER_APPEND
when the ISR shrank after the append; either way nothing may be acknowledged. The followers are
started again before it returns.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

from tests.faults.cluster import REPLICA_LAG_TIME_MAX_MS, FaultCluster

PROBE_TOPIC = "faults-min-insync"
WRITES = 20
#: A refusal that says why: the partition has too few replicas in sync.
REFUSALS = frozenset({"NOT_ENOUGH_REPLICAS", "NOT_ENOUGH_REPLICAS_AFTER_APPEND"})


def probe_one_replica_in_sync(cluster: FaultCluster) -> dict[str, Any]:
    """Stop both followers of a fresh partition, write, report; `holds` is Kafka's promise kept."""
    cluster.create_topic(PROBE_TOPIC, partitions=1)
    partition = cluster.partitions(PROBE_TOPIC)[0]
    leader = partition.leader
    followers = [r for r in partition.replicas if r != leader]
    for follower in followers:
        cluster.terminate(follower)
    try:
        isr = _wait_for_short_isr(cluster, leader)
        outcome = _write(cluster.brokers[leader].bootstrap)
    finally:
        for follower in followers:
            cluster.restart(follower)
    refused = sum(outcome["errors"].get(name, 0) for name in REFUSALS)
    return {
        "leader": leader,
        "stopped": followers,
        "isr_seen": isr,
        "acknowledged": outcome["acknowledged"],
        "errors": outcome["errors"],
        "holds": outcome["acknowledged"] == 0 and refused > 0,
    }


def _wait_for_short_isr(cluster: FaultCluster, leader: int) -> list[int]:
    """The ISR once it is down to the leader, or as it is after a generous bound (recorded as seen)."""
    deadline = time.monotonic() + max(30.0, 5 * REPLICA_LAG_TIME_MAX_MS / 1000)
    isr: list[int] = []
    while time.monotonic() < deadline:
        try:
            isr = sorted(cluster.partitions(PROBE_TOPIC)[0].isrs)
        except Exception:
            isr = []
        if isr == [leader]:
            break
        time.sleep(0.5)
    return isr


def _write(bootstrap: str) -> dict[str, Any]:
    from confluent_kafka import Producer

    acknowledged = 0
    errors: Counter[str] = Counter()
    lock = threading.Lock()

    def delivered(error: Any, message: Any) -> None:
        nonlocal acknowledged
        with lock:
            if error is None:
                acknowledged += 1
            else:
                errors[error.name()] += 1

    # no retries: each write's first answer is what the broker said
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "retries": 0,
            "message.timeout.ms": 15_000,
            "linger.ms": 0,
        }
    )
    for n in range(WRITES):
        producer.produce(PROBE_TOPIC, value=f"probe-{n}".encode(), partition=0, on_delivery=delivered)
        producer.poll(0.05)
    producer.flush(30)
    return {"acknowledged": acknowledged, "errors": dict(errors)}
