"""The coordinator runtime: the partitions of an internal topic as shards, loaded by replay, written by
append; the coordinators run on it (groups over `__consumer_offsets`, transactions over
`__transaction_state`, share-group state over `__share_group_state`).

Like Kafka's CoordinatorRuntime, a partition is the shard of the keys (group ids, transactional ids)
hashing to it: loaded when this broker becomes its leader (its records replayed, newest last), dropped
when it stops leading it. A partition is LOADING until its records are replayed; requests for its keys
meanwhile get COORDINATOR_LOAD_IN_PROGRESS (so do those of a partition this broker's metadata says it
leads before its load started), keys of partitions another broker leads NOT_COORDINATOR.
Appends are synchronous on the broker's loop, so a coordinator step and its write are never
interleaved with another step; the state a client is told about is always in the log first.
The records are the coordinator's own (group_runtime.py, txn_state_log.py say which); the runtime
builds RecordBatch v2 batches of them. A partition's load (its records and transaction markers replayed
into the shard) is loader.py's; which partition holds a key, partitioning.py's.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from odradek.coordinator.loader import CoordinatorShard, LoadingRound, replay_partition
from odradek.coordinator.partitioning import check_key_length, partition_for
from odradek.coordinator.ports import InternalTopics, MetadataView
from odradek.partition.leader_append import LeaderAppend
from odradek.partition.leadership import Leadership
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.protocol.records import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, Compression, RecordBatchBuilder
from odradek.storage.log_manager import LogManager
from odradek.storage.partition import TopicPartition
from odradek.storage.producer_state import AppendOrigin

log = logging.getLogger("odradek.coordinator")

#: Most bytes of records per batch (the topic's max.message.bytes is about 1 MB).
_BATCH_BYTES = 512 * 1024


class PartitionState(enum.Enum):
    LOADING = "loading"
    ACTIVE = "active"
    FAILED = "failed"


class LogRecord(Protocol):
    def encode(self) -> tuple[bytes, bytes | None]: ...


ShardT = TypeVar("ShardT", bound=CoordinatorShard)


#: How often the same reason an internal topic cannot be created is said at WARNING.
CREATION_REFUSAL_LOG_INTERVAL_S = 60.0


class CoordinatorRuntime(ABC, Generic[ShardT]):
    """The shards of one internal topic on this broker. Subclasses say how a shard is made."""

    #: What a key is called in errors, and the error a key too long to store is answered with.
    KEY_NAME: ClassVar[str] = "key"
    KEY_ERROR: ClassVar[ErrorCode] = ErrorCode.INVALID_REQUEST

    def __init__(
        self,
        topic: str,
        keys: str,
        default_partitions: int,
        load_buffer_size: int,
        compression: Compression,
        logs: LogManager,
        cluster: MetadataView,
        node_id: int,
        clock: Callable[[], float] = time.time,
        *,
        leadership: Leadership,
    ) -> None:
        self.topic = topic
        self.keys = keys
        self.default_partitions = default_partitions
        self.load_buffer_size = load_buffer_size
        self.compression = compression
        self.logs = logs
        self.cluster = cluster
        self.node_id = node_id
        self.clock = clock
        #: Which partitions this broker leads, at which epoch, and the one entry every write appends
        #: through (its leader check, min ISR and epoch): the replica manager, never the metadata cache
        #: (which UpdateMetadata moves ahead of the LeaderAndIsr it announces).
        self.leadership = leadership
        self.shards: dict[int, ShardT] = {}
        self.states: dict[int, PartitionState] = {}
        self.loads: dict[int, asyncio.Task[None]] = {}
        #: The leader epoch each shard was made at: its coordinator epoch.
        self.leader_epochs: dict[int, int] = {}
        self._loading = LoadingRound(topic, keys)
        self._creation: asyncio.Task[bool] | None = None
        #: Why the topic could not be created last time, and when that was last warned about: every
        #: FindCoordinator tries again, and a retrying client must not flood the log.
        self._creation_refused: tuple[str, float] | None = None

    @abstractmethod
    def new_shard(self, partition: int) -> ShardT:
        """The empty state of one partition's coordinator (a group or transaction shard)."""

    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    @property
    def num_partitions(self) -> int:
        topic = self.cluster.topic(self.topic)
        if topic is not None:
            return len(topic.partitions)
        return self.default_partitions

    def partition_for(self, key: str) -> int:
        check_key_length(key, self.KEY_NAME, self.KEY_ERROR)
        return partition_for(key, self.num_partitions)

    # ----- the topic -------------------------------------------------------------------------------

    def topic_creation(self, create: Callable[[], Coroutine[Any, Any, bool]]) -> asyncio.Task[bool]:
        """The creation of the topic under way (`create` started if there is none): concurrent
        callers share one."""
        if self._creation is None or self._creation.done():
            self._creation = asyncio.get_running_loop().create_task(create())
        return self._creation

    async def create_topic(
        self, internal_topics: InternalTopics, replication: int, configs: dict[str, str]
    ) -> bool:
        """Create the topic (internal, `default_partitions`) through `internal_topics`, which decides
        its replicas; True if it exists now. A refusal is said (not too often) and tried again on the
        next request, as Kafka waits for enough brokers."""
        try:
            refused = await internal_topics.create(self.topic, self.default_partitions, replication, configs)
        except Exception:
            log.exception("creating %s failed", self.topic)
            return False
        if refused is not None:
            self._creation_refused_because(refused)
            return False
        self._creation_refused = None
        return self.cluster.topic(self.topic) is not None

    def _creation_refused_because(self, reason: str) -> None:
        """A WARNING for a new reason, or once a minute for the same; DEBUG in between."""
        now = time.monotonic()
        said = self._creation_refused
        if said is None or said[0] != reason or now - said[1] >= CREATION_REFUSAL_LOG_INTERVAL_S:
            self._creation_refused = (reason, now)
            log.warning("not creating %s yet: %s", self.topic, reason)
        else:
            log.debug("not creating %s yet: %s", self.topic, reason)

    # ----- shards ----------------------------------------------------------------------------------

    def shard_for(self, key: str) -> ShardT:
        """The active shard holding `key`, or the error a client should retry on."""
        partition = self.partition_for(key)
        state = self.states.get(partition)
        if state is PartitionState.ACTIVE:
            return self.shards[partition]
        if state is PartitionState.LOADING:
            raise KafkaError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
        if self.cluster.topic(self.topic) is None:
            raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        cached = self.cluster.partition(self.topic, partition)
        if state is None and cached is not None and cached.leader_id == self.node_id:
            # FindCoordinator names this broker (its metadata says it leads the partition) and the
            # leadership hook has yet to start the load (the transaction coordinator's runs after the
            # LeaderAndIsr): the client is to retry here. NOT_COORDINATOR would send it back to
            # FindCoordinator, and librdkafka never retries an OffsetFetch answered so.
            raise KafkaError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
        raise KafkaError(ErrorCode.NOT_COORDINATOR)

    def active_shards(self) -> list[ShardT]:
        return [self.shards[p] for p, s in sorted(self.states.items()) if s is PartitionState.ACTIVE]

    def all_loaded(self) -> bool:
        return all(state is not PartitionState.LOADING for state in self.states.values())

    def leader_epoch(self, partition: int) -> int:
        epoch = self.leadership.leader_epoch(self.topic, partition)
        return epoch if epoch is not None else 0

    def leads(self, partition: int) -> bool:
        """Whether this broker leads `partition` (its shard is to be loaded here)."""
        return self.leadership.leader_epoch(self.topic, partition) is not None

    def become_leader(self, partition: int) -> None:
        """Start loading `partition` (this broker now leads it); a no-op if it is loaded or loading."""
        if partition in self.states and self.states[partition] is not PartitionState.FAILED:
            return
        if not self.loads:
            self._loading = LoadingRound(self.topic, self.keys)
        shard = self.new_shard(partition)
        self.shards[partition] = shard
        self.states[partition] = PartitionState.LOADING
        self.leader_epochs[partition] = self.leader_epoch(partition)
        self.loads[partition] = asyncio.get_running_loop().create_task(self._load(partition, shard))

    def resign(self, partition: int) -> None:
        """Stop coordinating `partition` (another broker leads it now, or we are stopping)."""
        task = self.loads.pop(partition, None)
        if task is not None:
            task.cancel()
        shard = self.shards.pop(partition, None)
        self.states.pop(partition, None)
        self.leader_epochs.pop(partition, None)
        if shard is not None:
            shard.unload()

    async def wait_loaded(self) -> None:
        await asyncio.gather(*self.loads.values(), return_exceptions=True)

    async def _load(self, partition: int, shard: ShardT) -> None:
        started = time.monotonic()
        try:
            count = await replay_partition(self.logs, self.topic, partition, shard, self.load_buffer_size)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("loading %s partition %d failed", self.topic, partition)
            self.states[partition] = PartitionState.FAILED
            self._loading.failed += 1
        else:
            if self.shards.get(partition) is shard:
                self.states[partition] = PartitionState.ACTIVE
                shard.on_loaded()
                self._loading.add(count, shard.loaded_keys())
                log.debug(
                    "replayed %d records of %s-%d in %.3fs",
                    count,
                    self.topic,
                    partition,
                    time.monotonic() - started,
                )
        finally:
            self.loads.pop(partition, None)
            if not self.loads:
                self._loading.report()
                self._loading = LoadingRound(self.topic, self.keys)

    # ----- appends ---------------------------------------------------------------------------------

    def append_records(
        self,
        partition: int,
        records: Sequence[LogRecord],
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = NO_PRODUCER_EPOCH,
    ) -> LeaderAppend:
        """Append `records` to `partition` (this broker must lead it) in as few batches as fit, through
        the replica manager's one entry as an acks=-1 append (Kafka's CoordinatorPartitionWriter), and
        return what the append made (`complete` answers once it is committed; the offset after its
        last record is the high watermark that makes it so). Raises
        KafkaError(NOT_ENOUGH_REPLICAS) with nothing appended when the ISR is under min.insync.replicas,
        NOT_COORDINATOR when this broker does not lead the partition, else what the log raises
        (write_errors.py says what a client is told)."""
        now = self.now_ms()
        batches = bytearray()
        transactional = producer_id != NO_PRODUCER_ID

        def new_builder() -> RecordBatchBuilder:
            return RecordBatchBuilder(
                0,
                compression=self.compression,
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
        tp = TopicPartition(self.topic, partition)
        try:
            made = self.leadership.append_records(tp, batches, AppendOrigin.COORDINATOR, required_acks=-1)
        except KafkaError as refused:
            if refused.error_code is ErrorCode.NOT_ENOUGH_REPLICAS:
                raise
            raise KafkaError(ErrorCode.NOT_COORDINATOR) from None  # not led here (any more)
        return made

    async def complete(self, made: LeaderAppend, timeout_ms: int) -> ErrorCode:
        """A write's outcome (Kafka's runtime completes it when the high watermark passes it): NONE once
        fsynced if its log's flush settings make it due and on the in-sync replicas, else the append
        error a coordinator maps for its client (write_errors.py), through the replica manager's
        `complete_appends` as a Produce's. A leader alone in its ISR (a single node) waits for no one."""
        [outcome] = await self.leadership.complete_appends([made], timeout_ms)
        return outcome

    async def complete_log_end(self, partition: int, timeout_ms: int) -> ErrorCode:
        """As `complete` for everything `partition` holds now: a step that wrote nothing is answered
        once what it stands on, an earlier write not yet committed, is (Kafka's runtime defers such a
        response to the shard's last written offset)."""
        return await self.leadership.complete_log_end(TopicPartition(self.topic, partition), timeout_ms)


class ShardFactoryRuntime(CoordinatorRuntime[ShardT]):
    """A runtime whose shards `make_shard` makes: built by `server/` for a coordinator whose own modules
    then need none of the cluster's types (the share coordinator's, coordinator/share/)."""

    def __init__(
        self,
        make_shard: Callable[[int], ShardT],
        topic: str,
        keys: str,
        default_partitions: int,
        load_buffer_size: int,
        compression: Compression,
        logs: LogManager,
        cluster: MetadataView,
        node_id: int,
        clock: Callable[[], float] = time.time,
        *,
        leadership: Leadership,
    ) -> None:
        super().__init__(
            topic,
            keys,
            default_partitions,
            load_buffer_size,
            compression,
            logs,
            cluster,
            node_id,
            clock,
            leadership=leadership,
        )
        self.make_shard = make_shard

    def new_shard(self, partition: int) -> ShardT:
        return self.make_shard(partition)
