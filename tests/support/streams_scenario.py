"""A Kafka Streams application under exactly_once_v2 through a broker crash and an instance crash.

Two instances of `WindowedCount` (tests/compat/streams; tests/support/streams_app.py) count the input
topic's values in 10-second event-time windows behind a repartition, with a windowed store and its
changelog, their internal topics at RF=3. The input is produced at a steady pace (its event time
following it) from before the first fault until after the last: meanwhile the broker that coordinates
the application's group is SIGKILLed and started again, then one instance is SIGKILLed (mid-transaction:
the input never stops) and started again on its state directory. Once the output holds every count,
both instances close and the output is read from the start with `isolation.level=read_committed`.

What exactly once promises for this count: caching is off, so each input record changes one count by
one, in one transaction with its changelog record, its repartition record and its input offset. The
committed output of each (value, window) is therefore exactly 1, 2, ..., n in order, n the number of
input records of that value in that window: a missing number is a lost record (or an aborted update
shown), a repeated one a record counted twice (a zombie's transaction committed, or a restore from
uncommitted changelog records), a last number other than n a wrong final count.

`run` works on any three brokers given as `Brokers`: odradek's cluster in the test, Apache Kafka 3.9 in
tests/support/streams_reference.py (the check of the scenario itself).
"""

from __future__ import annotations

import concurrent.futures
import random
import threading
import time
import uuid
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from tests.support import streams_app, transaction_snapshot

WINDOW_MS = 10_000
#: The values counted (the repartition's keys) and the windows the input's timestamps span.
VALUES = tuple(f"page-{n}" for n in range(8))
#: Input records a second, produced until the faults are over: each fault hits an application at work,
#: with input arriving, and each step after one has new input to commit. Event time follows the count.
RATE = 100
PARTITIONS = 4
REPLICATION = 3
#: Each step (the first output, progress after a fault, the last count) must come within this.
STEP_TIMEOUT_S = 120.0


class Brokers(Protocol):
    """Three brokers a test can crash and start again, by node id."""

    @property
    def bootstrap(self) -> str: ...

    def kill(self, node: int) -> None:
        """SIGKILL."""

    def restart(self, node: int) -> None:
        """Start a killed broker again on its data."""


@dataclass(frozen=True)
class InputRecord:
    key: str
    value: str
    timestamp_ms: int


WindowedKey = tuple[str, int]  # (value, window start in ms)


