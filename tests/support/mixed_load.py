"""Load on a mixed cluster (tests/support/mixed_cluster.py) from both client libraries at once, and the
checks issue #27 asks of it: Apache Kafka's Java clients (tests/compat/java's `odradek.compat.load.
LoadClient`, kafka-clients 3.9, one JVM for its three roles) and librdkafka's (confluent-kafka, threads
here), each an idempotent acks=all producer, a transactional producer committing every
`PER_TRANSACTION` records with every third transaction aborted on purpose, and a read_committed
consumer in a group of its own committing after every poll.

What each client saw is kept as an `Outcome` (the Java roles' output files are parsed into the same),
and `check` compares it with what a fresh read_committed reader finds at the end: every acknowledged
idempotent record exactly once, in its producer's order; every committed transactional record exactly
once and no aborted one; what a group read at an offset still there; the group's committed offsets
never going back.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from tests.support import java_suite
from tests.support.interop import wait_until
from tests.support.jvm_process import JvmProcess
from tests.support.mixed_clients import ProducerUnderLoad
from tests.support.mixed_cluster import PATIENCE_S, MixedCluster
from tests.support.requirements import require_executable

#: Records a transaction holds; every third transaction is aborted (as LoadClient.java).
PER_TRANSACTION = 10
#: Records a second each producer sends at most: the machine has two cores for brokers and clients.
RATE = 100
#: The kafka-clients line of the Java load (3.9: the line of the Kafka brokers beside odradek's).
JAVA_LINE = "kafka-3.9"
LOAD_CLASS = "odradek.compat.load.LoadClient"


@dataclass
class Outcome:
    """What one client was told: idempotent acknowledgements (value -> partition), transactional
    records committed or aborted (value -> partition), what a group member read at which offset and
    the offsets it committed, in order; and any errors it reported."""

    acknowledged: dict[str, int] = field(default_factory=dict)
    committed: dict[str, int] = field(default_factory=dict)
    aborted: dict[str, int] = field(default_factory=dict)
    read: list[tuple[int, int, str]] = field(default_factory=list)
    group_commits: list[tuple[int, int]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def progress(self) -> int:
        return len(self.acknowledged) + len(self.committed) + len(self.aborted) + len(self.read)

    def add(self, line: str) -> None:
        """One line of LoadClient.java's output."""
        kind, _, rest = line.partition(" ")
        if kind == "ack":
            partition, _, value = rest.split(" ", 2)
            self.acknowledged[value] = int(partition)
        elif kind in ("commit", "abort"):
            partition, value = rest.split(" ", 1)
            (self.committed if kind == "commit" else self.aborted)[value] = int(partition)
        elif kind == "read":
            partition, offset, value = rest.split(" ", 2)
            self.read.append((int(partition), int(offset), value))
        elif kind == "committed":
            partition, offset = rest.split(" ")
            self.group_commits.append((int(partition), int(offset)))
        elif kind == "error":
            self.errors.append(rest)


def parse_outcome(lines: Iterable[str]) -> Outcome:
    outcome = Outcome()
    for line in lines:
        if line.strip():
            outcome.add(line.rstrip("\n"))
    return outcome


