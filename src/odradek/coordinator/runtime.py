"""The coordinator runtime: `__consumer_offsets` partitions as shards, loaded by replay, written by append.

Like Kafka's CoordinatorRuntime, every coordinator step returns a CoordinatorResult; `write` appends
its records to the shard's partition (one atomic append of RecordBatch v2 batches built with the
records module) and only then replays them and runs the step's callback, so the state a client is
told about is always in the log. Appends are synchronous on the broker's loop, so a step and its
write are never interleaved with another step.

A partition is LOADING from when this broker becomes its leader until its records are replayed;
requests for its groups meanwhile get COORDINATOR_LOAD_IN_PROGRESS. Groups of partitions another
broker leads get NOT_COORDINATOR.

TxnOffsetCommit records are appended in a transactional batch of the producer (`write_transactional`)
and held in the shard per producer id; the COMMIT or ABORT marker the transaction coordinator writes
to the partition applies or drops them, on the live path and again on replay.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import time
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from odradek.coordinator.records import CoordinatorRecord, UnknownRecordType, decode_record
from odradek.coordinator.result import CoordinatorResult
from odradek.coordinator.settings import OFFSETS_TOPIC, GroupSettings
from odradek.coordinator.shard import GroupShard
from odradek.coordinator.timer import CoordinatorTimer, Operation, Runner
from odradek.protocol.codec_error import CodecError
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.protocol.records import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    Compression,
    ControlRecordType,
    RecordBatch,
    RecordBatchBuilder,
    iter_record_batches,
)
from odradek.protocol.records.control import read_end_transaction_marker
from odradek.storage import errors as storage_errors
from odradek.storage.fetch import FetchIsolation
from odradek.storage.partition import TopicPartition
from odradek.storage.producer_state import AppendOrigin

log = logging.getLogger("odradek.coordinator")

T = TypeVar("T")
#: Most bytes of records per batch (the topic's max.message.bytes is about 1 MB).
_BATCH_BYTES = 512 * 1024


class PartitionState(enum.Enum):
    LOADING = "loading"
    ACTIVE = "active"
    FAILED = "failed"


def java_string_hash(text: str) -> int:
    """Java's String.hashCode (over UTF-16 code units, 32-bit overflow), which Kafka hashes group ids with."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def partition_for(group_id: str, partitions: int) -> int:
    """Kafka's `Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions` (abs(MIN_VALUE) is 0)."""
    h = java_string_hash(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


class _LoadingRound:
    """Partitions loaded together (all 50 at startup, say), summed up in one log line when the last
    one is done rather than a line per partition."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.partitions = 0
        self.failed = 0
        self.groups = 0
        self.records = 0

    def add(self, records: int, groups: int) -> None:
        self.partitions += 1
        self.records += records
        self.groups += groups

    def report(self) -> None:
        if not self.partitions and not self.failed:
            return
        log.info(
            "loaded %d %s partitions in %.3fs: %d groups, %d records replayed%s",
            self.partitions,
            OFFSETS_TOPIC,
            time.monotonic() - self.started,
            self.groups,
            self.records,
            f", {self.failed} failed (logged above)" if self.failed else "",
        )


class CoordinatorRuntime:
    def __init__(
        self,
        settings: GroupSettings,
        logs: Any,
        cluster: Any,
        node_id: int,
        notify_append: Callable[[Hashable], None] | None = None,
        clock: Callable[[], float] = time.time,
        timer_factory: Callable[[Runner], CoordinatorTimer] = CoordinatorTimer,
    ) -> None:
        self.settings = settings
        self.logs = logs
        self.cluster = cluster
        self.node_id = node_id
        self.notify_append = notify_append
        self.clock = clock
        self.timer_factory = timer_factory
        self.shards: dict[int, GroupShard] = {}
        self.states: dict[int, PartitionState] = {}
        self.loads: dict[int, asyncio.Task[None]] = {}
        self._loading = _LoadingRound()

    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    @property
    def num_partitions(self) -> int:
        topic = self.cluster.topic(OFFSETS_TOPIC)
        if topic is not None:
            return len(topic.partitions)
        return self.settings.offsets_topic_num_partitions

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.num_partitions)

    # ----- shards ----------------------------------------------------------------------------------

    def shard_for(self, group_id: str) -> GroupShard:
        """The active shard holding `group_id`, or the error a client should retry on."""
        partition = self.partition_for(group_id)
        state = self.states.get(partition)
        if state is PartitionState.ACTIVE:
            return self.shards[partition]
        if state is PartitionState.LOADING:
            raise KafkaError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
        if self.cluster.topic(OFFSETS_TOPIC) is None:
            raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        raise KafkaError(ErrorCode.NOT_COORDINATOR)

    def active_shards(self) -> list[GroupShard]:
        return [self.shards[p] for p, s in sorted(self.states.items()) if s is PartitionState.ACTIVE]

    def all_loaded(self) -> bool:
        return all(state is not PartitionState.LOADING for state in self.states.values())

    def become_leader(self, partition: int) -> None:
        """Start loading `partition` (this broker now leads it); a no-op if it is loaded or loading."""
        if partition in self.states and self.states[partition] is not PartitionState.FAILED:
            return
        if not self.loads:
            self._loading = _LoadingRound()
        timer = self.timer_factory(lambda key, operation: self.run_timer(partition, key, operation))
        shard = GroupShard(partition, self.settings, timer, self.now_ms, self.cluster)
        self.shards[partition] = shard
        self.states[partition] = PartitionState.LOADING
        self.loads[partition] = asyncio.get_running_loop().create_task(self._load(partition, shard))

    def resign(self, partition: int) -> None:
        """Stop coordinating `partition` (another broker leads it now, or we are stopping)."""
        task = self.loads.pop(partition, None)
        if task is not None:
            task.cancel()
        shard = self.shards.pop(partition, None)
        self.states.pop(partition, None)
        if shard is not None:
            shard.unload()

    async def wait_loaded(self) -> None:
        await asyncio.gather(*self.loads.values(), return_exceptions=True)

    async def _load(self, partition: int, shard: GroupShard) -> None:
        started = time.monotonic()
        try:
            count = await self._replay_partition(partition, shard)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("loading __consumer_offsets partition %d failed", partition)
            self.states[partition] = PartitionState.FAILED
            self._loading.failed += 1
        else:
            if self.shards.get(partition) is shard:
                self.states[partition] = PartitionState.ACTIVE
                shard.on_loaded()
                self._loading.add(count, len(shard.groups))
                log.debug(
                    "replayed %d records of __consumer_offsets-%d in %.3fs",
                    count,
                    partition,
                    time.monotonic() - started,
                )
        finally:
            self.loads.pop(partition, None)
            if not self.loads:
                self._loading.report()
                self._loading = _LoadingRound()

    async def _replay_partition(self, partition: int, shard: GroupShard) -> int:
        log_ = self.logs.get_log(OFFSETS_TOPIC, partition)
        if log_ is None:
            return 0
        buffer_size = self.settings.offsets_load_buffer_size
        offset = log_.log_start_offset
        end = log_.log_end_offset
        count = 0
        while offset < end:
            info = log_.read(offset, buffer_size, isolation=FetchIsolation.LOG_END, min_one_message=True)
            if not info.regions:
                break
            data = await asyncio.to_thread(info.read_bytes)
            next_offset = offset
            for batch in iter_record_batches(data):
                next_offset = batch.next_offset
                if batch.is_control:
                    if batch.base_offset >= offset:
                        self._replay_marker(shard, batch)
                    continue
                producer_id = batch.producer_id if batch.is_transactional else None
                for record in batch.records:
                    if record.offset < offset:
                        continue
                    count += self._replay_one(
                        shard, partition, record.key, record.value, record.offset, producer_id
                    )
            if next_offset <= offset:
                break
            offset = next_offset
        return count

    @staticmethod
    def _replay_marker(shard: GroupShard, batch: RecordBatch) -> None:
        try:
            marker = read_end_transaction_marker(batch)
        except (CodecError, ValueError):
            return  # not a transaction marker: nothing for the groups
        shard.complete_transaction(batch.producer_id, marker.control_type is ControlRecordType.COMMIT)

    def _replay_one(
        self,
        shard: GroupShard,
        partition: int,
        key: bytes | None,
        value: bytes | None,
        at: int,
        producer_id: int | None = None,
    ) -> int:
        try:
            record = decode_record(key, value)
            if producer_id is None:
                shard.replay(record)
            else:
                shard.replay_transactional(producer_id, record)
        except UnknownRecordType:
            return 0
        except (CodecError, ValueError) as error:
            log.warning(
                "skipping unreadable record at __consumer_offsets-%d offset %d: %s", partition, at, error
            )
            return 0
        return 1

    # ----- writes ----------------------------------------------------------------------------------

    def write(self, shard: GroupShard, result: CoordinatorResult[T] | None) -> ErrorCode | None:
        """Append `result`'s records; on success replay them (if asked); tell its callback either way."""
        if result is None:
            return None
        error: ErrorCode | None = None
        if result.records:
            try:
                self._append(shard.partition, result.records)
            except Exception as failure:
                error = append_error_code(failure)
                log.warning(
                    "writing %d records to __consumer_offsets-%d failed: %s",
                    len(result.records),
                    shard.partition,
                    failure,
                )
            if error is None and result.replay:
                for record in result.records:
                    shard.replay(record)
        if result.on_appended is not None:
            result.on_appended(error)
        return error

    def write_transactional(
        self, shard: GroupShard, records: list[CoordinatorRecord], producer_id: int, producer_epoch: int
    ) -> ErrorCode | None:
        """Append TxnOffsetCommit records in a transactional batch of the producer; they wait in the
        shard until the transaction's marker is written to this partition."""
        try:
            self._append(shard.partition, records, producer_id, producer_epoch)
        except Exception as failure:
            log.warning(
                "writing transactional offsets to __consumer_offsets-%d failed: %s", shard.partition, failure
            )
            return append_error_code(failure)
        for record in records:
            shard.replay_transactional(producer_id, record)
        return None

    def run_timer(self, partition: int, key: str, operation: Operation) -> None:
        shard = self.shards.get(partition)
        if shard is None or self.states.get(partition) is not PartitionState.ACTIVE:
            return
        self.write(shard, operation())

    def _append(
        self,
        partition: int,
        records: list[CoordinatorRecord],
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = NO_PRODUCER_EPOCH,
    ) -> None:
        log_ = self.logs.get_log(OFFSETS_TOPIC, partition)
        state = self.cluster.partition(OFFSETS_TOPIC, partition)
        if log_ is None or state is None:
            raise KafkaError(ErrorCode.NOT_COORDINATOR)
        if state.leader_id != self.node_id:
            raise KafkaError(ErrorCode.NOT_COORDINATOR)
        compression = Compression(self.settings.offsets_topic_compression_codec)
        now = self.now_ms()
        batches = bytearray()
        transactional = producer_id != NO_PRODUCER_ID

        def new_builder() -> RecordBatchBuilder:
            return RecordBatchBuilder(
                0,
                compression=compression,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                is_transactional=transactional,
            )

        builder = new_builder()
        for record in records:
            key, value = record.encode()
            if len(builder) and builder.estimated_size + len(key) + len(value or b"") > _BATCH_BYTES:
                batches += builder.build()
                builder = new_builder()
            builder.append(now, key, value)
        batches += builder.build()
        log_.append(batches, leader_epoch=state.leader_epoch, origin=AppendOrigin.COORDINATOR)
        if self.notify_append is not None:
            self.notify_append(TopicPartition(OFFSETS_TOPIC, partition))


def append_error_code(error: BaseException) -> ErrorCode:
    """Kafka's mapping of a failed coordinator write to what the client is told."""
    if isinstance(error, KafkaError):
        code = error.error_code
    elif isinstance(error, storage_errors.RecordTooLargeError):
        return ErrorCode.UNKNOWN_SERVER_ERROR
    elif isinstance(error, storage_errors.LogStorageError | OSError):
        return ErrorCode.NOT_COORDINATOR
    else:
        return ErrorCode.UNKNOWN_SERVER_ERROR
    if code in (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.NOT_ENOUGH_REPLICAS,
        ErrorCode.REQUEST_TIMED_OUT,
    ):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if code in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR):
        return ErrorCode.NOT_COORDINATOR
    if code in (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE, ErrorCode.INVALID_FETCH_SIZE):
        return ErrorCode.UNKNOWN_SERVER_ERROR
    return code
