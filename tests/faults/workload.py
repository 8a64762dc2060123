"""Writers and readers of a fault run, and the final read-back, filling the checker's histories.

Writers are idempotent `acks=all` confluent-kafka producers writing unique values ("w<writer>-<n>")
round-robin over the partitions at a steady rate; a delivery report with an offset is an
acknowledgement, one with an error leaves the value unacknowledged (it may still be in the log).
Readers are consumers assigned every partition from offset 0 (no group: the coordinator is not what
is under test), recording each record with the number of the poll that returned it.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import Counter
from typing import Any

from tests.faults.checker import Ack, Histories, Read

#: Records per second per writer: enough to cross every fault, little enough for two shared cores.
RATE = 100


class Workload:
    def __init__(
        self, bootstrap: str, topic: str, partitions: int, writers: int = 2, readers: int = 2
    ) -> None:
        self.bootstrap = bootstrap
        self.topic = topic
        self.partitions = partitions
        self.histories = Histories()
        #: Delivery errors by name (NOT_ENOUGH_REPLICAS, _MSG_TIMED_OUT...), for the report.
        self.errors: Counter[str] = Counter()
        # reentrant: librdkafka may run delivery callbacks from a producer's destructor, at any point
        self._lock = threading.RLock()
        self._stopping = threading.Event()
        self._threads = [
            *(
                threading.Thread(target=self._write, args=(n,), name=f"writer-{n}", daemon=True)
                for n in range(writers)
            ),
            *(
                threading.Thread(target=self._read, args=(n,), name=f"reader-{n}", daemon=True)
                for n in range(readers)
            ),
        ]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self, timeout: float = 120.0) -> None:
        """Stop writing and reading; waits for the outstanding delivery reports, up to `timeout` in all."""
        self._stopping.set()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    # ----- writers -------------------------------------------------------------------------------

    def _write(self, writer: int) -> None:
        from confluent_kafka import KafkaException

        fatal = threading.Event()
        producer = _producer(self.bootstrap, fatal)
        sequence = 0
        started = time.monotonic()
        while not self._stopping.is_set():
            value = f"w{writer}-{sequence}"
            partition = sequence % self.partitions
            sequence += 1  # a value is never used twice, even one that failed to queue
            with self._lock:
                self.histories.unacknowledged.add(value)
            try:
                producer.produce(
                    self.topic, value=value.encode(), partition=partition, on_delivery=self._delivered
                )
            except BufferError:
                self._not_queued(value, "queue full")
                self._poll(producer, fatal, 0.1)
            except SystemError:  # as in _flush
                self._not_queued(value, "fatal")
                fatal.set()
            except KafkaException as error:
                # not handed over (partition unknown for a moment), or the producer turned fatal
                self._not_queued(value, error.args[0].name())
                if error.args[0].fatal():
                    fatal.set()
                else:
                    self._poll(producer, fatal, 0.1)
            else:
                self._poll(producer, fatal, 0)
            if fatal.is_set():
                # an idempotent producer in a fatal state must be replaced, as an application would
                with self._lock:
                    self.errors["FATAL_PRODUCER_REPLACED"] += 1
                _discard(producer)
                fatal.clear()
                producer = _producer(self.bootstrap, fatal)
            time.sleep(max(0.0, started + sequence / RATE - time.monotonic()))
        if fatal.is_set():
            _discard(producer)
        else:
            _flush(producer, 60)

    def _not_queued(self, value: str, why: str) -> None:
        with self._lock:
            self.histories.unacknowledged.discard(value)
            self.errors[f"not queued: {why}"] += 1

    @staticmethod
    def _poll(producer: Any, fatal: threading.Event, timeout: float) -> None:
        from confluent_kafka import KafkaException

        try:
            producer.poll(timeout)
        except KafkaException as error:
            if error.args[0].fatal():
                fatal.set()
        except SystemError:  # as in _flush
            fatal.set()

    def _delivered(self, error: Any, message: Any) -> None:
        value = message.value().decode()
        with self._lock:
            if error is None and message.offset() >= 0:
                self.histories.unacknowledged.discard(value)
                self.histories.acks.append(Ack(value, message.partition(), message.offset()))
            else:
                self.errors[error.name() if error is not None else "NO_OFFSET"] += 1

    # ----- readers -------------------------------------------------------------------------------

    def _read(self, reader: int) -> None:
        consumer = _consumer(self.bootstrap, self.topic, self.partitions)
        name = f"reader-{reader}"
        poll = 0
        try:
            while not self._stopping.is_set():
                messages = consumer.consume(num_messages=500, timeout=0.5)
                poll += 1
                reads = [
                    Read(name, poll, m.partition(), m.offset(), m.value().decode())
                    for m in messages
                    if m.error() is None and m.value() is not None
                ]
                with self._lock:
                    self.histories.reads.extend(reads)
        finally:
            consumer.close()


def read_everything(
    bootstrap: str, topic: str, partitions: int, timeout: float = 120.0
) -> dict[int, list[tuple[int, str]]]:
    """Every record of every partition from offset 0 up to its high watermark, by a fresh consumer."""
    consumer = _consumer(bootstrap, topic, partitions)
    from confluent_kafka import TopicPartition

    try:
        ends = {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
            for p in range(partitions)
        }
        final: dict[int, list[tuple[int, str]]] = {p: [] for p in range(partitions)}
        positions = dict.fromkeys(range(partitions), -1)
        deadline = time.monotonic() + timeout
        while any(positions[p] + 1 < ends[p] for p in range(partitions)):
            if time.monotonic() > deadline:
                raise TimeoutError(f"final read incomplete: at {positions}, high watermarks {ends}")
            for message in consumer.consume(num_messages=1000, timeout=1.0):
                if message.error() is not None or message.value() is None:
                    continue
                final[message.partition()].append((message.offset(), message.value().decode()))
                positions[message.partition()] = max(positions[message.partition()], message.offset())
        return final
    finally:
        consumer.close()


def _discard(producer: Any) -> None:
    """Let a fatal producer go: its queued values come back through their delivery reports, unacknowledged."""
    with contextlib.suppress(Exception):
        producer.purge()
    _flush(producer, 30)


def _flush(producer: Any, timeout: float) -> None:
    from confluent_kafka import KafkaException

    # SystemError too: confluent-kafka runs delivery callbacks with a fatal error pending, and Python
    # reports that as a SystemError of whatever the callback called first
    with contextlib.suppress(KafkaException, SystemError):
        producer.flush(timeout)


def _producer(bootstrap: str, fatal: threading.Event) -> Any:
    from confluent_kafka import Producer

    def on_error(error: Any) -> None:
        if error.fatal():
            fatal.set()

    return Producer(
        {
            "error_cb": on_error,
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "message.timeout.ms": 30_000,
            "request.timeout.ms": 10_000,
            "linger.ms": 5,
            "retry.backoff.ms": 200,
        }
    )


def _consumer(bootstrap: str, topic: str, partitions: int) -> Any:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "fault-harness-readers",  # needed by librdkafka; no group is joined (assign)
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "enable.partition.eof": False,
            "fetch.wait.max.ms": 200,
        }
    )
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    return consumer
