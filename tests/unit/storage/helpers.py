"""Batches built with the records module's builder, a controllable clock, and small log helpers."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from odradek.protocol.records import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    Compression,
    ControlRecordType,
    Record,
    RecordBatchBuilder,
    build_end_transaction_marker_batch,
    iter_record_batches,
)
from odradek.storage.config import LogConfig
from odradek.storage.log import Log

START_MS = 1_700_000_000_000


class FakeClock:
    def __init__(self, now: int = START_MS) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> None:
        self.now += ms


KV = tuple[bytes | None, bytes | None]


def batch(
    values: Sequence[bytes | KV] = (b"v",),
    *,
    timestamp: int = START_MS,
    timestamps: Sequence[int] | None = None,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    transactional: bool = False,
    compression: Compression = Compression.NONE,
) -> bytearray:
    """A client-style batch (base offset 0) of ``values`` (plain values, or (key, value) pairs)."""
    builder = RecordBatchBuilder(
        0,
        compression=compression,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        is_transactional=transactional,
    )
    for i, item in enumerate(values):
        key, value = item if isinstance(item, tuple) else (None, item)
        builder.append(timestamps[i] if timestamps is not None else timestamp, key, value)
    return bytearray(builder.build())


def marker(commit: bool, producer_id: int, producer_epoch: int = 0, timestamp: int = START_MS) -> bytearray:
    control = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
    return bytearray(
        build_end_transaction_marker_batch(
            control,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            coordinator_epoch=0,
            timestamp=timestamp,
        )
    )


def open_log(directory: Path, clock: FakeClock, **config: object) -> Log:
    return Log.open(directory, LogConfig(**config), clock=clock)  # type: ignore[arg-type]


def read_records(log: Log, offset: int = 0, max_bytes: int = 1 << 30, **kwargs: object) -> list[Record]:
    """Every data record a consumer would get reading from ``offset`` to the end (several fetches)."""
    records: list[Record] = []
    while True:
        info = log.read(offset, max_bytes, **kwargs)  # type: ignore[arg-type]
        data = info.read_bytes()
        batches = list(iter_record_batches(data))
        if not batches:
            return records
        for b in batches:
            if b.is_control:  # markers: a consumer never shows them
                continue
            records.extend(r for r in b.records if r.offset >= offset)
        offset = batches[-1].next_offset


def values(records: Sequence[Record]) -> list[bytes | None]:
    return [r.value for r in records]


def led_alone(log: Log) -> Log:
    """`log` as a leader alone in its ISR keeps it (partition/replica_manager.py makes every single-node
    partition one): its high watermark follows its log end. LogManager opens logs with a follower's rule,
    the high watermark moved by nobody until their leadership says."""
    log.auto_high_watermark = True
    log.update_high_watermark(log.log_end_offset)
    return log
