"""Consumer group soak: many groups whose members join, consume, commit and leave in random order.

    .venv/bin/python bench/groups_soak.py                       # 50 groups x 4 members, 5 minutes
    .venv/bin/python bench/groups_soak.py --groups 5 --seconds 30 --write bench/results/soak.json

A broker is started with short group timeouts. One topic is produced to continuously; every group
consumes all of it. Members are aiokafka consumers on one event loop (light enough for hundreds),
and, for every fifth group, confluent-kafka consumers in threads (alternately classic and
`group.protocol=consumer`). A member commits the offsets it has processed every half second and when
partitions are revoked; it records every commit the broker acknowledged. Meanwhile a churn loop picks
random groups and stops a random member (LeaveGroup) or starts a new one, so groups shrink to zero
and grow back in random order.

At the end production stops, every group gets at least one member, and the soak waits until each
group's members hold a steady split of all partitions and have read to the end. Then every member
leaves (committing what it processed) and the checks run:
- no member stuck: every group settled (all partitions owned, disjoint) within the deadline;
- committed offsets: the broker's committed offset of every (group, partition) equals the highest
  offset a member of that group had acknowledged for it;
- nothing skipped: each group consumed every offset below its committed position.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import random
import sys
import tempfile
import threading
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "src")]

from tests.support.broker_process import BrokerProcess  # noqa: E402

BROKER_OVERRIDES = {
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "500",
    "offsets.topic.num.partitions": "10",
    "group.consumer.session.timeout.ms": "6000",
    "group.consumer.min.session.timeout.ms": "1000",
    "group.consumer.heartbeat.interval.ms": "500",
    "group.consumer.min.heartbeat.interval.ms": "100",
}
SESSION_TIMEOUT_MS = 6000
HEARTBEAT_INTERVAL_MS = 500
COMMIT_INTERVAL = 0.5


@dataclass
class Ledger:
    """What the members saw: consumed offsets and acknowledged commits, by (group, partition)."""

    consumed: dict[tuple[str, int], set[int]] = field(default_factory=lambda: defaultdict(set))
    acked: dict[tuple[str, int], int] = field(default_factory=dict)
    commits: int = 0
    failed_commits: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, group: str, partition: int, offset: int) -> None:
        with self.lock:
            self.consumed[(group, partition)].add(offset)

    def ack(self, group: str, offsets: dict[int, int]) -> None:
        with self.lock:
            self.commits += 1
            for partition, offset in offsets.items():
                key = (group, partition)
                self.acked[key] = max(self.acked.get(key, -1), offset)


@dataclass
class Report:
    groups: int
    members_per_group: int
    seconds: float
    partitions: int
    produced: int = 0
    members_started: int = 0
    members_left: int = 0
    commits_acked: int = 0
    commits_failed: int = 0
    records_consumed: int = 0
    settle_seconds: float = 0.0
    unsettled_groups: list[str] = field(default_factory=list)
    offset_mismatches: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    member_errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.unsettled_groups or self.offset_mismatches or self.skipped or self.member_errors)


class AioMember:
    """An aiokafka consumer on the soak's event loop."""

    def __init__(self, bootstrap: str, group: str, topic: str, ledger: Ledger, name: str) -> None:
        self.bootstrap, self.group, self.topic, self.ledger, self.name = bootstrap, group, topic, ledger, name
        self.positions: dict[int, int] = {}
        self.assigned: frozenset[int] = frozenset()
        self.errors: list[str] = []
        self.stopping = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        self.stopping.set()
        if self.task is not None:
            await self.task

    def assignment(self) -> frozenset[int]:
        return self.assigned

    async def _run(self) -> None:
        from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener

        member = self

        class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
            async def on_partitions_revoked(self, revoked: Any) -> None:
                gone = {tp.partition for tp in revoked}
                await member._commit(gone)
                for partition in gone:  # if it comes back, it starts from the committed offset
                    member.positions.pop(partition, None)

            async def on_partitions_assigned(self, assigned: Any) -> None:
                pass

        consumer = AIOKafkaConsumer(
            bootstrap_servers=self.bootstrap,
            group_id=self.group,
            client_id=self.name,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            session_timeout_ms=SESSION_TIMEOUT_MS,
            heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
            max_poll_interval_ms=60_000,
            rebalance_timeout_ms=60_000,
        )
        self.consumer = consumer
        try:
            consumer.subscribe([self.topic], listener=Listener())
            await consumer.start()
            last_commit = time.monotonic()
            while not self.stopping.is_set():
                batches = await consumer.getmany(timeout_ms=200, max_records=200)
                for tp, messages in batches.items():
                    for message in messages:
                        self.ledger.record(self.group, tp.partition, message.offset)
                        self.positions[tp.partition] = message.offset + 1
                self.assigned = frozenset(tp.partition for tp in consumer.assignment())
                if time.monotonic() - last_commit >= COMMIT_INTERVAL:
                    await self._commit(None)
                    last_commit = time.monotonic()
            await self._commit(None)
        except Exception as error:
            self.errors.append(f"{self.name}: {error!r}")
        finally:
            with contextlib.suppress(Exception):
                await consumer.stop()

    async def _commit(self, only: set[int] | None) -> None:
        from aiokafka.structs import TopicPartition

        owned = {tp.partition for tp in self.consumer.assignment()}
        offsets = {p: o for p, o in self.positions.items() if p in owned and (only is None or p in only)}
        if not offsets:
            return
        try:
            await self.consumer.commit({TopicPartition(self.topic, p): o for p, o in offsets.items()})
        except Exception:
            self.ledger.failed_commits += 1  # a rebalance got there first: the next owner re-reads
            return
        self.ledger.ack(self.group, offsets)


