"""Topic deletion on a real broker process with a real client (confluent-kafka): 249-character topics
through their whole life, files and open file descriptors gone once file.delete.delay.ms has passed,
and a clean shutdown right after a deletion."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from odradek.storage.files import CLEAN_SHUTDOWN_MARKER
from tests.support.broker_process import BrokerProcess
from tests.support.interop import create_topic, stored_batches, wait_until

pytestmark = pytest.mark.timeout(90)

#: Kafka's longest legal topic name is 249 characters.
LONGEST = 249
#: Every batch in a segment of its own: records carry timestamps a second apart.
ONE_BATCH_SEGMENTS = {"segment.ms": "1", "index.interval.bytes": "1"}
#: file.delete.delay.ms of the test that watches the files go: long enough to see them first.
DELAY_MS = 3000
FAST_JOBS = {
    "log.retention.check.interval.ms": "200",
    "log.cleaner.backoff.ms": "200",
    "log.segment.delete.delay.ms": "200",
}


def test_249_character_topics_create_produce_consume_compact_retain_and_delete(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "data", FAST_JOBS).start()
    plain, compacted, retained = ("p" * LONGEST, "c" * LONGEST, "r" * LONGEST)
    try:
        create_topic(broker.bootstrap, plain)
        create_topic(
            broker.bootstrap,
            compacted,
            configs={"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01", **ONE_BATCH_SEGMENTS},
        )
        create_topic(broker.bootstrap, retained, configs={"retention.bytes": "1", **ONE_BATCH_SEGMENTS})
        for topic in (plain, compacted, retained):
            _produce(broker.bootstrap, topic, 20)

        assert _consume(broker.bootstrap, plain, 20) == [f"value-{i}".encode() for i in range(20)]
        # Cleaned below the active segment (the last record): one record a key is left there.
        wait_until(lambda: _record_count(broker, compacted) == 4, 20, "compaction down to one record a key")
        assert _last_values(broker, compacted) == {
            b"key-17": b"value-18",
            b"key-18": b"value-19",
            b"key-19": b"value-17",
        }
        wait_until(
            lambda: _low_watermark(broker.bootstrap, retained) == 19, 20, "retention of all but the last"
        )

        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        for future in admin.delete_topics([plain, compacted, retained], operation_timeout=10).values():
            future.result(15)  # a 249-character topic could not be deleted: its -delete name was too long
        wait_until(lambda: _children(broker) == [], 10, "the partition directories to go")
        listed = admin.list_topics(timeout=10).topics
        assert not {plain, compacted, retained} & set(listed)
        assert "ERROR" not in broker.log_text()
    finally:
        assert broker.stop() == 0


def test_deleted_partition_directories_and_their_open_files_go_after_the_delay(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "data", {"log.segment.delete.delay.ms": str(DELAY_MS)}).start()
    topics = [f"fd-{i}" for i in range(10)]
    try:
        for topic in topics:
            create_topic(broker.bootstrap, topic, partitions=3, configs={"index.interval.bytes": "1"})
            _produce(broker.bootstrap, topic, 6, partitions=3)
        assert broker.process is not None
        pid = broker.process.pid
        assert len(_open_files(pid, "/fd-")) >= 30

        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        asked_at = time.monotonic()  # no deletion is done before: none may be removed before DELAY_MS
        for future in admin.delete_topics(topics, operation_timeout=10).values():
            future.result(15)
        # Kept, renamed, while reads in flight may still use them...
        assert len([name for name in _children(broker) if name.endswith("-delete")]) == 30
        # ...and gone, with every file descriptor, once file.delete.delay.ms has passed.
        wait_until(lambda: not _open_files(pid, "/fd-") and _children(broker) == [], 20, "the deletion")
        assert time.monotonic() - asked_at >= DELAY_MS / 1000
    finally:
        assert broker.stop() == 0


def test_sigterm_right_after_a_deletion_exits_cleanly_with_the_marker(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "data").start()  # file.delete.delay.ms: a minute, Kafka's default
    create_topic(broker.bootstrap, "orders", partitions=3, configs={"index.interval.bytes": "1"})
    _produce(broker.bootstrap, "orders", 12, partitions=3)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.delete_topics(["orders"], operation_timeout=10)["orders"].result(15)

    assert broker.stop() == 0  # was 1: the shutdown's file deletions failed
    assert (broker.data_dir / CLEAN_SHUTDOWN_MARKER).exists()
    assert _children(broker) == []
    assert "Traceback" not in broker.log_text()


def test_a_topic_created_again_after_crashes_does_not_inherit_the_deleted_ones_log_start(
    tmp_path: Path,
) -> None:
    broker = BrokerProcess(tmp_path / "data").start()
    try:
        create_topic(broker.bootstrap, "orders")
        _produce(broker.bootstrap, "orders", 10)
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        for future in admin.delete_records([TopicPartition("orders", 0, 6)], operation_timeout=10).values():
            future.result(15)
        broker.restart()  # a clean stop: the log start offset checkpoint says orders-0 starts at 6
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.delete_topics(["orders"], operation_timeout=10)["orders"].result(15)
        broker.kill()  # before any periodic checkpoint
        broker.start()
        create_topic(broker.bootstrap, "orders")
        _produce(broker.bootstrap, "orders", 3)
        broker.kill()
        broker.start()
        # The checkpoint still named the deleted partition: the new one started at 6, past its end.
        assert _low_watermark(broker.bootstrap, "orders") == 0
        assert _consume(broker.bootstrap, "orders", 3) == [b"value-0", b"value-1", b"value-2"]
    finally:
        assert broker.stop() == 0


# ----- helpers ---------------------------------------------------------------------------------------


def _produce(bootstrap: str, topic: str, count: int, partitions: int = 1) -> None:
    """``count`` keyed records (three keys), one batch each, timestamps a second apart."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    first = (int(time.time()) - 3600) * 1000
    errors: list[str] = []
    for i in range(count):
        producer.produce(
            topic,
            value=f"value-{i}".encode(),
            key=f"key-{i % 3 + count - 3}".encode(),
            partition=i % partitions,
            timestamp=first + i * 1000,
            on_delivery=lambda error, message: errors.append(str(error)) if error else None,
        )
        producer.flush(10)
    assert errors == []


