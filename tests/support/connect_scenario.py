"""Kafka Connect in distributed mode through a worker crash: FileStreamSource → topic → FileStreamSink.

Two workers (tests/support/connect_worker.py) share a group, their config, offset and status topics
compacted on the brokers (RF=3 on a cluster, 1 on a single node). A FileStreamSource connector reads
an input file into a one-partition topic and a FileStreamSink connector writes that topic to an output
file. Lines are appended to the input at a steady pace from before the first crash until after the
last restart; meanwhile the worker running the source task is SIGKILLed (the other takes its tasks
over) and started again, then the one running the sink task (by then, often the other one) is.

What Connect promises for these connectors is at least once: a worker commits a source task's file
position and a sink task's consumer offset every `offset.flush.interval.ms`, so a killed worker's tasks
start again from the last commit, and what they had produced or written since is produced or written
again. So the check (`delivery_problems`) is: the output holds exactly the set of input lines (none
lost, none foreign, no torn line), and a line occurring more than once in it had been appended to the
input before the last kill: a line appended after it went through no crash and must appear once. The topic
is checked the same way (the source side's duplicates alone).

`run` works on any brokers given by a bootstrap string and `Worker`s killed by the test: odradek's
3-broker cluster in the test, Apache Kafka 3.9 in tests/support/connect_reference.py (the check of the
scenario itself).
"""

from __future__ import annotations

import functools
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tests.support import connect_worker
from tests.support.connect_worker import RestError, Worker

#: Lines appended to the input file a second, from before the crash until after the restart.
RATE = 50
#: The replication factor of the topics on a 3-broker cluster (a single node: 1).
REPLICATION = 3
#: Progress asked for after each step: this many more lines in the output file.
PROGRESS_LINES = 100
#: Each step (workers up, progress after a fault, the whole input delivered) must come within this.
STEP_TIMEOUT_S = 120.0
SOURCE = "lines-source"
SINK = "lines-sink"


def line(n: int) -> str:
    return f"line-{n:06d}"


def delivery_problems(input_lines: Sequence[str], output_lines: Sequence[str], kill_mark: int) -> list[str]:
    """What differs from at-least-once delivery: `output_lines` must hold every line of `input_lines` and
    nothing else, and only lines among the first `kill_mark` of the input (there before the kill) may
    occur more than once."""
    wanted = set(input_lines)
    got = Counter(output_lines)
    problems = []
    missing = sorted(wanted - set(got))
    if missing:
        problems.append(f"{len(missing)} lines lost: {missing[:10]}")
    foreign = sorted(set(got) - wanted)
    if foreign:
        problems.append(f"{len(foreign)} lines never written to the input (torn or foreign): {foreign[:10]}")
    before_kill = set(input_lines[:kill_mark])
    repeated_after = sorted(text for text, times in got.items() if times > 1 and text not in before_kill)
    if repeated_after:
        problems.append(
            f"{len(repeated_after)} lines appended after the kill occur more than once: {repeated_after[:10]}"
        )
    return problems


class Appender:
    """Appends whole lines to the input file at RATE a second from a thread until `finish`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.path.write_text("")
        #: Every line appended and flushed, in order.
        self.lines: list[str] = []
        self._finishing = threading.Event()
        self._thread = threading.Thread(target=self._append, name="connect-input", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def finish(self) -> None:
        self._finishing.set()
        self._thread.join(30)

    def _append(self) -> None:
        per_tick = max(1, RATE // 10)
        started = time.monotonic()
        with open(self.path, "a") as out:
            while not self._finishing.is_set():
                batch = [line(len(self.lines) + i) for i in range(per_tick)]
                out.write("".join(f"{text}\n" for text in batch))
                out.flush()
                self.lines.extend(batch)
                ahead = started + len(self.lines) / RATE - time.monotonic()
                if ahead > 0:
                    self._finishing.wait(ahead)


def output_lines(path: Path) -> list[str]:
    """The complete lines of the sink's file so far (a last line without its newline is being written)."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return []
    return text.split("\n")[:-1]


