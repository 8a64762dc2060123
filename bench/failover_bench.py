"""Failover time: from a leader's SIGKILL (and, separately, its controlled shutdown by SIGTERM) to the
first acks=all produce acknowledged by the new leader of each partition it led.

    .venv/bin/python bench/failover_bench.py [--kills N] [--partitions P] [--session-timeout-ms MS]

ZooKeeper and three brokers (bench/bench_cluster.py), a topic with P partitions, RF=3,
min.insync.replicas=2, preferred leaders spread over the brokers. One confluent-kafka producer
(idempotent, acks=all) writes a record to every partition each 10 ms, with the settings a user who
wants fast failover would set (PRODUCER below). N times: SIGKILL the leader of the next partition
(round robin), time the first ack from the new leader on each partition it led, restart it, wait for
a full ISR and move leaders back to the preferred replicas; then N controlled shutdowns (SIGTERM)
measured the same way. "From the new leader" is told by the leader epoch of the acknowledged record,
read back with a consumer: during a controlled shutdown the old leader keeps acknowledging until its
leaderships have moved, and those acks say nothing about failover.

Where the time goes is read from ZooKeeper with a kazoo client: when the victim's /brokers/ids
znode went (its session expired, or it deregistered), and the mtime of each partition's state znode
(when the controller wrote the new leader); the rest, to the first ack, is LeaderAndIsr delivery,
the client's metadata refresh and the produce round trip. Results are printed as Markdown and
written as JSON to docs/bench/failover.json.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import shutil
import signal
import statistics
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_cluster import BROKERS, BenchCluster, bench_cluster
from confluent_kafka import (
    Consumer,
    ElectionType,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

RESULTS = Path(__file__).resolve().parents[1] / "docs" / "bench" / "failover.json"
TOPIC = "failover"
#: Seconds between two records to the same partition: the resolution of the measurement.
PRODUCE_INTERVAL_S = 0.01
#: What a user wanting quick failover sets (librdkafka's defaults in comments).
PRODUCER = {
    "acks": "all",
    "enable.idempotence": True,
    "linger.ms": 5,
    # retry a NOT_LEADER_OR_FOLLOWER produce soon (100 ms, backing off to 1 s)
    "retry.backoff.ms": 20,
    "retry.backoff.max.ms": 200,
    # reconnect to a broker that came back soon (100 ms, up to 10 s)
    "reconnect.backoff.ms": 20,
    "reconnect.backoff.max.ms": 200,
    # while a partition has no known leader, ask for metadata this often (100 ms)
    "topic.metadata.refresh.fast.interval.ms": 50,
    # a record keeps being retried across the whole failover rather than failing (300 s)
    "message.timeout.ms": 120_000,
}
WAIT_S = 90.0


@dataclass
class Acks:
    """Every acknowledged record: partition -> [(offset, wall time of the ack)], in ack order."""

    by_partition: dict[int, list[tuple[int, float]]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def on_delivery(self, error: KafkaError | None, message: Message) -> None:
        now = time.time()
        with self.lock:
            if error is not None:
                self.errors.append(str(error))
                return
            partition, offset = message.partition(), message.offset()
            if partition is None or offset is None:
                self.errors.append(f"an ack without an offset: {partition} {offset}")
                return
            self.by_partition.setdefault(partition, []).append((offset, now))

    def last_before(self, partition: int, moment: float) -> int:
        with self.lock:
            acks = self.by_partition.get(partition, [])
            return max((o for o, t in acks if t < moment), default=-1)

    def ack_time(self, partition: int, offset: int) -> float | None:
        with self.lock:
            return next((t for o, t in self.by_partition.get(partition, []) if o == offset), None)

    def longest_gap(self, partition: int, start: float, end: float) -> float:
        """Longest stretch without an ack on `partition` between `start` and `end`."""
        with self.lock:
            times = [start] + [t for _, t in self.by_partition.get(partition, []) if start < t < end] + [end]
        return max(b - a for a, b in itertools.pairwise(times))


class ProducerLoop(threading.Thread):
    def __init__(self, bootstrap: str, partitions: int) -> None:
        super().__init__(daemon=True)
        self.producer = Producer({"bootstrap.servers": bootstrap, **PRODUCER})
        self.partitions = partitions
        self.acks = Acks()
        self.stopping = threading.Event()

    def run(self) -> None:
        value = b"x" * 100
        next_round = time.monotonic()
        while not self.stopping.is_set():
            for partition in range(self.partitions):
                # a full queue (a partition without a leader for long) skips this round
                with contextlib.suppress(BufferError):
                    self.producer.produce(
                        TOPIC, value, partition=partition, on_delivery=self.acks.on_delivery
                    )
            next_round += PRODUCE_INTERVAL_S
            while (left := next_round - time.monotonic()) > 0:
                self.producer.poll(min(left, 0.005))
            next_round = max(next_round, time.monotonic())
        self.producer.flush(60)


class ZooKeeperWatch:
    """When broker znodes vanish, and when the controller last wrote each partition's state."""

    def __init__(self, connect: str) -> None:
        self.client = KazooClient(hosts=connect)
        self.client.start(30)
        self.gone: dict[int, float] = {}
        self._live: set[int] = set()
        self.client.ChildrenWatch("/brokers/ids", self._on_brokers)

    def _on_brokers(self, children: list[str]) -> None:
        now = time.time()
        live = {int(c) for c in children}
        for node in self._live - live:
            self.gone[node] = now
        self._live = live

    def state_written(self, partition: int) -> float:
        _, stat = self.client.get(f"/brokers/topics/{TOPIC}/partitions/{partition}/state")
        return float(stat.mtime) / 1000

    def leaders(self) -> tuple[dict[int, int], dict[int, list[int]], int]:
        """partition -> leader and partition -> ISR as the controller last wrote them, and the controller."""
        leader, isr = {}, {}
        for child in self.client.get_children(f"/brokers/topics/{TOPIC}/partitions"):
            data, _ = self.client.get(f"/brokers/topics/{TOPIC}/partitions/{child}/state")
            state = json.loads(data)
            leader[int(child)], isr[int(child)] = state["leader"], state["isr"]
        controller = json.loads(self.client.get("/controller")[0])["brokerid"]
        return leader, isr, controller

    def stop(self) -> None:
        self.client.stop()
        self.client.close()