class ConfluentMember:
    """A confluent-kafka consumer in a thread (classic or KIP-848 protocol)."""

    def __init__(
        self, bootstrap: str, group: str, topic: str, ledger: Ledger, name: str, protocol: str
    ) -> None:
        self.bootstrap, self.group, self.topic, self.ledger, self.name = bootstrap, group, topic, ledger, name
        self.protocol = protocol
        self.positions: dict[int, int] = {}
        self.assigned: frozenset[int] = frozenset()
        self.errors: list[str] = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self.thread.start()

    async def stop(self) -> None:
        self.stopping.set()
        await asyncio.to_thread(self.thread.join, 60)

    def assignment(self) -> frozenset[int]:
        return self.assigned

    def _run(self) -> None:
        from confluent_kafka import Consumer

        config: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap,
            "group.id": self.group,
            "client.id": self.name,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
        if self.protocol == "consumer":
            config["group.protocol"] = "consumer"
        else:
            config.update(
                {"session.timeout.ms": SESSION_TIMEOUT_MS, "heartbeat.interval.ms": HEARTBEAT_INTERVAL_MS}
            )
        try:
            consumer = Consumer(config)
            self.consumer = consumer
            consumer.subscribe([self.topic], on_revoke=lambda c, partitions: self._revoked(partitions))
            last_commit = time.monotonic()
            while not self.stopping.is_set():
                for message in consumer.consume(200, 0.2):
                    if message.error() is None:
                        self.ledger.record(self.group, message.partition(), message.offset())
                        self.positions[message.partition()] = message.offset() + 1
                self.assigned = frozenset(tp.partition for tp in consumer.assignment())
                if time.monotonic() - last_commit >= COMMIT_INTERVAL:
                    self._commit(None)
                    last_commit = time.monotonic()
            self._commit(None)
            consumer.close()
        except Exception as error:
            self.errors.append(f"{self.name}: {error!r}")

    def _revoked(self, partitions: list[Any]) -> None:
        gone = {tp.partition for tp in partitions}
        self._commit(gone)
        for partition in gone:  # if it comes back, it starts from the committed offset
            self.positions.pop(partition, None)

    def _commit(self, only: set[int] | None) -> None:
        from confluent_kafka import TopicPartition

        owned = {tp.partition for tp in self.consumer.assignment()}
        offsets = {p: o for p, o in self.positions.items() if p in owned and (only is None or p in only)}
        if not offsets:
            return
        try:
            answer = self.consumer.commit(
                offsets=[TopicPartition(self.topic, p, o) for p, o in offsets.items()], asynchronous=False
            )
        except Exception:
            self.ledger.failed_commits += 1
            return
        done = {tp.partition: tp.offset for tp in answer or [] if tp.error is None}
        if len(done) == len(offsets):
            self.ledger.ack(self.group, done)
        else:
            self.ledger.failed_commits += 1


Member = AioMember | ConfluentMember