def input_record(n: int, base_ms: int, chooser: random.Random) -> InputRecord:
    """The `n`th input record: its value drawn by `chooser`, its timestamp 1/RATE s after the last's."""
    return InputRecord(f"event-{n}", chooser.choice(VALUES), base_ms + n * 1000 // RATE)


def expected_counts(records: Sequence[InputRecord]) -> Counter[WindowedKey]:
    """The final count of each (value, window): tumbling windows aligned to the epoch, as Streams'."""
    return Counter((r.value, r.timestamp_ms - r.timestamp_ms % WINDOW_MS) for r in records)


def exactly_once_problems(
    expected: Mapping[WindowedKey, int], updates: Mapping[WindowedKey, Sequence[int]]
) -> list[str]:
    """What differs from exactly once: each (value, window)'s committed updates must be 1..n once each."""
    problems = []
    for key in sorted(set(expected) | set(updates)):
        got = list(updates.get(key, []))
        want = list(range(1, expected.get(key, 0) + 1))
        if got == want:
            continue
        repeated = sorted(c for c, times in Counter(got).items() if times > 1)
        missing = sorted(set(want) - set(got))
        where = f"{key[0]}@{key[1]}"
        problems.append(
            f"{where}: expected the counts 1..{len(want)} once each, got {len(got)} updates ending at "
            f"{got[-1] if got else None}; repeated {repeated[:10]}, missing {missing[:10]}"
            + ("" if repeated or missing else f", out of order: {got[:40]}")
        )
    return problems


def run(brokers: Brokers, work: Path) -> None:
    """The whole scenario; an AssertionError says what broke, with a timeline and the instances' logs."""
    from confluent_kafka.admin import AdminClient, NewTopic

    classpath = streams_app.build()
    work.mkdir(parents=True, exist_ok=True)
    tag = uuid.uuid4().hex[:8]
    application_id = f"windowed-count-{tag}"
    topics = (f"streams-input-{tag}", f"streams-output-{tag}")
    admin = AdminClient({"bootstrap.servers": brokers.bootstrap})
    created = admin.create_topics([NewTopic(t, PARTITIONS, REPLICATION) for t in topics])
    for future in created.values():
        future.result(60)
    instances = [
        streams_app.Instance(name, classpath, brokers.bootstrap, application_id, work, topics, WINDOW_MS)
        for name in ("a", "b")
    ]
    producer = PacedProducer(brokers.bootstrap, topics[0], int(time.time() * 1000))
    output = OutputReader(brokers.bootstrap, topics[1])
    steps = _Steps(brokers.bootstrap, admin, application_id, topics, output, instances, producer)
    killed: list[int] = []
    try:
        for instance in instances:
            instance.start()
        producer.start()
        steps.until_every_input_partition_committed("the application at work")
        victim = _group_coordinator(admin, application_id)
        brokers.kill(victim)
        killed.append(victim)
        steps.note(f"broker {victim} (the group's coordinator) SIGKILLed")
        steps.until_every_input_partition_committed(f"progress with broker {victim} down")
        brokers.restart(victim)
        killed.remove(victim)
        steps.note(f"broker {victim} started again")
        steps.until_every_input_partition_committed(f"progress with broker {victim} back")
        instances[0].kill()
        steps.note("instance a SIGKILLed")
        # every input partition moving again means b took over a's tasks
        steps.until_every_input_partition_committed("instance b doing instance a's work")
        instances[0].start()
        steps.note("instance a started again")
        steps.until_every_input_partition_committed("progress with instance a back")
        producer.finish()
        steps.until(lambda: producer.done, "the whole input produced")
        expected = expected_counts(producer.records)
        steps.until(lambda: output.covers(expected), "every (value, window) at its final count")
        for instance in instances:
            code = instance.stop()
            assert code in (0, 143), f"instance {instance.name} exited {code}:\n{instance.log_text()}"
        steps.note("both instances closed")
    finally:
        producer.stop()
        output.close()
        for instance in instances:
            instance.kill()
        for node in killed:
            brokers.restart(node)
    assert producer.errors == [], f"the input's producer failed: {producer.errors[:5]}"
    produced = Counter(producer.records)
    stored = Counter(read_input(brokers.bootstrap, topics[0]))
    assert stored == produced, (
        f"the input topic lost or repeated records: {sum((produced - stored).values())} missing, "
        f"{sum((stored - produced).values())} extra"
    )
    problems = exactly_once_problems(expected, read_committed_output(brokers.bootstrap, topics[1]))
    assert not problems, (
        f"{len(problems)} of {len(expected)} windowed counts are not exactly once:\n"
        + "\n".join(problems[:20])
        + f"\n{steps.timeline()}\n{steps.brokers_state()}"
        + "".join(f"\n--- instance {i.name}:\n{i.log_text()}" for i in instances)
    )
    _check_internal_topics(admin, application_id)
    print(steps.timeline())  # shown by pytest -rP, and by the reference run


class _Steps:
    """Waits on the application (failing at once if an instance dies by itself), and keeps a timeline."""

    def __init__(
        self,
        bootstrap: str,
        admin: Any,
        application_id: str,
        topics: tuple[str, str],
        output: OutputReader,
        instances: Sequence[streams_app.Instance],
        producer: PacedProducer,
    ) -> None:
        self.bootstrap = bootstrap
        self.admin = admin
        self.application_id = application_id
        self.input_topic = topics[0]
        self.topics = [*topics, *internal_topics(application_id)]
        self.output = output
        self.instances = instances
        self.producer = producer
        self.started = time.monotonic()
        self.events: list[str] = []

    def note(self, event: str) -> None:
        self.events.append(
            f"{time.monotonic() - self.started:6.1f}s {event} ({self.producer.sent} produced, "
            f"{self.output.reflected()} counted)"
        )

    def timeline(self) -> str:
        return "the timeline:\n" + "\n".join(self.events)

    def brokers_state(self) -> str:
        return "what the brokers say:\n" + transaction_snapshot.snapshot(
            self.bootstrap, self.topics, (self.application_id, self.input_topic)
        )

    def until_every_input_partition_committed(self, what: str) -> None:
        """Until the application's group has committed, on every input partition, a later offset than
        it had at the call (each partition's task is at work, wherever it runs)."""
        before = _committed_offsets(self.admin, self.application_id, self.input_topic)

        def advanced() -> bool:
            now = _committed_offsets(self.admin, self.application_id, self.input_topic)
            return len(now) == PARTITIONS and all(now[p] > before.get(p, 0) for p in range(PARTITIONS))

        self.until(advanced, f"{what}: a new offset committed on every input partition")

    def until(self, condition: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + STEP_TIMEOUT_S
        while not condition():
            for instance in self.instances:
                code = instance.exited()
                if code is not None:
                    raise AssertionError(
                        f"instance {instance.name} exited {code} waiting for {what}\n{self.timeline()}\n"
                        f"{instance.log_text()}"
                    )
            if time.monotonic() > deadline:
                logs = "".join(f"\n--- instance {i.name}:\n{i.log_text()}" for i in self.instances)
                raise AssertionError(
                    f"timed out after {STEP_TIMEOUT_S}s waiting for {what}: "
                    f"{self.output.reflected()} input records counted, {self.producer.sent} produced; the "
                    f"output reader's latest errors: {list(self.output.errors)}\n"
                    f"{self.timeline()}\n{self.brokers_state()}{logs}"
                )
            self.output.poll(0.5)
        self.note(what)


def internal_topics(application_id: str) -> tuple[str, str]:
    """The repartition topic and the store's changelog, as Streams names them."""
    return f"{application_id}-by-value-repartition", f"{application_id}-counts-changelog"


def _committed_offsets(admin: Any, group: str, topic: str) -> dict[int, int]:
    """The group's committed offsets on `topic` ({} while its coordinator cannot say)."""
    from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException, TopicPartition

    request = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in range(PARTITIONS)])
    try:
        result = admin.list_consumer_group_offsets([request])[group].result(10)
    except (KafkaException, concurrent.futures.TimeoutError):
        return {}
    return {tp.partition: tp.offset for tp in result.topic_partitions if tp.error is None}


