"""Independent oracles: kafka-python (primary) and aiokafka (for codecs kafka-python lacks libraries for).

kafka-python 3.0.12 needs python-snappy, lz4 and zstandard for those codecs (the dev extra installs
them; a test whose codec is missing skips, or fails under CI). aiokafka implements every codec over cramjam.
"""

from __future__ import annotations

from typing import Any

import kafka.codec
from aiokafka.record.default_records import DefaultRecordBatchBuilder as AioDefaultRecordBatchBuilder
from aiokafka.record.legacy_records import LegacyRecordBatchBuilder as AioLegacyRecordBatchBuilder
from aiokafka.record.memory_records import MemoryRecords as AioMemoryRecords
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatch, LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

Header = tuple[str, bytes | None]
RecordTuple = tuple[int, int | None, bytes | None, bytes | None, list[Header]]

KAFKA_PYTHON_CODECS = {
    0: True,
    1: kafka.codec.has_gzip(),
    2: kafka.codec.has_snappy(),
    3: kafka.codec.has_lz4(),
    4: kafka.codec.has_zstd(),
}
KAFKA_PYTHON_MISSING = {2: "python-snappy", 3: "lz4", 4: "zstandard"}


def skip_reason(codec: int) -> str:
    return (
        f"kafka-python needs the {KAFKA_PYTHON_MISSING.get(codec)} package for codec {codec}; not installed"
    )


def v2_batch(
    records: list[tuple[int, bytes | None, bytes | None, list[Header]]],
    compression: int = 0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    is_transactional: bool = False,
    *,
    library: str = "kafka-python",
) -> bytearray:
    """A v2 batch written by an oracle; records are (timestamp, key, value, headers), offsets 0..n-1."""
    cls: Any = DefaultRecordBatchBuilder if library == "kafka-python" else AioDefaultRecordBatchBuilder
    builder = cls(
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
    return bytearray(builder.build())


def legacy_set(
    magic: int,
    records: list[tuple[int, int | None, bytes | None, bytes | None]],
    compression: int = 0,
    *,
    library: str = "kafka-python",
) -> bytearray:
    """A message set written by an oracle; records are (offset, timestamp, key, value)."""
    cls: Any = LegacyRecordBatchBuilder if library == "kafka-python" else AioLegacyRecordBatchBuilder
    builder = cls(magic=magic, compression_type=compression, batch_size=1 << 30)
    for offset, timestamp, key, value in records:
        builder.append(offset, timestamp=timestamp, key=key, value=value, headers=[])
    return bytearray(builder.build())


def read_records(buf: bytes | bytearray, *, library: str = "kafka-python") -> list[RecordTuple]:
    """Every record an oracle's MemoryRecords finds, as (offset, timestamp, key, value, headers)."""
    cls: Any = MemoryRecords if library == "kafka-python" else AioMemoryRecords
    out: list[RecordTuple] = []
    records = cls(bytes(buf))
    while records.has_next():
        batch: Any = records.next_batch()
        if batch is None:
            break
        for record in batch:
            headers = [(k, None if v is None else bytes(v)) for k, v in record.headers]
            out.append((record.offset, record.timestamp, _bytes(record.key), _bytes(record.value), headers))
    return out


def _bytes(data: Any) -> bytes | None:
    return None if data is None else bytes(data)


__all__ = [
    "KAFKA_PYTHON_CODECS",
    "DefaultRecordBatch",
    "LegacyRecordBatch",
    "legacy_set",
    "read_records",
    "skip_reason",
    "v2_batch",
]
