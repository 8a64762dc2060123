"""Long-running producer + consumer-group pairs of the four real clients, for failover tests.

Each pair writes unique values ("<client>-<n>") to its own topic with acks=all (idempotent where the
client can) and reads them back in a consumer group that commits, while a test kills brokers under
it. It records what the broker acknowledged, what was consumed, and every error the client reported,
sorted into those Kafka calls retriable (the client is meant to ride them out) and the rest.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import subprocess
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

#: Between two produce calls: a few hundred records a second per client, enough to be sure records
#: are in flight when the leader dies, little enough for a loaded 2-core machine.
PRODUCE_INTERVAL_S = 0.01
#: How long a producer's close/flush may take to deliver what it still holds.
FLUSH_TIMEOUT_S = 90.0
#: kafka-python's poll timeout (see KafkaPythonClient._consume: its rebalances must fit in one poll).
KAFKA_PYTHON_POLL_MS = 3000


class FailoverClient(ABC):
    """What a test reads off every pair; subclasses drive one client library."""

    name = ""

    def __init__(self, bootstrap: str, topic: str, group: str) -> None:
        self.bootstrap = bootstrap
        self.topic = topic
        self.group = group
        self.lock = threading.Lock()
        #: value -> offset, for every record the broker acknowledged
        self.acknowledged: dict[bytes, int] = {}
        #: value -> offset, for every record the consumer returned
        self.consumed: dict[bytes, int] = {}
        #: offset -> value, as the consumer read the log (a record read again after a rebalance
        #: lands on its own entry; a duplicate in the log would take a second offset)
        self.log: dict[int, bytes] = {}
        #: failed deliveries (none is acceptable: the producers retry until they succeed)
        self.delivery_failures: list[str] = []
        #: everything else the client reported, as "<kind>: <error>", with whether it is retriable
        self.errors: list[tuple[str, bool]] = []
        self.producing = threading.Event()
        self.consuming = threading.Event()
        self.sent = 0

    # the test's view ------------------------------------------------------------------------------

    def acked_count(self) -> int:
        with self.lock:
            return len(self.acknowledged)

    def consumed_count(self) -> int:
        with self.lock:
            return len(self.consumed)

    def lost(self) -> dict[bytes, int]:
        """Acknowledged records the consumer never returned."""
        with self.lock:
            return {v: o for v, o in self.acknowledged.items() if v not in self.consumed}

    def caught_up(self) -> bool:
        return not self.lost()

    def unexpected_errors(self) -> list[str]:
        return [error for error, retriable in self.errors if not retriable]

    def run_threads(self, **targets: Callable[[], None]) -> None:
        """Mark the pair producing and consuming, then run each target on a daemon thread of its name
        (the first is the producer's: stop_producing joins it)."""
        self.producing.set()
        self.consuming.set()
        self.threads = [
            threading.Thread(target=target, name=f"{self.name}-{name}", daemon=True)
            for name, target in targets.items()
        ]
        for thread in self.threads:
            thread.start()

    # recording, from the clients' threads ---------------------------------------------------------

    def value(self, sequence: int) -> bytes:
        return f"{self.name}-{sequence}".encode()

    def record_ack(self, value: bytes, offset: int) -> None:
        with self.lock:
            self.acknowledged[value] = offset

    def record_consumed(self, value: bytes, offset: int) -> None:
        with self.lock:
            self.consumed[value] = offset
            self.log[offset] = value

    def record_error(self, kind: str, error: object, retriable: bool) -> None:
        with self.lock:
            self.errors.append((f"{kind}: {error!r}", retriable))

    # lifecycle ------------------------------------------------------------------------------------

    @abstractmethod
    def start(self) -> None:
        """Start the producer and the consumer group in their own threads or process."""

    @abstractmethod
    def stop_producing(self) -> None:
        """Stop sending and wait until every record sent is acknowledged or has failed."""

    @abstractmethod
    def stop_consuming(self) -> None:
        """Stop the consumer, which commits what it consumed as it leaves its group."""

    def abandon(self) -> None:
        """A failed test's cleanup: the client's threads end on their own once told to."""
        self.producing.clear()
        self.consuming.clear()


# ----- confluent-kafka (librdkafka) ---------------------------------------------------------------


def librdkafka_retriable(error: Any) -> bool:
    """librdkafka's own verdict, plus the local codes it reports (through error_cb or a consumer
    message) while it reconnects and finds the new leader or coordinator: _TRANSPORT is a connection
    the killed broker dropped or refused, _WAIT_COORD / COORDINATOR_NOT_AVAILABLE / NOT_COORDINATOR
    a group coordinator that moved, REBALANCE_IN_PROGRESS the group re-forming around a member whose
    coordinator died. All are errors librdkafka retries by itself."""
    from confluent_kafka import KafkaError

    transient = {
        KafkaError._TRANSPORT,
        KafkaError._WAIT_COORD,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.NOT_COORDINATOR,
        KafkaError.REBALANCE_IN_PROGRESS,
    }
    return bool(error.retriable()) or error.code() in transient


class ConfluentClient(FailoverClient):
    name = "confluent"

    def start(self) -> None:
        from confluent_kafka import Consumer, Producer

        def on_error(error: Any) -> None:
            self.record_error("error_cb", error, librdkafka_retriable(error))

        self.producer = Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 5,
                "error_cb": on_error,
            }
        )
        self.consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": self.group,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": True,
                "auto.commit.interval.ms": 500,
                "error_cb": on_error,
            }
        )
        self.consumer.subscribe([self.topic])
        self.run_threads(producer=self._produce, consumer=self._consume)

    def _produce(self) -> None:
        while self.producing.is_set():
            self.producer.produce(self.topic, self.value(self.sent), partition=0, on_delivery=self._delivered)
            self.sent += 1
            self.producer.poll(0)
            time.sleep(PRODUCE_INTERVAL_S)

    def _delivered(self, error: Any, message: Any) -> None:
        if error is not None:
            with self.lock:
                self.delivery_failures.append(repr(error))
        else:
            self.record_ack(message.value(), message.offset())

    def _consume(self) -> None:
        while self.consuming.is_set():
            message = self.consumer.poll(0.2)
            if message is None:
                continue
            if message.error() is not None:
                self.record_error("consumer", message.error(), librdkafka_retriable(message.error()))
                continue
            self.record_consumed(message.value(), message.offset())
        self.consumer.close()

    def stop_producing(self) -> None:
        self.producing.clear()
        self.threads[0].join(30)
        remaining = self.producer.flush(FLUSH_TIMEOUT_S)
        assert remaining == 0, f"{remaining} records never delivered"
        self.producer.close()

    def stop_consuming(self) -> None:
        self.consuming.clear()
        self.threads[1].join(60)


