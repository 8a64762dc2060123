"""Helpers that build and read records with kafka-python (and aiokafka), the independent oracles."""

from __future__ import annotations

from typing import Any

from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatch, LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

Header = tuple[str, bytes | None]
RecordTuple = tuple[int, int, bytes | None, bytes | None, list[Header]]


def kafka_python_v2_batch(
    records: list[tuple[int, bytes | None, bytes | None, list[Header]]],
    compression: int = 0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    is_transactional: bool = False,
) -> bytearray:
    """A v2 batch written by kafka-python; records are (timestamp, key, value, headers), offsets 0..n-1."""
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=compression,
        is_transactional=is_transactional,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        batch_size=1 << 30,
    )
    for offset, (timestamp, key, value, headers) in enumerate(records):
        builder.append(offset, timestamp=timestamp, key=key, value=value, headers=headers)
    return builder.build()


def kafka_python_legacy_set(
    magic: int, records: list[tuple[int, int | None, bytes | None, bytes | None]], compression: int = 0
) -> bytearray:
    """A message set written by kafka-python; records are (offset, timestamp, key, value)."""
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=compression, batch_size=1 << 30)
    for offset, timestamp, key, value in records:
        builder.append(offset, timestamp=timestamp, key=key, value=value)
    return builder.build()


def read_with_kafka_python(buf: bytes | bytearray) -> list[RecordTuple]:
    """Every record kafka-python's MemoryRecords finds, as (offset, timestamp, key, value, headers)."""
    out: list[RecordTuple] = []
    records = MemoryRecords(bytes(buf))
    while records.has_next():
        batch: Any = records.next_batch()
        if batch is None:
            break
        for record in batch:
            out.append((record.offset, record.timestamp, record.key, record.value, list(record.headers)))
    return out


__all__ = [
    "DefaultRecordBatch",
    "LegacyRecordBatch",
    "kafka_python_legacy_set",
    "kafka_python_v2_batch",
    "read_with_kafka_python",
]
