"""The loading of a coordinator partition (Kafka's CoordinatorLoaderImpl): its records read from the
log start to the log end and replayed into a shard, transaction markers handed to it as found.

The runtime starts a load when this broker becomes the partition's leader and makes the shard active
when it ends; partitions loaded together are summed up in one log line (`LoadingRound`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Protocol

from odradek.protocol.codec_error import CodecError
from odradek.protocol.records import ControlRecordType, RecordBatch, iter_record_batches
from odradek.protocol.records.control import read_end_transaction_marker
from odradek.storage.fetch import FetchIsolation
from odradek.storage.log_manager import LogManager

log = logging.getLogger("odradek.coordinator")


class CoordinatorShard(Protocol):
    """What the runtime needs of a shard: replay of its partition's records and markers, and the
    moments it becomes active and stops being so."""

    partition: int

    def replay_log_record(
        self, key: bytes | None, value: bytes | None, offset: int, producer_id: int | None
    ) -> bool:
        """Replay one record (of a transactional batch of `producer_id`, if given); False when it was
        not one of the shard's (skipped)."""
        ...

    def replay_marker(self, producer_id: int, committed: bool) -> None: ...

    def on_loaded(self) -> None: ...

    def unload(self) -> None: ...

    def loaded_keys(self) -> int:
        """How many groups / transactional ids the shard holds (for the loading log line)."""
        ...


class LoadingRound:
    """Partitions loaded together (all 50 at startup, say), summed up in one log line when the last
    one is done rather than a line per partition."""

    def __init__(self, topic: str, keys: str) -> None:
        self.topic = topic
        self.keys = keys
        self.started = time.monotonic()
        self.partitions = 0
        self.failed = 0
        self.loaded = 0
        self.records = 0

    def add(self, records: int, loaded: int) -> None:
        self.partitions += 1
        self.records += records
        self.loaded += loaded

    def report(self) -> None:
        if not self.partitions and not self.failed:
            return
        log.info(
            "loaded %d %s partitions in %.3fs: %d %s, %d records replayed%s",
            self.partitions,
            self.topic,
            time.monotonic() - self.started,
            self.loaded,
            self.keys,
            self.records,
            f", {self.failed} failed (logged above)" if self.failed else "",
        )


async def replay_partition(
    logs: LogManager, topic: str, partition: int, shard: CoordinatorShard, load_buffer_size: int
) -> int:
    """Replay what `topic`-`partition` holds into `shard`, reading `load_buffer_size` bytes at a time
    off the event loop; how many records the shard took. An unreadable record is skipped (logged)."""
    log_ = logs.get_log(topic, partition)
    if log_ is None:
        return 0
    offset = log_.log_start_offset
    end = log_.log_end_offset
    count = 0
    while offset < end:
        info = log_.read(offset, load_buffer_size, isolation=FetchIsolation.LOG_END, min_one_message=True)
        if not info.regions:
            break
        data = await asyncio.to_thread(info.read_bytes)
        next_offset = offset
        for batch in iter_record_batches(data):
            next_offset = batch.next_offset
            if batch.is_control:
                if batch.base_offset >= offset:
                    _replay_marker(shard, batch)
                continue
            producer_id = batch.producer_id if batch.is_transactional else None
            for record in batch.records:
                if record.offset < offset:
                    continue
                try:
                    count += shard.replay_log_record(record.key, record.value, record.offset, producer_id)
                except (CodecError, ValueError) as error:
                    log.warning(
                        "skipping unreadable record at %s-%d offset %d: %s",
                        topic,
                        partition,
                        record.offset,
                        error,
                    )
        if next_offset <= offset:
            break
        offset = next_offset
    return count


def _replay_marker(shard: CoordinatorShard, batch: RecordBatch) -> None:
    try:
        marker = read_end_transaction_marker(batch)
    except (CodecError, ValueError):
        return  # not a transaction marker
    shard.replay_marker(batch.producer_id, marker.control_type is ControlRecordType.COMMIT)