# ----- kafka-python --------------------------------------------------------------------------------


def kafka_errors_retriable(error: BaseException) -> bool:
    """kafka-python and aiokafka mark each Kafka error class `retriable` as Kafka's protocol does
    (NOT_LEADER_OR_FOLLOWER, LEADER_NOT_AVAILABLE, NOT_COORDINATOR, REQUEST_TIMED_OUT, their
    connection errors...); only those may reach the application while a leader moves."""
    return bool(getattr(error, "retriable", False))


class KafkaPythonClient(FailoverClient):
    name = "kafka-python"

    def start(self) -> None:
        from kafka import KafkaConsumer, KafkaProducer

        self.producer = KafkaProducer(
            bootstrap_servers=self.bootstrap, acks="all", enable_idempotence=True, linger_ms=5
        )
        self.consumer = KafkaConsumer(
            self.topic,
            bootstrap_servers=self.bootstrap,
            group_id=self.group,
            auto_offset_reset="earliest",
            enable_auto_commit=True,
            auto_commit_interval_ms=500,
        )
        self.run_threads(producer=self._produce, consumer=self._consume)

    def _produce(self) -> None:
        while self.producing.is_set():
            value = self.value(self.sent)
            try:
                future = self.producer.send(self.topic, value, partition=0)
            except Exception as error:  # a send refused up front (buffer full, no metadata in time)
                self.record_error("send", error, kafka_errors_retriable(error))
                time.sleep(0.1)
                continue
            self.sent += 1
            future.add_callback(lambda metadata, v=value: self.record_ack(v, metadata.offset))
            future.add_errback(self._failed)
            time.sleep(PRODUCE_INTERVAL_S)

    def _failed(self, error: BaseException) -> None:
        with self.lock:
            self.delivery_failures.append(repr(error))

    def _consume(self) -> None:
        while self.consuming.is_set():
            try:
                # kafka-python 3.0.12 forgets a rebalance that outlasts one poll when only its metadata
                # snapshot asked for it (the first join often precedes the topic's metadata): the join
                # finishes after the poll gave up, need_rejoin() is then False and the assignment is
                # never applied (no partitions, heartbeats off). A poll long enough for a join and sync
                # on a loaded machine; it returns as soon as records arrive.
                batches = self.consumer.poll(timeout_ms=KAFKA_PYTHON_POLL_MS)
            except Exception as error:
                self.record_error("poll", error, kafka_errors_retriable(error))
                time.sleep(0.1)
                continue
            for records in batches.values():
                for record in records:
                    self.record_consumed(record.value, record.offset)
        self.consumer.close()  # commits what was consumed (enable_auto_commit)

    def stop_producing(self) -> None:
        self.producing.clear()
        self.threads[0].join(30)
        self.producer.flush(FLUSH_TIMEOUT_S)
        self.producer.close(10)

    def stop_consuming(self) -> None:
        self.consuming.clear()
        self.threads[1].join(60)


