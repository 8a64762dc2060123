"""`__transaction_state`: its creation, the loading of the partitions this broker leads (replay of
TransactionLog records, newest record of a transactional id wins, a tombstone removes it), and the
appends of the transaction coordinator.

It follows the group coordinator's `__consumer_offsets` (runtime.py): a partition is the shard of the
transactional ids hashing to it (Java's String.hashCode, as Kafka), loaded when this broker becomes
its leader, dropped when it stops leading it, so cluster mode can drive it from its leadership hooks.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Hashable
from typing import Any, Final

from odradek.config.broker import BrokerConfig
from odradek.coordinator.runtime import PartitionState, append_error_code, partition_for
from odradek.coordinator.txn_metadata import TransactionMetadata
from odradek.coordinator.txn_records import TxnLogRecord, UnreadableTxnRecord, decode_txn_record
from odradek.protocol.codec_error import CodecError
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.protocol.records import Compression, RecordBatchBuilder, iter_record_batches
from odradek.storage.fetch import FetchIsolation
from odradek.storage.partition import TopicPartition
from odradek.storage.producer_state import AppendOrigin

TRANSACTION_STATE_TOPIC: Final = "__transaction_state"
log = logging.getLogger("odradek.coordinator.transactions")


class TxnStateLog:
    def __init__(
        self,
        config: BrokerConfig,
        cluster: Any,
        topics: Any,
        logs: Any,
        node_id: int,
        notify_append: Callable[[Hashable], None] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        self.cluster = cluster
        self.topics = topics
        self.logs = logs
        self.node_id = node_id
        self.notify_append = notify_append
        self.clock = clock
        self.states: dict[int, PartitionState] = {}
        #: Transactional ids of the loaded partitions (all partitions share one map: ids are unique).
        self.txns: dict[str, TransactionMetadata] = {}
        #: The same, by current producer id: every transactional Produce looks its producer up here.
        self.by_producer: dict[int, TransactionMetadata] = {}
        #: The leader epoch each loaded partition was loaded at (its coordinator epoch).
        self.loaded_epochs: dict[int, int] = {}
        self._creation: asyncio.Task[bool] | None = None

    # ----- the topic ------------------------------------------------------------------------------

    @property
    def num_partitions(self) -> int:
        topic = self.cluster.topic(TRANSACTION_STATE_TOPIC)
        if topic is not None:
            return len(topic.partitions)
        return self.config.transaction_state_log_num_partitions

    def partition_for(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.num_partitions)

    async def ensure_topic(self, single_node: bool) -> bool:
        if self.cluster.topic(TRANSACTION_STATE_TOPIC) is not None:
            return True
        if self._creation is None or self._creation.done():
            self._creation = asyncio.get_running_loop().create_task(self._create_topic(single_node))
        return await asyncio.shield(self._creation)

    async def _create_topic(self, single_node: bool) -> bool:
        brokers = max(len(self.cluster.brokers), 1)
        replication = self.config.transaction_state_log_replication_factor
        min_isr = self.config.transaction_state_log_min_isr
        if replication > brokers:
            if not single_node:
                log.warning(
                    "not creating %s: %d brokers, replication factor %d",
                    TRANSACTION_STATE_TOPIC,
                    brokers,
                    replication,
                )
                return False
            replication = brokers  # a single node is the whole cluster
            min_isr = min(min_isr, brokers)
        try:
            await self.topics.create_topic(
                TRANSACTION_STATE_TOPIC,
                self.config.transaction_state_log_num_partitions,
                replication,
                configs={
                    "cleanup.policy": "compact",
                    "compression.type": "producer",  # the coordinator writes uncompressed batches
                    "unclean.leader.election.enable": "false",
                    "min.insync.replicas": str(min_isr),
                    "segment.bytes": str(self.config.transaction_state_log_segment_bytes),
                },
                internal=True,
            )
        except KafkaError as error:
            if error.error_code is not ErrorCode.TOPIC_ALREADY_EXISTS:
                log.warning("creating %s failed: %s", TRANSACTION_STATE_TOPIC, error)
                return False
        except Exception:
            log.exception("creating %s failed", TRANSACTION_STATE_TOPIC)
            return False
        return self.cluster.topic(TRANSACTION_STATE_TOPIC) is not None

    # ----- leadership and loading -----------------------------------------------------------------

    def check_coordinator(self, transactional_id: str) -> int:
        """The partition of `transactional_id`, if this broker coordinates it and has loaded it."""
        partition = self.partition_for(transactional_id)
        state = self.states.get(partition)
        if state is PartitionState.ACTIVE:
            return partition
        if state is PartitionState.LOADING:
            raise KafkaError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
        if self.cluster.topic(TRANSACTION_STATE_TOPIC) is None:
            raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        raise KafkaError(ErrorCode.NOT_COORDINATOR)

    def coordinator_epoch(self, partition: int) -> int:
        state = self.cluster.partition(TRANSACTION_STATE_TOPIC, partition)
        return int(state.leader_epoch) if state is not None else 0

    async def load(self, partition: int) -> list[TransactionMetadata]:
        """Replay `partition` (this broker now leads it); the transactions it holds, loaded."""
        self.states[partition] = PartitionState.LOADING
        try:
            loaded = await self._replay(partition)
        except Exception:
            log.exception("loading %s-%d failed", TRANSACTION_STATE_TOPIC, partition)
            self.states[partition] = PartitionState.FAILED
            return []
        epoch = self.coordinator_epoch(partition)
        self.loaded_epochs[partition] = epoch
        for metadata in loaded.values():
            metadata.coordinator_epoch = epoch
            self.put(metadata)
        self.states[partition] = PartitionState.ACTIVE
        return list(loaded.values())

    def unload(self, partition: int) -> None:
        self.states.pop(partition, None)
        self.loaded_epochs.pop(partition, None)
        for transactional_id in [t for t in self.txns if self.partition_for(t) == partition]:
            self.remove(transactional_id)

    def put(self, metadata: TransactionMetadata, old_producer_id: int | None = None) -> None:
        """Index `metadata` (again, after a replay that may have changed its producer id)."""
        if old_producer_id is not None and self.by_producer.get(old_producer_id) is metadata:
            del self.by_producer[old_producer_id]
        self.txns[metadata.transactional_id] = metadata
        self.by_producer[metadata.producer_id] = metadata

    def remove(self, transactional_id: str) -> None:
        metadata = self.txns.pop(transactional_id, None)
        if metadata is not None and self.by_producer.get(metadata.producer_id) is metadata:
            del self.by_producer[metadata.producer_id]

    async def _replay(self, partition: int) -> dict[str, TransactionMetadata]:
        loaded: dict[str, TransactionMetadata] = {}
        log_ = self.logs.get_log(TRANSACTION_STATE_TOPIC, partition)
        if log_ is None:
            return loaded
        offset, end = log_.log_start_offset, log_.log_end_offset
        while offset < end:
            info = log_.read(
                offset,
                self.config.transaction_state_log_load_buffer_size,
                isolation=FetchIsolation.LOG_END,
                min_one_message=True,
            )
            if not info.regions:
                break
            data = await asyncio.to_thread(info.read_bytes)
            next_offset = offset
            for batch in iter_record_batches(data):
                next_offset = batch.next_offset
                for record in batch.records:
                    if record.offset >= offset:
                        self._replay_one(loaded, partition, record.key, record.value, record.offset)
            if next_offset <= offset:
                break
            offset = next_offset
        return loaded

    @staticmethod
    def _replay_one(
        loaded: dict[str, TransactionMetadata],
        partition: int,
        key: bytes | None,
        value: bytes | None,
        at: int,
    ) -> None:
        try:
            record = decode_txn_record(key, value)
        except (UnreadableTxnRecord, CodecError) as error:
            log.warning(
                "skipping unreadable record at %s-%d offset %d: %s",
                TRANSACTION_STATE_TOPIC,
                partition,
                at,
                error,
            )
            return
        if record.value is None:
            loaded.pop(record.transactional_id, None)
        else:
            loaded[record.transactional_id] = TransactionMetadata.from_value(
                record.transactional_id, record.value
            )

    # ----- appends --------------------------------------------------------------------------------

    def append(self, record: TxnLogRecord) -> ErrorCode | None:
        """Append one record to the transactional id's partition; the error a client is told, if any.
        The caller replays it into the metadata only once this returns None."""
        partition = self.partition_for(record.transactional_id)
        log_ = self.logs.get_log(TRANSACTION_STATE_TOPIC, partition)
        state = self.cluster.partition(TRANSACTION_STATE_TOPIC, partition)
        if log_ is None or state is None or state.leader_id != self.node_id:
            return ErrorCode.NOT_COORDINATOR
        key, value = record.encode()
        builder = RecordBatchBuilder(0, compression=Compression.NONE)
        builder.append(int(self.clock() * 1000), key, value)
        try:
            log_.append(
                bytearray(builder.build()), leader_epoch=state.leader_epoch, origin=AppendOrigin.COORDINATOR
            )
        except Exception as failure:
            log.warning("writing to %s-%d failed: %s", TRANSACTION_STATE_TOPIC, partition, failure)
            return append_error_code(failure)
        if self.notify_append is not None:
            self.notify_append(TopicPartition(TRANSACTION_STATE_TOPIC, partition))
        return None