def worker_settings(bootstrap: str, tag: str, replication: int = REPLICATION) -> dict[str, str]:
    return {
        "bootstrap.servers": bootstrap,
        "group.id": f"connect-{tag}",
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
        "config.storage.topic": f"connect-configs-{tag}",
        "offset.storage.topic": f"connect-offsets-{tag}",
        "status.storage.topic": f"connect-status-{tag}",
        "config.storage.replication.factor": str(replication),
        "offset.storage.replication.factor": str(replication),
        "status.storage.replication.factor": str(replication),
        "offset.storage.partitions": "5",
        "status.storage.partitions": "3",
        # commit source positions and sink offsets every second (60 s by default): a crash then
        # repeats about a second's lines, and the test waits less
        "offset.flush.interval.ms": "1000",
        # a dead worker's tasks go to the living one 3 s after it leaves the group (5 min by default)
        "scheduled.rebalance.max.delay.ms": "3000",
        "session.timeout.ms": "6000",
        "heartbeat.interval.ms": "1500",
        "task.shutdown.graceful.timeout.ms": "5000",
        # a killed sink task's consumer leaves its group after 6 s (45 s by default) and the sink moves on
        "consumer.session.timeout.ms": "6000",
        "consumer.heartbeat.interval.ms": "1500",
        # the FileStream connectors declare themselves in service manifests: no class-path scan
        "plugin.discovery": "service_load",
    }


def internal_topics(tag: str) -> tuple[str, str, str]:
    return f"connect-configs-{tag}", f"connect-offsets-{tag}", f"connect-status-{tag}"


def run(bootstrap: str, work: Path, replication: int = REPLICATION) -> None:
    """The whole scenario, its topics at `replication`; an AssertionError says what broke, with a
    timeline and the workers' logs."""
    from confluent_kafka.admin import AdminClient, NewTopic

    classpath = connect_worker.build()
    work.mkdir(parents=True, exist_ok=True)
    tag = uuid.uuid4().hex[:8]
    topic = f"connect-lines-{tag}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, 1, replication)]).values():
        future.result(60)
    settings = worker_settings(bootstrap, tag, replication)
    workers = [Worker(name, classpath, work, settings) for name in ("a", "b")]
    input_path, output_path = work / "input.txt", work / "output.txt"
    appender = Appender(input_path)
    steps = _Steps(workers, appender, output_path)
    kill_mark = 0
    try:
        for worker in workers:
            worker.start()
        steps.until(lambda: all(_answers(w) for w in workers), "both workers' REST APIs up")
        _create(steps, workers[0], SOURCE, _source_config(input_path, topic))
        _create(steps, workers[0], SINK, _sink_config(output_path, topic))
        appender.start()
        # a few offset flushes before the kill: the restarted tasks resume from a committed position
        for _ in range(3):
            steps.until_output_grows("the connectors at work")
        # the worker running the source task, then (back in the group) the one running the sink task
        for connector in (SOURCE, SINK):
            victim = next(w for w in workers if w.worker_id == _task_worker(steps, workers, connector))
            tasks = [c for c in (SOURCE, SINK) if _task_worker(steps, workers, c) == victim.worker_id]
            victim.kill()
            kill_mark = len(appender.lines)
            steps.note(
                f"worker {victim.name} (running {', '.join(tasks)}) SIGKILLed at input line {kill_mark}"
            )
            steps.until_output_grows(f"the other worker doing worker {victim.name}'s tasks")
            victim.start()
            steps.note(f"worker {victim.name} started again")
            steps.until(functools.partial(_answers, victim), f"worker {victim.name}'s REST API up again")
            steps.until_output_grows(f"progress with worker {victim.name} back")
        appender.finish()
        steps.note("the input complete")
        wanted = set(appender.lines)
        steps.until(lambda: wanted <= set(output_lines(output_path)), "every input line in the output")
        for worker in workers:
            code = worker.stop()
            assert code in (0, 143), f"worker {worker.name} exited {code}:\n{worker.log_text()}"
        steps.note("both workers stopped")
    finally:
        appender.finish()
        for worker in workers:
            worker.kill()
    problems = delivery_problems(appender.lines, output_lines(output_path), kill_mark)
    topic_problems = delivery_problems(appender.lines, _read_topic(bootstrap, topic), kill_mark)
    assert not problems and not topic_problems, (
        f"(repeats allowed up to input line {kill_mark}, the last kill's)\n"
        f"the sink's file: {problems}\nthe topic: {topic_problems}\n{steps.timeline()}"
        + "".join(f"\n--- worker {w.name}:\n{w.log_text()}" for w in workers)
    )
    _check_internal_topics(admin, tag, replication)
    repeated = sum(n - 1 for n in Counter(output_lines(output_path)).values() if n > 1)
    steps.note(f"{len(appender.lines)} lines delivered, {repeated} repeated (all from before the last kill)")
    print(steps.timeline())  # shown by pytest -rP, and by the reference run