# ----- aiokafka ------------------------------------------------------------------------------------


class AiokafkaClient(FailoverClient):
    name = "aiokafka"

    def start(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.producing.set()
        self.consuming.set()
        self.thread = threading.Thread(target=self.loop.run_forever, name="aiokafka", daemon=True)
        self.thread.start()
        self.producer_task = asyncio.run_coroutine_threadsafe(self._produce(), self.loop)
        self.consumer_task = asyncio.run_coroutine_threadsafe(self._consume(), self.loop)

    async def _produce(self) -> None:
        from aiokafka import AIOKafkaProducer

        producer = AIOKafkaProducer(
            bootstrap_servers=self.bootstrap, acks="all", enable_idempotence=True, linger_ms=5
        )
        await producer.start()
        pending: set[asyncio.Future[Any]] = set()
        try:
            while self.producing.is_set():
                value = self.value(self.sent)
                try:
                    future = await producer.send(self.topic, value, partition=0)
                except Exception as error:
                    self.record_error("send", error, kafka_errors_retriable(error))
                    await asyncio.sleep(0.1)
                    continue
                self.sent += 1
                pending.add(future)
                future.add_done_callback(lambda f, v=value: self._done(f, v, pending))
                await asyncio.sleep(PRODUCE_INTERVAL_S)
            await producer.flush()
        finally:
            await producer.stop()

    def _done(self, future: asyncio.Future[Any], value: bytes, pending: set[asyncio.Future[Any]]) -> None:
        pending.discard(future)
        if future.cancelled() or future.exception() is not None:
            with self.lock:
                self.delivery_failures.append(repr(None if future.cancelled() else future.exception()))
        else:
            self.record_ack(value, future.result().offset)

    async def _consume(self) -> None:
        from aiokafka import AIOKafkaConsumer

        consumer = AIOKafkaConsumer(
            self.topic,
            bootstrap_servers=self.bootstrap,
            group_id=self.group,
            auto_offset_reset="earliest",
            enable_auto_commit=True,
            auto_commit_interval_ms=500,
        )
        await consumer.start()
        try:
            while self.consuming.is_set():
                try:
                    batches = await consumer.getmany(timeout_ms=200)
                except Exception as error:
                    self.record_error("getmany", error, kafka_errors_retriable(error))
                    await asyncio.sleep(0.1)
                    continue
                for records in batches.values():
                    for record in records:
                        assert record.value is not None
                        self.record_consumed(record.value, record.offset)
        finally:
            await consumer.stop()  # commits what was consumed (enable_auto_commit)

    def stop_producing(self) -> None:
        self.producing.clear()
        self.producer_task.result(FLUSH_TIMEOUT_S)

    def stop_consuming(self) -> None:
        self.consuming.clear()
        try:
            self.consumer_task.result(60)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)
            self.loop.close()


# ----- kcat ----------------------------------------------------------------------------------------

#: librdkafka's log lines on stderr: "%<level>|<time>|<facility>|<client>: <message>"; level 3 is an
#: error, 4 a warning, both printed while brokers come and go.
_LOG_LINE = re.compile(rb"^%(\d)\|[\d.]+\|([A-Z_]+)\|")
_DELIVERED = re.compile(rb"^% Message delivered to partition (\d+) \(offset (-?\d+)\)")
#: What kcat (through librdkafka) reports while a leader it talks to is killed and replaced, each a
#: transient state librdkafka retries: the dead broker's refused or dropped connections, requests
#: timed out on them, and the group re-forming or finding its coordinator again.
KCAT_RETRIABLE = (
    b"Connection refused",
    b"Disconnected",
    b"Connect to ",
    b"timed out",
    b"Broker: Not coordinator",
    b"Broker: Coordinator not available",
    b"Broker: Not leader for partition",
    b"Broker: Leader not available",
    b"Broker: Group rebalance in progress",
    b"Local: Broker transport failure",
    b"Local: Waiting for coordinator",
    b"Local: Timed out",
)


