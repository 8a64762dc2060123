"""Reading a topic the way a read_committed consumer sees it, to its end, with confluent-kafka."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, TopicPartition


def read_committed_values(
    bootstrap: str, topic: str, partitions: int, timeout_s: float = 20
) -> dict[int, list[bytes]]:
    """Each partition's record values up to its last stable offset, in offset order."""
    read = read_committed_by_offset(bootstrap, topic, partitions, timeout_s)
    return {p: [read[p][offset] for offset in sorted(read[p])] for p in read}


def read_committed_by_offset(
    bootstrap: str, topic: str, partitions: int, timeout_s: float = 20
) -> dict[int, dict[int, bytes]]:
    """Each partition's records (offset -> value) up to its last stable offset, as a fresh
    read_committed consumer reads them."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{topic}-{time.monotonic_ns()}",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        read: dict[int, dict[int, bytes]] = {p: {} for p in range(partitions)}
        done: set[int] = set()
        deadline = time.monotonic() + timeout_s
        while len(done) < partitions and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error() is not None:
                done.add(message.partition())  # end of the partition (up to the LSO)
                continue
            read[message.partition()][message.offset()] = message.value()
        assert len(done) == partitions, f"{topic}: only partitions {sorted(done)} read to their end"
        return read
    finally:
        consumer.close()