class _Steps:
    """Waits on the workers (failing at once if one dies by itself), and keeps a timeline."""

    def __init__(self, workers: Sequence[Worker], appender: Appender, output: Path) -> None:
        self.workers = workers
        self.appender = appender
        self.output = output
        self.started = time.monotonic()
        self.events: list[str] = []

    def note(self, event: str) -> None:
        self.events.append(
            f"{time.monotonic() - self.started:6.1f}s {event} ({len(self.appender.lines)} appended, "
            f"{len(output_lines(self.output))} in the output)"
        )

    def timeline(self) -> str:
        return "the timeline:\n" + "\n".join(self.events)

    def until_output_grows(self, what: str) -> None:
        target = len(output_lines(self.output)) + PROGRESS_LINES
        self.until(
            lambda: len(output_lines(self.output)) >= target, f"{what}: {PROGRESS_LINES} more lines out"
        )

    def until(self, condition: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + STEP_TIMEOUT_S
        while not condition():
            for worker in self.workers:
                code = worker.exited()
                if code is not None:
                    raise AssertionError(
                        f"worker {worker.name} exited {code} waiting for {what}\n{self.timeline()}\n"
                        f"{worker.log_text()}"
                    )
            if time.monotonic() > deadline:
                logs = "".join(f"\n--- worker {w.name}:\n{w.log_text()}" for w in self.workers)
                raise AssertionError(
                    f"timed out after {STEP_TIMEOUT_S}s waiting for {what}\n{self.timeline()}{logs}"
                )
            time.sleep(0.25)
        self.note(what)


def _answers(worker: Worker) -> bool:
    """The worker serves its REST API and has read the connectors' configs (GET /connectors works)."""
    try:
        worker.request("GET", "/connectors")
    except RestError:
        return False
    return True


def _create(steps: _Steps, worker: Worker, name: str, config: dict[str, str]) -> None:
    """POST the connector, again while the group is still forming (409, 503)."""
    errors: list[str] = []

    def created() -> bool:
        try:
            worker.request("POST", "/connectors", {"name": name, "config": config})
        except RestError as error:
            errors.append(str(error))
            return "409" in str(error) and "already exists" in str(error)
        return True

    try:
        steps.until(created, f"connector {name} created")
    except AssertionError as failure:
        raise AssertionError(f"{failure}\nthe REST API's latest answers: {errors[-3:]}") from None


def _task_worker(steps: _Steps, workers: Sequence[Worker], connector: str) -> str:
    """The worker id running `connector`'s task 0 (asked of any worker that answers)."""
    found: list[str] = []

    def running() -> bool:
        for worker in workers:
            try:
                status = worker.request("GET", f"/connectors/{connector}/status")
            except RestError:
                continue
            tasks = [t for t in status.get("tasks", []) if t.get("state") == "RUNNING"]
            if tasks:
                found.append(str(tasks[0]["worker_id"]))
                return True
        return False

    steps.until(running, f"connector {connector}'s task RUNNING")
    return found[-1]


def _source_config(path: Path, topic: str) -> dict[str, str]:
    return {
        "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
        "tasks.max": "1",
        "file": str(path),
        "topic": topic,
    }


def _sink_config(path: Path, topic: str) -> dict[str, str]:
    return {
        "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
        "tasks.max": "1",
        "file": str(path),
        "topics": topic,
    }


def _check_internal_topics(admin: Any, tag: str, replication: int) -> None:
    """Connect's config, offset and status topics exist, compacted, every partition at `replication`."""
    from confluent_kafka.admin import ConfigResource

    metadata = admin.list_topics(timeout=30)
    for name in internal_topics(tag):
        assert name in metadata.topics, f"{name} missing: {sorted(metadata.topics)}"
        factors = {len(p.replicas) for p in metadata.topics[name].partitions.values()}
        assert factors == {replication}, f"{name}: replication factors {factors}"
        resource = ConfigResource(ConfigResource.Type.TOPIC, name)
        config = admin.describe_configs([resource])[resource].result(30)
        assert config["cleanup.policy"].value == "compact", (
            f"{name}: cleanup.policy {config['cleanup.policy']}"
        )


def _read_topic(bootstrap: str, topic: str) -> list[str]:
    """Every value of the one-partition `topic`, until its end."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"connect-check-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    values: list[str] = []
    deadline = time.monotonic() + STEP_TIMEOUT_S
    try:
        while True:
            assert time.monotonic() < deadline, f"{topic}: not read to its end"
            message = consumer.poll(1.0)
            if message is None:
                continue
            error = message.error()
            if error is None:
                values.append((message.value() or b"").decode())
            elif error.code() == KafkaError._PARTITION_EOF:
                return values
            else:
                raise AssertionError(f"{topic}: {error}")
    finally:
        consumer.close()
