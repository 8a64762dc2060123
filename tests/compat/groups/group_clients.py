"""Group members of each Python client, driven in background threads, that report their assignment.

Each member subscribes to one topic, polls continuously (so it rejoins as soon as its coordinator asks),
records what it consumed, and can commit, leave (close) or be abandoned. `wait_for_split` waits until a
set of members holds a disjoint share covering every partition, steadily.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

#: Broker settings that keep group tests fast: short sessions, a short initial rebalance delay.
#:
#: The delay is not 0 because of a kafka-python 3.0.x bug (3.0.4 to 3.0.12, the newest): when a fresh
#: group forms before the leader's client has the subscribed topic's metadata, the leader assigns
#: nothing, then rejoins as soon as the metadata arrives (its "assignment snapshot" differs from the
#: metadata). In that rejoin, if `poll()`'s timer expires after the leader computed the new assignment
#: (which refreshes the snapshot) but before SyncGroup's answer is handled, the finished join task is
#: never collected: `need_rejoin()` is False from then on, the member stays "rebalancing" with
#: heartbeats off, and the broker expires its session 2 s later. Apache Kafka's default delay (3 s)
#: hides this by letting the metadata arrive before the first generation forms; 300 ms does the
#: same here (measured: 0 such rejoins in 20 groups under full CPU load, against most groups with 0).
GROUP_BROKER_OVERRIDES = {
    "group.initial.rebalance.delay.ms": "300",
    "group.min.session.timeout.ms": "500",
    "offsets.topic.num.partitions": "5",
    "num.partitions": "6",
    "group.consumer.session.timeout.ms": "3000",
    "group.consumer.min.session.timeout.ms": "1000",
    "group.consumer.heartbeat.interval.ms": "300",
    "group.consumer.min.heartbeat.interval.ms": "100",
}
SESSION_TIMEOUT_MS = 2000
HEARTBEAT_INTERVAL_MS = 300
CLIENTS = ("kafka-python", "confluent", "confluent-consumer", "aiokafka")


class Member:
    """A consumer in a thread; subclasses open, poll, report the assignment, commit and close it."""

    def __init__(self, bootstrap: str, group: str, topic: str, name: str, **options: Any) -> None:
        self.bootstrap = bootstrap
        self.group = group
        self.topic = topic
        self.name = name
        self.options = options
        self.consumed: list[tuple[int, int, bytes | None]] = []  # (partition, offset, value)
        self.assigned: frozenset[int] = frozenset()
        self.errors: list[str] = []
        self.commit_every = int(options.pop("commit_every", 0))
        self.committed: dict[int, int] = {}
        #: Commits refused because the group rebalanced without this member (not errors: see `_run`).
        self.commit_failures: list[str] = []
        #: Next offset to process, per partition: what a commit stores (never past what was handled).
        self.positions: dict[int, int] = {}
        #: Partitions revoked from this member, one entry per rebalance callback that revoked any.
        self.revoked: list[frozenset[int]] = []
        self._stop = threading.Event()
        self._leave = True
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> Member:
        self._thread.start()
        return self

    def assignment(self) -> frozenset[int]:
        with self._lock:
            return self.assigned

    def stop(self, leave: bool = True, timeout: float = 30) -> None:
        """Close the consumer (sending LeaveGroup when `leave`, as a normal close does)."""
        self._leave = leave
        self._stop.set()
        self._thread.join(timeout)

    def _run(self) -> None:
        try:
            self._open()
            since_commit = 0
            while not self._stop.is_set():
                records = self._poll_once()
                for partition, offset, value in records:
                    self.consumed.append((partition, offset, value))
                    self.positions[partition] = offset + 1
                    since_commit += 1
                if self.commit_every and since_commit >= self.commit_every:
                    self._commit_unless_rebalanced()
                    since_commit = 0
                with self._lock:
                    self.assigned = frozenset(self._assignment())
            self._close(self._leave)
        except Exception as error:  # reported to the test
            self.errors.append(repr(error))

    def _commit_unless_rebalanced(self) -> None:
        """Commit; a commit the coordinator refuses because the group moved on without this member (its
        session expired, say while the broker restarted) is noted and the member carries on, as Kafka's
        documentation tells applications to: its next poll rejoins."""
        try:
            self._commit()
        except Exception as error:
            if not self._refused_for_rebalance(error):
                raise
            self.commit_failures.append(repr(error))

    def _refused_for_rebalance(self, error: Exception) -> bool:
        raise NotImplementedError

    def _open(self) -> None:
        raise NotImplementedError

    def _poll_once(self) -> list[tuple[int, int, bytes | None]]:
        raise NotImplementedError

    def _assignment(self) -> set[int]:
        raise NotImplementedError

    def _commit(self) -> None:
        raise NotImplementedError

    def _close(self, leave: bool) -> None:
        raise NotImplementedError


class KafkaPythonMember(Member):
    def _open(self) -> None:
        from kafka import ConsumerRebalanceListener, KafkaConsumer

        member = self

        class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
            def on_partitions_revoked(self, revoked: Any) -> None:
                if revoked:
                    member.revoked.append(frozenset(tp.partition for tp in revoked))
                for tp in revoked:  # never commit a stale position if it comes back
                    member.positions.pop(tp.partition, None)

            def on_partitions_assigned(self, assigned: Any) -> None:
                pass

        settings: dict[str, Any] = {
            "session_timeout_ms": SESSION_TIMEOUT_MS,
            "heartbeat_interval_ms": HEARTBEAT_INTERVAL_MS,
            **self.options,
        }
        self.consumer = KafkaConsumer(
            bootstrap_servers=self.bootstrap,
            group_id=self.group,
            client_id=self.name,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            **settings,
        )
        self.consumer.subscribe([self.topic], listener=Listener())

    def _poll_once(self) -> list[tuple[int, int, bytes | None]]:
        batches = self.consumer.poll(timeout_ms=100)
        return [(m.partition, m.offset, m.value) for messages in batches.values() for m in messages]

    def _assignment(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}

    def _commit(self) -> None:
        from kafka import TopicPartition
        from kafka.structs import OffsetAndMetadata

        offsets = {
            TopicPartition(self.topic, p): OffsetAndMetadata(o, "", -1) for p, o in self.positions.items()
        }
        self.consumer.commit(offsets)
        self.committed.update(self.positions)

    def _refused_for_rebalance(self, error: Exception) -> bool:
        from kafka.errors import CommitFailedError

        return isinstance(error, CommitFailedError)

    def _close(self, leave: bool) -> None:
        self.consumer.close(autocommit=False)


class ConfluentMember(Member):
    protocol = "classic"

    def _open(self) -> None:
        from confluent_kafka import Consumer

        config: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap,
            "group.id": self.group,
            "client.id": self.name,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
        if self.protocol == "consumer":
            config["group.protocol"] = "consumer"
        else:
            config["session.timeout.ms"] = SESSION_TIMEOUT_MS
            config["heartbeat.interval.ms"] = HEARTBEAT_INTERVAL_MS
        config.update(self.options)
        self.consumer = Consumer(config)

        def on_revoke(consumer: Any, partitions: Any) -> None:
            if partitions:
                self.revoked.append(frozenset(tp.partition for tp in partitions))
            for tp in partitions:  # never commit a stale position if it comes back
                self.positions.pop(tp.partition, None)

        self.consumer.subscribe([self.topic], on_revoke=on_revoke)

    def _poll_once(self) -> list[tuple[int, int, bytes | None]]:
        message = self.consumer.poll(0.1)
        if message is None or message.error() is not None:
            return []
        return [(message.partition(), message.offset(), message.value())]

    def _assignment(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}

    def _commit(self) -> None:
        from confluent_kafka import TopicPartition

        offsets = [TopicPartition(self.topic, p, o) for p, o in self.positions.items()]
        for tp in self.consumer.commit(offsets=offsets, asynchronous=False) or []:
            if tp.error is None and tp.offset >= 0:
                self.committed[tp.partition] = tp.offset

    def _refused_for_rebalance(self, error: Exception) -> bool:
        from confluent_kafka import KafkaError, KafkaException

        codes = {
            KafkaError.UNKNOWN_MEMBER_ID,
            KafkaError.ILLEGAL_GENERATION,
            KafkaError.REBALANCE_IN_PROGRESS,
            KafkaError.STALE_MEMBER_EPOCH,
        }
        return isinstance(error, KafkaException) and error.args[0].code() in codes

    def _close(self, leave: bool) -> None:
        self.consumer.close()


class ConfluentConsumerProtocolMember(ConfluentMember):
    protocol = "consumer"


class AiokafkaMember(Member):
    def _open(self) -> None:
        from aiokafka import AIOKafkaConsumer

        self.loop = asyncio.new_event_loop()

        async def create() -> Any:
            settings: dict[str, Any] = {
                "session_timeout_ms": SESSION_TIMEOUT_MS,
                "heartbeat_interval_ms": HEARTBEAT_INTERVAL_MS,
                **self.options,
            }
            consumer = AIOKafkaConsumer(
                self.topic,
                bootstrap_servers=self.bootstrap,
                group_id=self.group,
                client_id=self.name,
                auto_offset_reset="earliest",
                enable_auto_commit=False,
                **settings,
            )
            await consumer.start()
            return consumer

        self.consumer = self.loop.run_until_complete(create())

    def _poll_once(self) -> list[tuple[int, int, bytes | None]]:
        batches = self.loop.run_until_complete(self.consumer.getmany(timeout_ms=100))
        return [(m.partition, m.offset, m.value) for messages in batches.values() for m in messages]

    def _assignment(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}

    def _commit(self) -> None:
        from aiokafka.structs import TopicPartition

        offsets = {TopicPartition(self.topic, p): o for p, o in self.positions.items()}
        self.loop.run_until_complete(self.consumer.commit(offsets))
        self.committed.update(self.positions)

    def _refused_for_rebalance(self, error: Exception) -> bool:
        from aiokafka.errors import CommitFailedError

        return isinstance(error, CommitFailedError)

    def _close(self, leave: bool) -> None:
        self.loop.run_until_complete(self.consumer.stop())
        self.loop.close()


MEMBER_CLASSES: dict[str, type[Member]] = {
    "kafka-python": KafkaPythonMember,
    "confluent": ConfluentMember,
    "confluent-consumer": ConfluentConsumerProtocolMember,
    "aiokafka": AiokafkaMember,
}


def member_errors(members: Sequence[Member]) -> list[str]:
    return [error for member in members for error in member.errors]


def start_members(
    client: str, bootstrap: str, group: str, topic: str, count: int, **options: Any
) -> list[Member]:
    kind = MEMBER_CLASSES[client]
    return [kind(bootstrap, group, topic, f"{client}-{group}-{i}", **options).start() for i in range(count)]


def wait_for_split(
    assignments: Sequence[Callable[[], frozenset[int]]],
    partitions: int,
    timeout: float = 30,
    steady: float = 0.5,
    errors: Callable[[], list[str]] | None = None,
) -> list[frozenset[int]]:
    """Wait until the members' assignments are disjoint, non-empty, cover range(partitions), and stay
    so for `steady` seconds; returns them. Fails with the last assignments seen."""
    deadline = time.monotonic() + timeout
    since: float | None = None
    current: list[frozenset[int]] = []
    while time.monotonic() < deadline:
        current = [get() for get in assignments]
        if errors is not None and errors():
            raise AssertionError(f"member errors: {errors()}")
        if is_split(current, partitions):
            if since is None:
                since = time.monotonic()
            elif time.monotonic() - since >= steady:
                return current
        else:
            since = None
        time.sleep(0.05)
    raise AssertionError(f"no steady split of {partitions} partitions within {timeout}s: {current}")


def is_split(assignments: Sequence[frozenset[int]], partitions: int) -> bool:
    seen: set[int] = set()
    for assigned in assignments:
        if not assigned or seen & assigned:
            return False
        seen |= assigned
    return seen == set(range(partitions))


def produce(bootstrap: str, topic: str, count: int, partitions: int) -> None:
    """`count` messages spread round-robin over the partitions, values b"<n>"."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(count):
        producer.produce(topic, value=b"%d" % i, partition=i % partitions)
    assert producer.flush(30) == 0


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, partitions, 1)])
    for future in futures.values():
        future.result(30)


def committed_offsets(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in range(partitions)])
    answer = admin.list_consumer_group_offsets([request])[group].result(30)
    return {tp.partition: tp.offset for tp in answer.topic_partitions if tp.offset >= 0}
