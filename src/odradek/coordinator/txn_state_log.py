"""`__transaction_state` on the coordinator runtime: its creation, its shards (the transactional ids
hashing to a partition, rebuilt by replaying TransactionLog records: the newest record of an id wins,
a tombstone removes it) and the transaction coordinator's appends.

A partition is loaded when this broker becomes its leader and dropped when it stops leading it
(runtime.py), as the group coordinator's `__consumer_offsets`; cluster mode drives both from the
replica manager's leadership hook. The loaded ids of every shard are also indexed here, by id and by
current producer id (every transactional Produce looks its producer up).

A state change (`write`) appends the next TransactionLogValue, waits until the in-sync replicas hold
it (coordinator/committed_writes.py) and only then applies it (Kafka's pendingState and
completeTransitionTo): the state in memory is what a coordinator elected from the ISR would find in
the log, and a write that fails (refused under
`transaction.state.log.min.isr`, timed out, leadership lost) leaves no trace. While an id's write
waits, it is in `writing`: the coordinator answers its other steps CONCURRENT_TRANSACTIONS.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Final

from odradek.config.broker import BrokerConfig
from odradek.coordinator.committed_writes import append_committed
from odradek.coordinator.ports import InternalTopics, MetadataView
from odradek.coordinator.runtime import CoordinatorRuntime
from odradek.coordinator.txn_metadata import TransactionMetadata
from odradek.coordinator.txn_records import TransactionLogValue, TxnLogRecord, decode_txn_record
from odradek.partition.leadership import Leadership
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.protocol.records import Compression
from odradek.storage.log_manager import LogManager

TRANSACTION_STATE_TOPIC: Final = "__transaction_state"
log = logging.getLogger("odradek.coordinator.transactions")


class TxnShard:
    """One `__transaction_state` partition's transactional ids."""

    def __init__(self, partition: int, index: TxnStateLog) -> None:
        self.partition = partition
        self.index = index
        #: What replay found; handed to the index once loaded.
        self.loaded: dict[str, TransactionMetadata] = {}
        self._count = 0

    def replay_log_record(
        self, key: bytes | None, value: bytes | None, offset: int, producer_id: int | None
    ) -> bool:
        record = decode_txn_record(key, value)  # an unreadable one is logged and skipped by the runtime
        if record.value is None:
            self.loaded.pop(record.transactional_id, None)
        else:
            self.loaded[record.transactional_id] = TransactionMetadata.from_value(
                record.transactional_id, record.value
            )
        return True

    def replay_marker(self, producer_id: int, committed: bool) -> None:
        pass  # the coordinator writes no transactional batches to its own log

    def loaded_keys(self) -> int:
        return self._count

    def on_loaded(self) -> None:
        self._count = len(self.loaded)
        self.index.loaded(self)

    def unload(self) -> None:
        self.index.unloaded(self.partition)