class KcatClient(FailoverClient):
    """`kcat -P` fed one value a line on stdin and `kcat -C -G` as processes. The producer's delivery
    reports (-v -v, on stderr) give the acknowledged offsets; the consumer prints "offset value"."""

    name = "kcat"

    def start(self) -> None:
        common = ["kcat", "-b", self.bootstrap, "-X", "topic.metadata.refresh.interval.ms=1000"]
        self.producer = subprocess.Popen(
            [
                *common,
                *("-P", "-t", self.topic, "-p", "0", "-v", "-v"),
                *("-X", "acks=all", "-X", "enable.idempotence=true", "-X", "linger.ms=5"),
            ],
            stdin=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
        )
        self.consumer = subprocess.Popen(
            [
                *common,
                *("-C", "-G", self.group, self.topic, "-f", "%o %s\\n", "-u"),
                *("-X", "auto.offset.reset=earliest", "-X", "auto.commit.interval.ms=500"),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.sent_values: dict[int, bytes] = {}
        self.delivered_offsets: list[int] = []
        #: every line both processes wrote on stderr (bar delivery reports), for a failure's message
        self.stderr: list[str] = []
        self.run_threads(
            producer=self._produce,
            reports=self._read_reports,
            consumed=self._read_consumed,
            consumer_errors=self._read_consumer_errors,
        )

    def _produce(self) -> None:
        assert self.producer.stdin is not None
        while self.producing.is_set() and self.producer.poll() is None:
            self.producer.stdin.write(self.value(self.sent) + b"\n")
            self.producer.stdin.flush()
            self.sent += 1
            time.sleep(PRODUCE_INTERVAL_S)
        with contextlib.suppress(BrokenPipeError):
            self.producer.stdin.close()  # end of input: kcat flushes what it holds, then exits

    def _read_reports(self) -> None:
        assert self.producer.stderr is not None
        for line in self.producer.stderr:
            line = line.rstrip(b"\n")
            delivered = _DELIVERED.match(line)
            if delivered:
                with self.lock:
                    self.delivered_offsets.append(int(delivered.group(2)))
            elif line.startswith(b"% Delivery failed"):
                with self.lock:
                    self.delivery_failures.append(line.decode(errors="replace"))
            else:
                self._classify("kcat -P", line)

    def _read_consumed(self) -> None:
        assert self.consumer.stdout is not None
        for line in self.consumer.stdout:
            offset, _, value = line.rstrip(b"\n").partition(b" ")
            self.record_consumed(value, int(offset))

    def _read_consumer_errors(self) -> None:
        assert self.consumer.stderr is not None
        for line in self.consumer.stderr:
            self._classify("kcat -C", line.rstrip(b"\n"))

    def _classify(self, kind: str, line: bytes) -> None:
        with self.lock:
            self.stderr.append(f"{time.time():.3f} {kind}: {line.decode(errors='replace')}")
        logged = _LOG_LINE.match(line)
        if logged and int(logged.group(1)) > 4:
            return  # notice/info/debug: not an error
        if not line.startswith(b"%") or not (logged or b"ERROR" in line or b"rror" in line):
            return  # kcat's own progress lines ("% Reached end of topic...", group assignments)
        self.record_error(kind, line.decode(errors="replace"), any(r in line for r in KCAT_RETRIABLE))

    def stop_producing(self) -> None:
        self.producing.clear()
        self.threads[0].join(30)
        code = self.producer.wait(FLUSH_TIMEOUT_S)
        self.threads[1].join(10)
        assert code == 0, f"kcat -P exited {code}"
        # kcat reports deliveries in the order it produced (idempotent: in order); the n-th
        # acknowledgement is the n-th line fed to it
        with self.lock:
            for sequence, offset in enumerate(self.delivered_offsets):
                self.acknowledged[self.value(sequence)] = offset

    def acked_count(self) -> int:
        with self.lock:
            return len(self.delivered_offsets)

    def stop_consuming(self) -> None:
        self.consuming.clear()
        self.consumer.terminate()  # kcat leaves its group and commits on SIGTERM
        try:
            self.consumer.wait(30)
        except subprocess.TimeoutExpired:
            self.consumer.kill()
            self.consumer.wait()
        for thread in self.threads[2:]:
            thread.join(10)

    def abandon(self) -> None:
        super().abandon()
        for process in (getattr(self, "producer", None), getattr(self, "consumer", None)):
            if process is None:
                continue
            if process.poll() is None:
                process.kill()
                process.wait()


CLIENTS: tuple[type[FailoverClient], ...] = (ConfluentClient, KafkaPythonClient, AiokafkaClient, KcatClient)