async def run_soak(
    bootstrap: str,
    groups: int,
    members_per_group: int,
    seconds: float,
    partitions: int = 8,
    produce_rate: int = 200,
    churn_interval: float = 0.25,
    settle_timeout: float = 90.0,
    seed: int = 1,
) -> Report:
    rng = random.Random(seed)
    topic = "groups-soak"
    _create_topic(bootstrap, topic, partitions)
    ledger = Ledger()
    report = Report(groups, members_per_group, seconds, partitions)
    group_ids = [f"soak-{i:03d}" for i in range(groups)]
    live: dict[str, list[Member]] = {g: [] for g in group_ids}
    finished: list[Member] = []
    serial = 0

    def new_member(group: str) -> Member:
        nonlocal serial
        serial += 1
        index = group_ids.index(group)
        name = f"{group}-m{serial}"
        member: Member
        if index % 5 == 4:
            protocol = "consumer" if (index // 5) % 2 else "classic"
            member = ConfluentMember(bootstrap, group, topic, ledger, name, protocol)
        else:
            member = AioMember(bootstrap, group, topic, ledger, name)
        member.start()
        report.members_started += 1
        return member

    async def leave(group: str, member: Member) -> None:
        live[group].remove(member)
        await member.stop()
        finished.append(member)
        report.members_left += 1

    stop_producing = threading.Event()
    producer = threading.Thread(
        target=_produce,
        args=(bootstrap, topic, partitions, produce_rate, stop_producing, report),
        daemon=True,
    )
    producer.start()
    for group in group_ids:
        for _ in range(members_per_group):
            live[group].append(new_member(group))
        await asyncio.sleep(0.05)

    deadline = time.monotonic() + seconds
    leaving: set[asyncio.Task[None]] = set()
    while time.monotonic() < deadline:
        await asyncio.sleep(churn_interval)
        group = rng.choice(group_ids)
        if live[group] and (len(live[group]) >= members_per_group or rng.random() < 0.5):
            member = rng.choice(live[group])
            task = asyncio.get_running_loop().create_task(leave(group, member))
            leaving.add(task)
            task.add_done_callback(leaving.discard)
        else:
            live[group].append(new_member(group))
    await asyncio.gather(*leaving)
    stop_producing.set()
    producer.join(30)
    for group in group_ids:
        if not live[group]:
            live[group].append(new_member(group))

    started = time.monotonic()
    end_offsets = _end_offsets(bootstrap, topic, partitions)
    pending = set(group_ids)
    steady_since: dict[str, float] = {}
    while pending and time.monotonic() - started < settle_timeout:
        await asyncio.sleep(0.2)
        for group in list(pending):
            members = live[group]
            splits = [m.assignment() for m in members]
            read = all(
                max(ledger.consumed.get((group, p), {-1})) + 1 >= end_offsets[p] for p in range(partitions)
            )
            if _is_split(splits, partitions) and read:
                steady_since.setdefault(group, time.monotonic())
                if time.monotonic() - steady_since[group] >= 1.0:
                    pending.discard(group)
            else:
                steady_since.pop(group, None)
    report.settle_seconds = round(time.monotonic() - started, 2)
    report.unsettled_groups = sorted(f"{g}: {[sorted(m.assignment()) for m in live[g]]}" for g in pending)
    await asyncio.gather(*(leave(g, m) for g in group_ids for m in list(live[g])))

    committed = _committed_offsets(bootstrap, group_ids, topic, partitions)
    for (group, partition), acked in sorted(ledger.acked.items()):
        broker = committed.get((group, partition), -1)
        if broker != acked:
            report.offset_mismatches.append(f"{group}/{partition}: broker {broker}, acknowledged {acked}")
    for (group, partition), broker in sorted(committed.items()):
        seen = ledger.consumed.get((group, partition), set())
        missing = [o for o in range(broker) if o not in seen]
        if missing:
            report.skipped.append(
                f"{group}/{partition}: {len(missing)} offsets never consumed, first {missing[0]}"
            )
    report.commits_acked = ledger.commits
    report.commits_failed = ledger.failed_commits
    report.records_consumed = sum(len(s) for s in ledger.consumed.values())
    report.member_errors = [e for m in finished for e in m.errors]
    return report


def _is_split(assignments: list[frozenset[int]], partitions: int) -> bool:
    seen: set[int] = set()
    for assigned in assignments:
        if seen & assigned:
            return False
        seen |= assigned
    return seen == set(range(partitions))


def _create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        future.result(30)


def _produce(
    bootstrap: str, topic: str, partitions: int, rate: int, stop: threading.Event, report: Report
) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    sent = 0
    started = time.monotonic()
    while not stop.is_set():
        due = int((time.monotonic() - started) * rate)
        while sent < due:
            producer.produce(topic, value=b"%d" % sent, partition=sent % partitions)
            sent += 1
        producer.poll(0)
        time.sleep(0.02)
    producer.flush(30)
    report.produced = sent


def _end_offsets(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "soak-watermarks"})
    try:
        return {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in range(partitions)
        }
    finally:
        consumer.close()


def _committed_offsets(
    bootstrap: str, groups: list[str], topic: str, partitions: int
) -> dict[tuple[str, int], int]:
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    committed: dict[tuple[str, int], int] = {}
    for group in groups:
        request = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in range(partitions)])
        answer = admin.list_consumer_group_offsets([request])[group].result(30)
        for tp in answer.topic_partitions:
            if tp.offset >= 0:
                committed[(group, tp.partition)] = tp.offset
    return committed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--groups", type=int, default=50)
    parser.add_argument("--members", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=300)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--rate", type=int, default=200, help="messages produced per second")
    parser.add_argument("--churn", type=float, default=0.25, help="seconds between membership changes")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--write", type=Path, help="write the report as JSON here")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)  # the clients warn at every rebalance: that is the point
    with tempfile.TemporaryDirectory() as data:
        broker = BrokerProcess(Path(data) / "data", BROKER_OVERRIDES).start()
        wall = time.monotonic()
        try:
            report = asyncio.run(
                run_soak(
                    broker.bootstrap,
                    args.groups,
                    args.members,
                    args.seconds,
                    args.partitions,
                    args.rate,
                    args.churn,
                    seed=args.seed,
                )
            )
        finally:
            broker.stop()
    result = {**asdict(report), "ok": report.ok, "wall_seconds": round(time.monotonic() - wall, 1)}
    text = json.dumps(result, indent=2)
    print(text)
    if args.write:
        args.write.parent.mkdir(parents=True, exist_ok=True)
        args.write.write_text(text + "\n")
    sys.exit(0 if report.ok else 1)


if __name__ == "__main__":
    main()