class TxnStateLog(CoordinatorRuntime[TxnShard]):
    KEY_NAME = "transactional id"

    def __init__(
        self,
        config: BrokerConfig,
        cluster: MetadataView,
        topics: InternalTopics,
        logs: LogManager,
        node_id: int,
        clock: Callable[[], float] = time.time,
        *,
        leadership: Leadership,
        on_partition_loaded: Callable[[list[TransactionMetadata]], None] | None = None,
    ) -> None:
        super().__init__(
            TRANSACTION_STATE_TOPIC,
            "transactional ids",
            config.transaction_state_log_num_partitions,
            config.transaction_state_log_load_buffer_size,
            Compression.NONE,
            logs,
            cluster,
            node_id,
            clock,
            leadership=leadership,
        )
        self.config = config
        self.topics = topics
        #: Transactional ids of the loaded partitions (all partitions share one map: ids are unique).
        self.txns: dict[str, TransactionMetadata] = {}
        #: The same, by current producer id: every transactional Produce looks its producer up here.
        self.by_producer: dict[int, TransactionMetadata] = {}
        #: Told of each partition's transactions once it is loaded (the coordinator completes the
        #: prepared ones, as Kafka's coordinator does when it takes over).
        self.on_partition_loaded = on_partition_loaded
        #: Transactional ids whose write waits for the ISR (Kafka's pendingState).
        self.writing: set[str] = set()

    def write_timeout_ms(self, record: TxnLogRecord) -> int:
        """How long a write waits for the in-sync replicas: as Kafka's TransactionStateManager, a
        state change the transaction's own timeout, an expired id's tombstone request.timeout.ms."""
        if record.value is None:
            return self.config.request_timeout_ms
        return record.value.transaction_timeout_ms

    def new_shard(self, partition: int) -> TxnShard:
        return TxnShard(partition, self)

    # ----- the topic ------------------------------------------------------------------------------

    async def ensure_topic(self) -> bool:
        """Create `__transaction_state` if it is missing; True if it exists now."""
        if self.cluster.topic(TRANSACTION_STATE_TOPIC) is not None:
            return True
        return await asyncio.shield(self.topic_creation(self._create_topic))

    async def _create_topic(self) -> bool:
        configs = {
            "cleanup.policy": "compact",
            "compression.type": "uncompressed",  # as Kafka's TransactionStateManager
            "unclean.leader.election.enable": "false",
            "min.insync.replicas": str(self.config.transaction_state_log_min_isr),
            "segment.bytes": str(self.config.transaction_state_log_segment_bytes),
        }
        replication = self.config.transaction_state_log_replication_factor
        return await self.create_topic(self.topics, replication, configs)

    # ----- shards -----------------------------------------------------------------------------------

    def check_coordinator(self, transactional_id: str) -> int:
        """The partition of `transactional_id`, if this broker coordinates it and has loaded it (else
        the KafkaError a client retries on)."""
        return self.shard_for(transactional_id).partition

    def coordinator_epoch(self, partition: int) -> int:
        return self.leader_epochs.get(partition, self.leader_epoch(partition))

    def loaded(self, shard: TxnShard) -> None:
        epoch = self.coordinator_epoch(shard.partition)
        for metadata in shard.loaded.values():
            metadata.coordinator_epoch = epoch
            self.put(metadata)
        found, shard.loaded = list(shard.loaded.values()), {}
        if self.on_partition_loaded is not None:
            self.on_partition_loaded(found)

    def unloaded(self, partition: int) -> None:
        for transactional_id in [t for t in self.txns if self.partition_for(t) == partition]:
            self.remove(transactional_id)

    def put(self, metadata: TransactionMetadata, old_producer_id: int | None = None) -> None:
        """Index `metadata` (again, after a write that may have changed its producer id)."""
        if old_producer_id is not None and self.by_producer.get(old_producer_id) is metadata:
            del self.by_producer[old_producer_id]
        self.txns[metadata.transactional_id] = metadata
        self.by_producer[metadata.producer_id] = metadata

    def remove(self, transactional_id: str) -> None:
        metadata = self.txns.pop(transactional_id, None)
        if metadata is not None and self.by_producer.get(metadata.producer_id) is metadata:
            del self.by_producer[metadata.producer_id]

    # ----- appends ----------------------------------------------------------------------------------

    async def write(self, transactional_id: str, value: TransactionLogValue | None) -> None:
        """Append `value` (None: a tombstone), wait for the ISR, then apply it; KafkaError (nothing
        applied) when the write failed, or while another write of the id waits."""
        if transactional_id in self.writing:
            raise KafkaError(ErrorCode.CONCURRENT_TRANSACTIONS)
        self.writing.add(transactional_id)
        try:
            error = await self.append(TxnLogRecord(transactional_id, value))
        finally:
            self.writing.discard(transactional_id)
        if error is not None:
            raise KafkaError(error)
        metadata = self.txns.get(transactional_id)
        if value is None:
            self.remove(transactional_id)
        elif metadata is None:
            metadata = TransactionMetadata.from_value(transactional_id, value)
            metadata.coordinator_epoch = self.coordinator_epoch(self.partition_for(transactional_id))
            self.put(metadata)
        else:
            old_producer_id = metadata.producer_id
            metadata.apply(value)
            self.put(metadata, old_producer_id)

    async def append(self, record: TxnLogRecord) -> ErrorCode | None:
        """Append one record to the transactional id's partition and wait until its in-sync replicas
        hold it (Kafka's appendTransactionToLog, acks=-1); the error a client is told, if any. The
        caller applies it to the metadata only once this returns None, so the coordinator's memory
        never holds a state a coordinator elected from the ISR would not find in the log."""
        partition = self.partition_for(record.transactional_id)
        try:
            await append_committed(self, partition, [record], self.write_timeout_ms(record))
        except KafkaError as failed:
            log.info("%s: its write was not applied (%s)", record.transactional_id, failed.error_code.name)
            return failed.error_code
        return None
