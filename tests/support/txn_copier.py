"""A transactional copier (consume-transform-produce, as Kafka's TransactionalMessageCopier): reads an
input topic read_committed from the group's committed offsets, writes each record to the same partition
of an output topic and commits its offsets in the same transaction. Run as a process, so tests can
SIGKILL it in the middle of a transaction; it exits once the input has been idle for `idle_s`.

    python -m tests.support.txn_copier BOOTSTRAP INPUT OUTPUT TRANSACTIONAL_ID GROUP PARTITIONS [PAUSE_S]

PAUSE_S (0 by default) is slept inside each transaction, so a test's kills land mid-copy.
"""

from __future__ import annotations

import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition

BATCH = 10


def copy(
    bootstrap: str, source: str, sink: str, transactional_id: str, group: str, partitions: int, pause_s: float
) -> None:
    producer = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": transactional_id, "linger.ms": 5}
    )
    producer.init_transactions(30)  # first: it aborts what a killed predecessor left open
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    wanted = [TopicPartition(source, p) for p in range(partitions)]
    committed = consumer.committed(wanted, 30)
    consumer.assign([TopicPartition(source, tp.partition, max(tp.offset, 0)) for tp in committed])
    idle_since = time.monotonic()
    while time.monotonic() - idle_since < 3:
        messages = [m for m in consumer.consume(BATCH, 0.5) if m.error() is None]
        if not messages:
            continue
        idle_since = time.monotonic()
        producer.begin_transaction()
        for message in messages:
            producer.produce(sink, key=message.key(), value=message.value(), partition=message.partition())
        time.sleep(pause_s)
        positions = consumer.position(consumer.assignment())
        producer.send_offsets_to_transaction(positions, consumer.consumer_group_metadata(), 30)
        producer.commit_transaction(30)
    consumer.close()


if __name__ == "__main__":
    bootstrap, source, sink, transactional_id, group, partitions = sys.argv[1:7]
    pause = float(sys.argv[7]) if len(sys.argv) > 7 else 0.0
    copy(bootstrap, source, sink, transactional_id, group, int(partitions), pause)