def poll_until(what: str, check: Any, timeout: float = WAIT_S) -> Any:
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        try:
            result = check()
        except Exception as error:
            last_error = error
            result = None
        if result:
            return result
        time.sleep(0.1)
    raise TimeoutError(f"{what}: not within {timeout} s (last error: {last_error!r})")


def first_new_leader_ack(consumer: Consumer, acks: Acks, partition: int, signalled: float) -> dict[str, Any]:
    """The first record acknowledged after `signalled` whose leader epoch is newer than the last record
    acknowledged before it, and when its ack came."""
    before = acks.last_before(partition, signalled)
    consumer.assign([TopicPartition(TOPIC, partition, max(before, 0))])
    old_epoch: int | None = None
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is None or message.error() is not None:
            continue
        epoch, offset = message.leader_epoch(), message.offset()
        assert epoch is not None and offset is not None
        if old_epoch is None:
            old_epoch = epoch if before >= 0 else -1
        if epoch > old_epoch:
            acked = poll_until(
                f"ack of {TOPIC}-{partition}@{offset}", lambda o=offset: acks.ack_time(partition, o)
            )
            return {
                "partition": partition,
                "offset": offset,
                "old_epoch": old_epoch,
                "epoch": epoch,
                "acked": acked,
            }
    raise TimeoutError(f"no record of a new leader epoch on {TOPIC}-{partition}")