class JavaLoad:
    """The Java clients' three roles in one JVM, writing to `work`; `stop` ends them cleanly."""

    def __init__(
        self,
        work: Path,
        bootstrap: str,
        topics: tuple[str, str],
        partitions: int,
        transactional_id: str,
        group: str,
    ) -> None:
        idempotent_topic, transactional_topic = topics
        work.mkdir(parents=True, exist_ok=True)
        self.stop_file = work / "stop"
        self.outputs = {role: work / f"{role}.out" for role in ("idempotent", "transactional", "consume")}
        classpath = java_suite.build(JAVA_LINE)
        java = require_executable("java")
        roles = [
            [
                "idempotent",
                bootstrap,
                idempotent_topic,
                str(partitions),
                str(self.outputs["idempotent"]),
                "java",
                str(RATE),
            ],
            [
                "transactional",
                bootstrap,
                transactional_topic,
                str(partitions),
                str(self.outputs["transactional"]),
                "java-txn",
                str(RATE),
                transactional_id,
                str(PER_TRANSACTION),
            ],
            ["consume", bootstrap, transactional_topic, group, str(self.outputs["consume"])],
        ]
        arguments = [str(self.stop_file)]
        for role in roles:
            arguments += [*role, "+"]
        self.jvm = JvmProcess(
            "java-load",
            [java, *java_suite.JVM_OPTIONS, "-cp", classpath, LOAD_CLASS, *arguments[:-1]],
            work / "java-load.log",
        )

    def start(self) -> JavaLoad:
        self.jvm.start()
        return self

    def outcome(self, role: str) -> Outcome:
        """What the role wrote so far (a line still being written left out)."""
        path = self.outputs[role]
        text = path.read_text() if path.exists() else ""
        return parse_outcome(text[: text.rfind("\n") + 1].splitlines())

    def stop(self) -> dict[str, Outcome]:
        """The stop file, then the JVM's own exit (its producers flushed, its consumer closed)."""
        self.stop_file.touch()
        try:
            wait_until(lambda: self.jvm.exited() is not None, PATIENCE_S * 2, "the Java load's exit", 0.2)
        except AssertionError:
            self.jvm.kill()
            raise
        code = self.jvm.exited()
        assert code == 0, f"the Java load exited {code}: {self.jvm.log_path.read_text()[-3000:]}"
        self.jvm.process = None
        outcomes = {role: self.outcome(role) for role in self.outputs}
        for role in outcomes:
            assert self.outputs[role].read_text().endswith("done\n"), f"Java {role} did not finish"
        return outcomes