def _group_coordinator(admin: Any, group: str) -> int:
    description = admin.describe_consumer_groups([group])[group].result(30)
    return int(description.coordinator.id)


def _check_internal_topics(admin: Any, application_id: str) -> None:
    """The repartition topic and the changelog exist, every partition at RF=3."""
    metadata = admin.list_topics(timeout=30)
    internal = {name: t for name, t in metadata.topics.items() if name.startswith(application_id)}
    assert sorted(internal) == sorted(internal_topics(application_id)), f"internal topics: {sorted(internal)}"
    for name, topic in internal.items():
        factors = {len(p.replicas) for p in topic.partitions.values()}
        assert factors == {REPLICATION}, f"{name}: replication factors {factors}"


class PacedProducer:
    """Produces input records at RATE a second from a thread until `finish`: idempotent, acks=all."""

    def __init__(self, bootstrap: str, topic: str, base_ms: int, seed: int = 26) -> None:
        from confluent_kafka import Producer

        self.topic = topic
        self.base_ms = base_ms
        self.chooser = random.Random(seed)
        self.producer = Producer(
            {"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all", "linger.ms": 5}
        )
        #: Every record produced, in order (complete once `done`).
        self.records: list[InputRecord] = []
        self.errors: list[str] = []
        self.done = False
        self._finishing = threading.Event()
        self._thread = threading.Thread(target=self._produce, name="streams-input", daemon=True)

    @property
    def sent(self) -> int:
        return len(self.records)

    def start(self) -> None:
        self._thread.start()

    def finish(self) -> None:
        """No more records: the faults are over (what was produced is flushed)."""
        self._finishing.set()

    def stop(self) -> None:
        self._finishing.set()
        if self._thread.is_alive():
            self._thread.join(180)

    def _delivered(self, error: Any, message: Any) -> None:
        if error is not None:
            self.errors.append(str(error))

    def _produce(self) -> None:
        per_tick = max(1, RATE // 10)
        started = time.monotonic()
        while not self._finishing.is_set():
            for _ in range(per_tick):
                record = input_record(len(self.records), self.base_ms, self.chooser)
                self.producer.produce(
                    self.topic,
                    key=record.key.encode(),
                    value=record.value.encode(),
                    timestamp=record.timestamp_ms,
                    on_delivery=self._delivered,
                )
                self.records.append(record)
            self.producer.poll(0)
            ahead = started + self.sent / RATE - time.monotonic()
            if ahead > 0:
                self._finishing.wait(ahead)
        remaining = self.producer.flush(120)
        if remaining:
            self.errors.append(f"{remaining} records never delivered")
        self.done = True


class OutputReader:
    """The output topic read `read_committed` from its start: each (value, window)'s updates in order."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.consumer = _consumer(bootstrap, topic, {"isolation.level": "read_committed"})
        self.updates: dict[WindowedKey, list[int]] = defaultdict(list)
        #: The latest errors the consumer reported (a broker unreachable...), for a failure's message.
        self.errors: deque[str] = deque(maxlen=10)

    def poll(self, timeout: float) -> None:
        for message in self.consumer.consume(500, timeout):
            error = message.error()
            if error is None:
                _add_update(self.updates, message)
            else:
                _check_position_kept(error)
                self.errors.append(str(error))

    def reflected(self) -> int:
        """How many input records the committed counts reflect (each window's latest count, summed)."""
        return sum(counts[-1] for counts in self.updates.values())

    def covers(self, expected: Mapping[WindowedKey, int]) -> bool:
        return all(self.updates.get(k, [0])[-1] >= n for k, n in expected.items())

    def close(self) -> None:
        self.consumer.close()


def read_committed_output(bootstrap: str, topic: str) -> dict[WindowedKey, list[int]]:
    updates: dict[WindowedKey, list[int]] = defaultdict(list)
    for message in _read_to_end(bootstrap, topic, {"isolation.level": "read_committed"}):
        _add_update(updates, message)
    return updates


def read_input(bootstrap: str, topic: str) -> list[InputRecord]:
    return [
        InputRecord(m.key().decode(), m.value().decode(), m.timestamp()[1])
        for m in _read_to_end(bootstrap, topic, {})
    ]


def _add_update(updates: dict[WindowedKey, list[int]], message: Any) -> None:
    value, start = message.key().decode().rsplit("@", 1)
    updates[(value, int(start))].append(int(message.value().decode()))


def _consumer(bootstrap: str, topic: str, settings: Mapping[str, object]) -> Any:
    """A reader of every partition of `topic` from its start. A position the brokers refuse (offset out
    of range) is an error, never a silent jump to the end or back to the start, which would hide what
    follows or count it twice (`_check_position_kept`)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"streams-check-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "auto.offset.reset": "error",
            **settings,
        }
    )
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    return consumer


def _check_position_kept(error: Any) -> None:
    from confluent_kafka import KafkaError

    if error.code() == KafkaError._AUTO_OFFSET_RESET:
        raise AssertionError(f"a broker refused a reader's position (nothing of a log may go): {error}")


def _read_to_end(bootstrap: str, topic: str, settings: Mapping[str, object]) -> list[Any]:
    """Every record of `topic`, until each partition has reported its end (nothing writes to it now)."""
    from confluent_kafka import KafkaError

    consumer = _consumer(bootstrap, topic, {**settings, "enable.partition.eof": True})
    messages: list[Any] = []
    ended: set[int] = set()
    deadline = time.monotonic() + STEP_TIMEOUT_S
    try:
        while len(ended) < PARTITIONS:
            assert time.monotonic() < deadline, f"{topic}: partitions {sorted(ended)} read to their end only"
            for message in consumer.consume(500, 1.0):
                error = message.error()
                if error is None:
                    messages.append(message)
                elif error.code() == KafkaError._PARTITION_EOF:
                    ended.add(message.partition())
                else:
                    _check_position_kept(error)
    finally:
        consumer.close()
    return messages