def run_event(
    cluster: BenchCluster,
    admin: AdminClient,
    loop: ProducerLoop,
    consumer: Consumer,
    watch: ZooKeeperWatch,
    how: signal.Signals,
    index: int,
    partitions: int,
) -> dict[str, Any]:
    leader, _, controller = watch.leaders()
    victim = leader[index % partitions]
    led = sorted(p for p, node in leader.items() if node == victim)
    broker = cluster.brokers[victim]
    assert broker.process is not None
    watch.gone.pop(victim, None)
    signalled = time.time()
    broker.process.send_signal(how)
    # the new leaders: elected by the controller and known to the cluster
    poll_until("new leaders", lambda: all(watch.leaders()[0][p] not in (victim, -1) for p in led))
    written = {p: watch.state_written(p) for p in led}  # before the restart's ISR changes rewrite it
    for p in led:
        poll_until(f"an ack on {TOPIC}-{p}", lambda p=p: acks_after(loop.acks, p, signalled))
    broker.process.wait(WAIT_S)
    samples = []
    for p in led:
        first = first_new_leader_ack(consumer, loop.acks, p, signalled)
        state = written[p]
        gone = watch.gone.get(victim)
        samples.append(
            {
                **first,
                "seconds": round(first["acked"] - signalled, 3),
                "znode_gone_s": round(gone - signalled, 3) if gone is not None else None,
                "state_written_s": round(state - signalled, 3),
                "longest_ack_gap_s": round(loop.acks.longest_gap(p, signalled, first["acked"] + 1), 3),
            }
        )
        del samples[-1]["acked"]
    broker.process = None
    broker.start()
    poll_until("full ISR", lambda: all(len(isr) == len(BROKERS) for isr in watch.leaders()[1].values()))
    restore_preferred_leaders(admin, watch, partitions)
    return {"victim": victim, "was_controller": victim == controller, "partitions": samples}


def acks_after(acks: Acks, partition: int, moment: float) -> bool:
    with acks.lock:
        return any(t > moment for _, t in acks.by_partition.get(partition, [])[-50:])


def restore_preferred_leaders(admin: AdminClient, watch: ZooKeeperWatch, partitions: int) -> None:
    wanted = {p: preferred(p) for p in range(partitions)}
    if watch.leaders()[0] == wanted:
        return
    moved = [TopicPartition(TOPIC, p) for p in range(partitions)]
    # retried: the admin client may still take the killed broker for the controller (NOT_CONTROLLER)
    poll_until(
        "preferred election", lambda: admin.elect_leaders(ElectionType.PREFERRED, moved).result(30) or True
    )
    poll_until("preferred leaders", lambda: watch.leaders()[0] == wanted)
    time.sleep(1)  # the producer follows the moved leaders before the next event


def preferred(partition: int) -> int:
    return BROKERS[partition % len(BROKERS)]


def assignment(partition: int) -> list[int]:
    first = partition % len(BROKERS)
    return [BROKERS[(first + i) % len(BROKERS)] for i in range(len(BROKERS))]


def summary(events: list[dict[str, Any]]) -> dict[str, Any]:
    seconds = sorted(s["seconds"] for e in events for s in e["partitions"])
    if not seconds:
        return {}
    gaps = sorted(s["longest_ack_gap_s"] for e in events for s in e["partitions"])
    elected = sorted(s["state_written_s"] for e in events for s in e["partitions"])
    gone = sorted(s["znode_gone_s"] for e in events for s in e["partitions"] if s["znode_gone_s"] is not None)
    after = sorted(s["seconds"] - s["state_written_s"] for e in events for s in e["partitions"])
    return {
        "samples": len(seconds),
        "p50_s": percentile(seconds, 50),
        "p99_s": percentile(seconds, 99),
        "max_s": seconds[-1],
        "longest_ack_gap_p50_s": percentile(gaps, 50),
        "longest_ack_gap_max_s": gaps[-1],
        "znode_gone_p50_s": percentile(gone, 50) if gone else None,
        "leader_written_p50_s": percentile(elected, 50),
        "written_to_first_ack_p50_s": percentile(after, 50),
        "written_to_first_ack_max_s": round(after[-1], 3),
    }


def create(admin: AdminClient, topic: NewTopic) -> bool:
    """True once the topic exists (a retry after a timed-out attempt may find it made)."""
    try:
        admin.create_topics([topic], operation_timeout=30)[TOPIC].result(60)
    except KafkaException as error:
        if error.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise
    return True