class TransactionalLoad:
    """librdkafka's transactional producer, from a thread: `PER_TRANSACTION` records round-robin over
    the partitions in each transaction, every third aborted on purpose."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, transactional_id: str, tag: str) -> None:
        from confluent_kafka import Producer

        self.topic = topic
        self.partitions = partitions
        self.tag = tag
        self.outcome = Outcome()
        self._producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "transactional.id": transactional_id,
                "transaction.timeout.ms": 120_000,
                "delivery.timeout.ms": 120_000,
                "linger.ms": 5,
            }
        )
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"txn-{tag}", daemon=True)

    def start(self) -> TransactionalLoad:
        self._producer.init_transactions(PATIENCE_S)
        self._thread.start()
        return self

    def _run(self) -> None:
        from confluent_kafka import KafkaException

        sent = 0
        transaction = 0
        while not self._stopping.is_set():
            abort = transaction % 3 == 2
            values: dict[str, int] = {}
            try:
                self._producer.begin_transaction()
                for _ in range(PER_TRANSACTION):
                    value = f"{self.tag}-{sent}"
                    partition = sent % self.partitions
                    self._producer.produce(self.topic, value=value.encode(), partition=partition)
                    values[value] = partition
                    sent += 1
                    self._producer.poll(0)
                    time.sleep(1 / RATE)
                if abort:
                    # delivered first: librdkafka sends EndTxn(abort) while its AddPartitionsToTxn is still
                    # being retried (CONCURRENT_TRANSACTIONS: the previous commit's markers in flight), and
                    # an abort in PrepareCommit is INVALID_TXN_STATE, fatal to it (Kafka 3.9's
                    # TransactionCoordinator.endTransaction answers so, as odradek's does)
                    self._producer.flush(PATIENCE_S)
                    self._producer.abort_transaction(PATIENCE_S)
                else:
                    self._commit()
            except KafkaException as failed:
                error = failed.args[0]
                self.outcome.errors.append(str(error))
                if not error.txn_requires_abort():
                    return  # fatal: the producer cannot go on
                abort = True
                try:
                    self._producer.abort_transaction(PATIENCE_S)
                except KafkaException as unabortable:
                    self.outcome.errors.append(f"abort: {unabortable.args[0]}")
                    return  # what these records became is unknown: they are checked neither way
            (self.outcome.aborted if abort else self.outcome.committed).update(values)
            transaction += 1

    def _commit(self) -> None:
        """A commit that timed out or failed retriably is asked again: its outcome is unknown till then."""
        from confluent_kafka import KafkaException

        while True:
            try:
                self._producer.commit_transaction(PATIENCE_S)
                return
            except KafkaException as failed:
                if not failed.args[0].retriable():
                    raise
                self.outcome.errors.append(f"commit again: {failed.args[0]}")

    def gave_up(self) -> bool:
        """Ended by itself (a fatal error), not asked to stop."""
        return not self._thread.is_alive() and not self._stopping.is_set()

    def stop(self) -> Outcome:
        self._stopping.set()
        self._thread.join(PATIENCE_S * 2)
        assert not self._thread.is_alive(), "librdkafka's transactional load did not end"
        return self.outcome


class GroupReader:
    """librdkafka's read_committed consumer in a group, from a thread, committing after every poll."""

    def __init__(self, bootstrap: str, topic: str, group: str) -> None:
        from confluent_kafka import Consumer

        self.outcome = Outcome()
        self._consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
            }
        )
        self._consumer.subscribe([topic])
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"group-{group}", daemon=True)

    def start(self) -> GroupReader:
        self._thread.start()
        return self

    def _run(self) -> None:
        from confluent_kafka import KafkaException, TopicPartition

        while not self._stopping.is_set():
            messages = self._consumer.consume(100, 0.2)
            positions: dict[int, int] = {}
            for message in messages:
                if message.error() is not None:
                    self.outcome.errors.append(str(message.error()))
                    continue
                offset = message.offset()
                self.outcome.read.append((message.partition(), offset, message.value().decode()))
                positions[message.partition()] = offset + 1
            if not positions:
                continue
            topic = messages[0].topic()
            try:
                self._consumer.commit(
                    offsets=[TopicPartition(topic, p, o) for p, o in positions.items()], asynchronous=False
                )
                self.outcome.group_commits += sorted(positions.items())
            except KafkaException as failed:
                # a rebalance or a coordinator moving: the next poll carries on from what was committed
                self.outcome.errors.append(f"commit: {failed.args[0]}")

    def stop(self) -> Outcome:
        self._stopping.set()
        self._thread.join(PATIENCE_S)
        self._consumer.close()
        return self.outcome


class CommittedOffsetsWatch:
    """A group's committed offsets, asked of the cluster twice a second from a thread (an answer that
    fails while a coordinator moves is skipped).

    Asked through a consumer that never joins the group (`committed`), not through AdminClient's
    list_consumer_group_offsets: librdkafka 2.16's admin client dereferences a null group when that
    answer is NOT_COORDINATOR and the process dies of SIGSEGV (confluentinc/librdkafka#5040), which a
    coordinator moving under it answers, from either kind as from Kafka."""

    def __init__(self, bootstrap: str, group: str, topic: str, partitions: int) -> None:
        self.bootstrap = bootstrap
        self.group = group
        self.topic = topic
        self.partitions = partitions
        self.seen: list[dict[int, int]] = []
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"offsets-{group}", daemon=True)

    def start(self) -> CommittedOffsetsWatch:
        self._thread.start()
        return self

    def _run(self) -> None:
        from confluent_kafka import Consumer, KafkaException, TopicPartition

        asker = Consumer(
            {"bootstrap.servers": self.bootstrap, "group.id": self.group, "enable.auto.commit": False}
        )
        asked = [TopicPartition(self.topic, p) for p in range(self.partitions)]
        try:
            while not self._stopping.wait(0.5):
                try:
                    answer = asker.committed(asked, timeout=10)
                except KafkaException:
                    continue
                self.seen.append(
                    {tp.partition: tp.offset for tp in answer if tp.error is None and tp.offset >= 0}
                )
        finally:
            asker.close()

    def stop(self) -> list[dict[int, int]]:
        self._stopping.set()
        self._thread.join(30)
        return self.seen


