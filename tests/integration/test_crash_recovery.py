"""SIGKILL the broker twenty times during sustained produce: nothing acknowledged is lost or doubled.

Two confluent-kafka producers write all the time, from a thread of the test, each to its own topic:
- acks=1 without retries (a retry after a lost response could legitimately write twice);
- acks=all with idempotence, which retries across the restarts and relies on the broker rebuilding
  its producer state from the log to drop duplicates.
Each cycle waits until both have fresh acknowledgements from the running broker, kills it, and
starts it again on the same data directory with no manual step. At the end every acknowledged value
must be in its log exactly once, at the offset the broker acknowledged, and offsets have no gaps.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, Message, Producer

from odradek.storage.checkpoints import read_offset_checkpoint
from odradek.storage.files import RECOVERY_POINT_CHECKPOINT
from odradek.storage.partition import TopicPartition
from tests.support.broker_process import BrokerProcess
from tests.support.interop import produce_acknowledged, stored_batches, wait_until

pytestmark = pytest.mark.timeout(150)

CYCLES = 20
#: Acknowledgements each producer must get from a freshly (re)started broker before it is killed.
ACKS_PER_CYCLE = 150


class SustainedProducer:
    """A producer that records which values the broker acknowledged, and at which offset."""

    def __init__(self, bootstrap: str, topic: str, **config: Any) -> None:
        self.topic = topic
        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "linger.ms": 2,
                "reconnect.backoff.ms": 10,
                "reconnect.backoff.max.ms": 100,
                "retry.backoff.ms": 20,
                "socket.connection.setup.timeout.ms": 2000,
                "socket.timeout.ms": 10000,
                "error_cb": lambda error: self.errors.append(f"client: {error}"),
                **config,
            }
        )
        self.sent = 0
        self.acknowledged: dict[bytes, int] = {}
        self.failed = 0
        self.fatal: list[str] = []
        self.errors: list[str] = []

    def describe(self) -> str:
        recent = self.errors[-5:]
        return (
            f"{self.topic}: sent {self.sent}, acknowledged {len(self.acknowledged)}, failed {self.failed}, "
            f"in queue {len(self.producer)}, recent errors {recent}"
        )

    def produce_one(self) -> None:
        value = b"%s-%08d" % (self.topic.encode(), self.sent)
        try:
            self.producer.produce(self.topic, value=value, partition=0, on_delivery=self._delivered)
        except BufferError:  # the local queue is full while the broker is down
            self.producer.poll(0.05)
            return
        self.sent += 1

    def _delivered(self, error: KafkaError | None, message: Message) -> None:
        if error is None:
            value = message.value()
            offset = message.offset()
            assert value is not None and offset is not None
            assert value not in self.acknowledged, f"{value!r} acknowledged twice"
            self.acknowledged[value] = offset
        else:
            self.failed += 1
            self.errors.append(str(error))
            if error.fatal():
                self.fatal.append(str(error))


def _produce_until(producers: list[SustainedProducer], stop: threading.Event) -> None:
    while not stop.is_set():
        for producer in producers:
            producer.produce_one()
            producer.producer.poll(0)
        producers[0].producer.poll(0.001)  # pacing: a few hundred messages a second each


def test_acknowledged_messages_survive_twenty_sigkills_exactly_once(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "data", {"offsets.topic.num.partitions": "1"}).start()
    at_most_once = SustainedProducer(broker.bootstrap, "crash-acks-1", acks="1", retries=0)
    idempotent = SustainedProducer(broker.bootstrap, "crash-acks-all", **{"enable.idempotence": True})
    producers = [at_most_once, idempotent]
    stop = threading.Event()
    thread = threading.Thread(target=_produce_until, args=(producers, stop), daemon=True)
    thread.start()
    try:
        for cycle in range(CYCLES + 1):
            targets = [len(p.acknowledged) + ACKS_PER_CYCLE for p in producers]
            try:
                wait_until(
                    lambda targets=targets: all(  # type: ignore[misc]
                        len(p.acknowledged) >= t for p, t in zip(producers, targets, strict=True)
                    ),
                    60,
                    f"{ACKS_PER_CYCLE} acknowledgements per producer after restart {cycle}",
                )
            except AssertionError as stalled:
                states = "; ".join(p.describe() for p in producers)
                raise AssertionError(f"{stalled}: {states}\nbroker log:\n{broker.log_text()}") from None
            if cycle < CYCLES:
                broker.kill()
                broker.start()
        stop.set()
        thread.join(10)
        for producer in producers:
            assert producer.producer.flush(30) == 0, f"{producer.topic}: messages left unsent"
            assert producer.fatal == [], f"{producer.topic}: fatal producer errors {producer.fatal}"
        for producer in producers:
            _check_log(broker, producer)
    finally:
        stop.set()
        thread.join(10)
        broker.stop()
    for producer in producers:  # shown with `pytest -s`
        acknowledged = len(producer.acknowledged)
        print(
            f"{producer.topic}: sent {producer.sent}, acknowledged {acknowledged}, failed {producer.failed}"
        )
    # The kills really did interrupt in-flight produce (acks=1 without retries loses those requests).
    assert at_most_once.failed > 0


def test_a_rolled_segment_is_flushed_and_the_recovery_point_moves_to_the_new_one(tmp_path: Path) -> None:
    """Kafka flushes the segments below a new one when it rolls, and moves the recovery point there;
    with the default flush settings nothing was ever flushed, the recovery point stayed 0 and a start
    after a crash (or a power loss) had to recover, or lost, the whole log."""
    data = tmp_path / "data"
    broker = BrokerProcess(
        data, {"log.segment.bytes": str(1 << 20), "log.flush.offset.checkpoint.interval.ms": "100"}
    ).start()
    try:
        values = [bytes([i]) * 100_000 for i in range(30)]  # about three 1 MiB segments
        offsets = produce_acknowledged(broker.bootstrap, "rolled", values, timeout=30)
        assert offsets == list(range(30))
        segments = sorted((data / "rolled-0").glob("*.log"))
        assert len(segments) >= 3
        newest_base = int(segments[-1].name.split(".")[0])

        def recovery_point() -> int:
            points = read_offset_checkpoint(data / RECOVERY_POINT_CHECKPOINT)
            return points.get(TopicPartition("rolled", 0), 0)

        wait_until(lambda: recovery_point() >= newest_base, 10, "the recovery point at the newest segment")
    finally:
        broker.stop()


def _check_log(broker: BrokerProcess, producer: SustainedProducer) -> None:
    records = [r for batch in stored_batches(broker.port, producer.topic, 0) for r in batch.records]
    offsets = [r.offset for r in records]
    assert offsets == list(range(len(records))), f"{producer.topic}: offsets are not contiguous from 0"
    positions: dict[bytes, int] = {}
    for record in records:
        assert record.value is not None
        assert record.value not in positions, f"{producer.topic}: {record.value!r} is in the log twice"
        positions[record.value] = record.offset
    lost = {v: o for v, o in producer.acknowledged.items() if positions.get(v) != o}
    assert not lost, (
        f"{producer.topic}: {len(lost)} acknowledged values missing or moved, e.g. {list(lost.items())[:5]}"
    )