def percentile(values: list[float], pct: float) -> float:
    if len(values) == 1:
        return values[0]
    return round(statistics.quantiles(values, n=100, method="inclusive")[int(pct) - 1], 3)


def write_report(
    args: argparse.Namespace, acks: Acks, results: dict[str, list[dict[str, Any]]], started: float
) -> dict[str, Any]:
    report = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "zookeeper_session_timeout_ms": args.session_timeout_ms,
        "partitions": args.partitions,
        "producer": PRODUCER,
        "produce_interval_ms": PRODUCE_INTERVAL_S * 1000,
        "delivery_errors": len(acks.errors),
        "delivery_error_examples": acks.errors[:20],
        "run_seconds": round(time.monotonic() - started),
        "summary": {name: summary(events) for name, events in results.items()},
        "events": results,
    }
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")
    return report


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--kills", type=int, default=20, help="SIGKILLs, and as many controlled shutdowns")
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--session-timeout-ms", type=int, default=6000)
    parser.add_argument("--keep-logs", type=Path, help="copy the brokers' logs into this directory")
    args = parser.parse_args()
    overrides = {"zookeeper.session.timeout.ms": str(args.session_timeout_ms)}
    results: dict[str, list[dict[str, Any]]] = {"sigkill": [], "controlled_shutdown": []}
    started = time.monotonic()
    with bench_cluster("odradek-failover-bench-", overrides) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        watch = ZooKeeperWatch(cluster.zookeeper_connect)
        topic = NewTopic(
            TOPIC,
            num_partitions=args.partitions,
            replica_assignment=[assignment(p) for p in range(args.partitions)],
            config={"min.insync.replicas": "2"},
        )
        poll_until("topic created", lambda: create(admin, topic), timeout=180)
        poll_until("full ISR", lambda: all(len(isr) == len(BROKERS) for isr in watch.leaders()[1].values()))
        loop = ProducerLoop(cluster.bootstrap, args.partitions)
        poll_until(
            "the producer knows every partition",
            lambda: len(loop.producer.list_topics(TOPIC, 10).topics[TOPIC].partitions) == args.partitions,
        )
        consumer = Consumer(
            {
                "bootstrap.servers": cluster.bootstrap,
                "group.id": "failover-bench",
                "enable.auto.commit": False,
            }
        )
        loop.start()
        try:
            poll_until("acks on every partition", lambda: len(loop.acks.by_partition) == args.partitions)
            for name, how in (("sigkill", signal.SIGKILL), ("controlled_shutdown", signal.SIGTERM)):
                for index in range(args.kills):
                    event = run_event(cluster, admin, loop, consumer, watch, how, index, args.partitions)
                    results[name].append(event)
                    write_report(args, loop.acks, results, started)  # a run cut short keeps its figures
                    worst = max(s["seconds"] for s in event["partitions"])
                    print(
                        f"{name} {index + 1}/{args.kills}: broker {event['victim']}, worst {worst} s",
                        flush=True,
                    )
        finally:
            loop.stopping.set()
            loop.join(90)
            consumer.close()
            watch.stop()
            if args.keep_logs is not None:
                args.keep_logs.mkdir(parents=True, exist_ok=True)
                for broker in cluster.brokers.values():
                    shutil.copy(broker.log_path, args.keep_logs / broker.log_path.name)
    report = write_report(args, loop.acks, results, started)
    print(f"failover bench: {args.kills} of each, session timeout {args.session_timeout_ms} ms")
    print(
        "| event | samples | p50 s | p99 s | max s | znode gone p50 | leader written p50 | written→ack p50 |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, s in report["summary"].items():
        print(
            f"| {name} | {s['samples']} | {s['p50_s']} | {s['p99_s']} | {s['max_s']} | "
            f"{s['znode_gone_p50_s']} | {s['leader_written_p50_s']} | {s['written_to_first_ack_p50_s']} |"
        )
    print(f"delivery errors: {len(loop.acks.errors)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