@dataclass
class MixedLoad:
    """Both libraries' producers and group readers on `topics` (idempotent, transactional)."""

    java: JavaLoad
    idempotent: ProducerUnderLoad
    transactional: TransactionalLoad
    reader: GroupReader
    watches: list[CommittedOffsetsWatch]

    @classmethod
    def start(
        cls, cluster: MixedCluster, work: Path, topics: tuple[str, str], partitions: int, ids: LoadIds
    ) -> MixedLoad:
        bootstrap = cluster.bootstrap()
        load = cls(
            java=JavaLoad(work, bootstrap, topics, partitions, ids.java_transactional_id, ids.java_group),
            idempotent=ProducerUnderLoad(bootstrap, topics[0], partitions, "rdkafka"),
            transactional=TransactionalLoad(
                bootstrap, topics[1], partitions, ids.rdkafka_transactional_id, "rdkafka-txn"
            ),
            reader=GroupReader(bootstrap, topics[1], ids.rdkafka_group),
            watches=[
                CommittedOffsetsWatch(bootstrap, group, topics[1], partitions)
                for group in (ids.java_group, ids.rdkafka_group)
            ],
        )
        load.java.start()
        load.idempotent.start()
        load.transactional.start()
        load.reader.start()
        for watch in load.watches:
            watch.start()
        return load

    def progress(self) -> dict[str, int]:
        """How far each client got: acknowledged, committed or aborted, read."""
        return {
            **{f"java-{role}": self.java.outcome(role).progress for role in self.java.outputs},
            "rdkafka-idempotent": self.idempotent.acknowledged.count,
            "rdkafka-transactional": self.transactional.outcome.progress,
            "rdkafka-consume": self.reader.outcome.progress,
        }

    def wait_progress(self, records: int, what: str) -> None:
        """Until every client has got `records` further than now (the cluster serves them all)."""
        start = self.progress()
        last: list[dict[str, int]] = []

        def moved() -> bool:
            gave_up = self.gave_up()
            assert not gave_up, f"{what}: a client gave up: {gave_up}"
            last.append(self.progress())
            return all(last[-1][k] >= start[k] + records for k in start)

        try:
            wait_until(moved, PATIENCE_S * 2, f"every client {records} records further {what}", 0.3)
        except AssertionError as stuck:
            raise AssertionError(f"{stuck}: from {start} to {last[-1:]}") from None

    def gave_up(self) -> list[str]:
        """The fatal errors of clients that stopped by themselves (their last word), to fail at once."""
        fatal = [e for r in self.java.outputs for e in self.java.outcome(r).errors if e.startswith("fatal")]
        if self.transactional.gave_up():
            fatal.append(f"librdkafka's transactional producer: {self.transactional.outcome.errors[-1:]}")
        return fatal

    def stop(self) -> LoadOutcomes:
        """Every client stopped (each even if another's stop failed), then what each was told."""
        try:
            transactional = self.transactional.stop()
        finally:
            try:
                acknowledged = self.idempotent.stop()
            finally:
                try:
                    reader = self.reader.stop()
                finally:
                    java = self.java.stop()
        rdkafka_idempotent = Outcome(errors=list(acknowledged.errors))
        for partition, values in acknowledged.values.items():
            rdkafka_idempotent.acknowledged.update({v.decode(): partition for v in values})
        return LoadOutcomes(
            idempotent={"java": java["idempotent"], "rdkafka": rdkafka_idempotent},
            transactional={"java-txn": java["transactional"], "rdkafka-txn": transactional},
            readers={"java": java["consume"], "rdkafka": reader},
            offsets_seen=[w.stop() for w in self.watches],
        )


@dataclass(frozen=True)
class LoadIds:
    """The transactional ids and groups the load uses (a test picks them to place their coordinators)."""

    java_transactional_id: str
    rdkafka_transactional_id: str
    java_group: str
    rdkafka_group: str


