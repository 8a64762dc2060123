"""Fetch v0-3 (a consumer's): the stored v2 batches read for a partition, converted down to MessageSet
v0 (Fetch v0-1) or v1 (v2-3) by jobs the fetch runs in the record workers, once it is ready to be
answered.

Converting decodes every record and encodes it again in Python, so it never runs on the event loop,
and it is lazy, as Kafka's LazyDownConversionRecords: each partition's records are converted up to
its limit (the bytes its read was given; at least one record, however large), and one request
converts at most DOWN_CONVERSION_MAX_RECORDS records (then at least one per partition). What is not
converted is fetched by the consumer's next request, from the offset after the last it got; a batch
of hundreds of thousands of records in a few hundred bytes of zstd is read a part at a time.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from odradek.protocol.codec_error import CodecError
from odradek.protocol.records import down_convert
from odradek.storage.record_workers import Checkpoint

#: Records one Fetch request converts down at most (beyond the first of each partition).
DOWN_CONVERSION_MAX_RECORDS = 100_000


@dataclass(frozen=True, slots=True)
class Conversion:
    """One partition's read to convert: its v2 bytes, the offset the fetch asked for, its limit."""

    data: bytes
    fetch_offset: int
    max_bytes: int


def down_conversion_jobs(
    reads: dict[int, Conversion], fetch_version: int
) -> dict[int, Callable[[Checkpoint], bytes | CodecError]]:
    """A job per read, converting it to the message set of the fetch's version (or returning the error
    that stopped it); the jobs share the request's record budget."""
    magic = 0 if fetch_version <= 1 else 1
    budget = _RecordBudget(DOWN_CONVERSION_MAX_RECORDS)
    return {key: _job(read, magic, budget) for key, read in reads.items()}


def _job(read: Conversion, magic: int, budget: _RecordBudget) -> Callable[[Checkpoint], bytes | CodecError]:
    def convert(checkpoint: Checkpoint) -> bytes | CodecError:
        try:
            converted = down_convert(
                read.data,
                magic,
                first_offset=read.fetch_offset,
                max_bytes=read.max_bytes,
                max_records=budget.remaining(),
                progress=lambda _: checkpoint(),
            )
        except CodecError as error:  # the stored batch does not read: answered as an error
            return error
        budget.take(converted.records)
        return converted.data

    return convert


class _RecordBudget:
    """Records a request may still convert (its partitions' jobs may run in different threads)."""

    def __init__(self, records: int) -> None:
        self._records = records
        self._lock = threading.Lock()

    def remaining(self) -> int:
        with self._lock:
            return max(self._records, 0)

    def take(self, records: int) -> None:
        with self._lock:
            self._records -= records