def _consume(bootstrap: str, topic: str, count: int) -> list[bytes]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "deletion-test", "enable.auto.commit": False}
    )
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        values: list[bytes] = []
        deadline = time.monotonic() + 20
        while len(values) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                values.append(bytes(message.value() or b""))
        return values
    finally:
        consumer.close()


def _low_watermark(bootstrap: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "deletion-test"})
    try:
        low, _ = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=5, cached=False)
        return int(low)
    finally:
        consumer.close()


def _record_count(broker: BrokerProcess, topic: str) -> int:
    return sum(len(batch.records) for batch in stored_batches(broker.port, topic, 0))


def _last_values(broker: BrokerProcess, topic: str) -> dict[bytes | None, bytes | None]:
    return {r.key: r.value for b in stored_batches(broker.port, topic, 0) for r in b.records}


def _children(broker: BrokerProcess) -> list[str]:
    """The data dir's partition directories (the internal topics' aside)."""
    return sorted(p.name for p in broker.data_dir.iterdir() if p.is_dir() and not p.name.startswith("__"))


def _open_files(pid: int, marker: str) -> list[str]:
    """What the broker's file descriptors point at, for the paths containing ``marker``."""
    found = []
    fd_dir = Path(f"/proc/{pid}/fd")
    for fd in os.listdir(fd_dir):
        try:
            target = os.readlink(fd_dir / fd)
        except OSError:
            continue  # closed meanwhile
        if marker in target:
            found.append(target)
    return found