@dataclass
class LoadOutcomes:
    idempotent: dict[str, Outcome]  # by tag
    transactional: dict[str, Outcome]  # by tag
    readers: dict[str, Outcome]
    offsets_seen: list[list[dict[int, int]]]

    def check(
        self, idempotent_log: dict[int, dict[int, str]], transactional_log: dict[int, dict[int, str]]
    ) -> None:
        """Against what fresh read_committed readers find in the idempotent and the transactional topic
        (offset -> value by partition). An AssertionError names every violation found."""
        problems: list[str] = []
        for tag, outcome in self.idempotent.items():
            problems += _exactly_once_in_order(tag, outcome.acknowledged, idempotent_log)
        aborted_values: set[str] = set()
        for tag, outcome in self.transactional.items():
            problems += _exactly_once_in_order(tag, outcome.committed, transactional_log)
            aborted_values |= set(outcome.aborted)
            stored_values = {v for log in transactional_log.values() for v in log.values()}
            problems += [f"{tag}: aborted {v} read" for v in sorted(set(outcome.aborted) & stored_values)]
        for name, outcome in self.readers.items():
            for partition, offset, value in outcome.read:
                now = transactional_log.get(partition, {}).get(offset)
                if now != value:
                    problems.append(f"group {name} read {value} at {partition}/{offset}, now {now}")
                if value in aborted_values:
                    problems.append(f"group {name} read the aborted {value}")
            problems += _never_backwards(
                f"group {name}'s commits", [dict([c]) for c in outcome.group_commits]
            )
        for seen in self.offsets_seen:
            problems += _never_backwards("committed offsets as listed", seen)
        assert not problems, f"{len(problems)} problems: {problems[:20]}"

    def errors(self) -> dict[str, list[str]]:
        """Every client's reported errors (retried commits, rebalances), for the test's output."""
        named = {
            **{f"idempotent {t}": o.errors for t, o in self.idempotent.items()},
            **{f"transactional {t}": o.errors for t, o in self.transactional.items()},
            **{f"reader {t}": o.errors for t, o in self.readers.items()},
        }
        return {k: v for k, v in named.items() if v}


def _exactly_once_in_order(tag: str, expected: dict[str, int], log: dict[int, dict[int, str]]) -> list[str]:
    """Each of `expected` (value -> partition) once in its partition of `log`; the tag's values in each
    partition in the order they were sent (`<tag>-<i>`, i increasing)."""
    problems = []
    for partition in sorted(set(expected.values()) | set(log)):
        mine = [v for _, v in sorted(log.get(partition, {}).items()) if v.rsplit("-", 1)[0] == tag]
        counts = Counter(mine)
        wanted = {v for v, p in expected.items() if p == partition}
        lost = sorted(wanted - set(counts))
        duplicated = sorted(v for v, n in counts.items() if n > 1)
        numbers = [int(v.rsplit("-", 1)[1]) for v in mine]
        if lost:
            problems.append(f"{tag}: {len(lost)} acknowledged lost in {partition}, e.g. {lost[:5]}")
        if duplicated:
            problems.append(f"{tag}: {len(duplicated)} duplicated in {partition}, e.g. {duplicated[:5]}")
        if numbers != sorted(numbers):
            problems.append(f"{tag}: out of order in {partition}")
    return problems


def _never_backwards(what: str, offsets: list[dict[int, int]]) -> list[str]:
    highest: dict[int, int] = {}
    problems = []
    for sample in offsets:
        for partition, offset in sample.items():
            if offset < highest.get(partition, -1):
                problems.append(f"{what}: partition {partition} back from {highest[partition]} to {offset}")
            highest[partition] = max(offset, highest.get(partition, -1))
    return problems


def read_by_offset(bootstrap: str, topic: str, partitions: int) -> dict[int, dict[int, str]]:
    """Each partition's records (offset -> value) up to its last stable offset, as a fresh read_committed
    consumer reads them."""
    from tests.support.txn_reader import read_committed_by_offset

    read = read_committed_by_offset(bootstrap, topic, partitions, PATIENCE_S)
    return {p: {offset: value.decode() for offset, value in records.items()} for p, records in read.items()}
