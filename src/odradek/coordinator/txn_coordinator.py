"""The transaction coordinator (Kafka's TransactionCoordinator), over `__transaction_state`.

Every step checks the request against the transactional id's metadata, appends the next
TransactionLogValue, waits until the in-sync replicas hold it and only then applies it (Kafka's
pendingState and completeTransitionTo): the state in memory is what a coordinator elected from the ISR
would find in the log, and a write that fails (refused under `transaction.state.log.min.isr`, timed
out, leadership lost) leaves no trace. While an id's write waits, other steps for it are answered
CONCURRENT_TRANSACTIONS, as Kafka does while its pending state is set. Ending a transaction writes
PrepareCommit/PrepareAbort, then (once it is on the ISR) the markers (directly, through the local
WriteTxnMarkers path: on a single node this broker leads every partition), each written once the
partition's in-sync replicas hold it (Kafka's acks=-1 marker appends), then CompleteCommit/
CompleteAbort. A transaction found prepared (the broker died between the two, or a marker could not
be written) is completed when its partition is loaded and by the periodic check, as Kafka's
coordinator re-sends markers on takeover.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from typing import Any

from odradek.cluster.inter_broker_connection import PLAINTEXT, InterBrokerSecurity
from odradek.cluster.leadership import Leadership
from odradek.config.broker import BrokerConfig
from odradek.coordinator.producer_ids import ProducerIdSource
from odradek.coordinator.runtime import partition_for
from odradek.coordinator.settings import OFFSETS_TOPIC
from odradek.coordinator.txn_marker_channel import PendingMarkers, TxnMarkerChannel
from odradek.coordinator.txn_markers import MarkerWriter
from odradek.coordinator.txn_metadata import (
    MAX_EPOCH,
    TWO_PHASE_COMMIT_TIMEOUT_MS,
    TransactionMetadata,
    TxnState,
)
from odradek.coordinator.txn_records import TransactionLogValue, TxnLogRecord
from odradek.coordinator.txn_state_log import TRANSACTION_STATE_TOPIC, TxnStateLog
from odradek.protocol.error_codes import ErrorCode, KafkaError

log = logging.getLogger("odradek.coordinator.transactions")
E = ErrorCode


@dataclass(frozen=True, slots=True)
class InitAnswer:
    """InitProducerId's answer: the producer's id and epoch and, when KIP-939's keepPreparedTxn kept
    an ongoing transaction, the id and epoch that transaction had (-1 when there was none)."""

    producer_id: int
    producer_epoch: int
    ongoing_txn_producer_id: int = -1
    ongoing_txn_producer_epoch: int = -1


class TransactionCoordinator:
    def __init__(
        self,
        config: BrokerConfig,
        cluster: Any,
        topics: Any,
        logs: Any,
        node_id: int,
        producer_ids: ProducerIdSource,
        groups: Any,
        notify_append: Callable[[Hashable], None] | None = None,
        clock: Callable[[], float] = time.time,
        inter_broker_security: InterBrokerSecurity = PLAINTEXT,
        marker_replicated: Callable[[str, int, int], Awaitable[ErrorCode]] | None = None,
        leadership: Leadership | None = None,
    ) -> None:
        self.config = config
        self.cluster = cluster
        self.node_id = node_id
        self.producer_ids = producer_ids
        self.groups = groups
        self.clock = clock
        self.state_log = TxnStateLog(config, cluster, topics, logs, node_id, notify_append, clock, leadership)
        self.state_log.on_partition_loaded = self._loaded
        self.markers = MarkerWriter(
            logs, self.state_log.leadership, groups, notify_append, clock, marker_replicated
        )
        self.channel = TxnMarkerChannel(
            config,
            cluster,
            node_id,
            write_local=self._write_marker_here,
            still_wanted=lambda txn: self._current(txn) is not None,
            on_complete=self._markers_written,
            security=inter_broker_security,
        )
        self._tasks: list[asyncio.Task[None]] = []
        #: The leader epoch this broker's uninterrupted leadership of a `__transaction_state` partition
        #: began at (None: not led); the replica manager's answer, wired in cluster mode.
        self.leader_since_epoch: Callable[[int], int | None] | None = None
        #: Transactional ids whose write waits for the in-sync replicas (Kafka's pendingState).
        self._writing: set[str] = set()
        #: Completions of prepared transactions under way in the background.
        self._completions: set[asyncio.Task[bool]] = set()
        #: Transactional ids whose markers this broker writes itself wait for their in-sync replicas.
        self._writing_markers: set[str] = set()
        #: One leadership refresh at a time: a partition's load and unload must not interleave.
        self._refreshing = asyncio.Lock()
        self._refreshes: set[asyncio.Task[None]] = set()
        self.started = False
        self.single_node = True

    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    # ----- lifecycle ------------------------------------------------------------------------------

    async def start(self, single_node: bool) -> None:
        self.started = True
        self.single_node = single_node
        if single_node:
            await self.state_log.ensure_topic(single_node)
        await self.refresh_leadership()
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(
                self._every(
                    self.config.transaction_abort_timed_out_transaction_cleanup_interval_ms,
                    self.abort_timed_out,
                )
            ),
            loop.create_task(
                self._every(
                    self.config.transaction_remove_expired_transaction_cleanup_interval_ms,
                    self.remove_expired,
                )
            ),
        ]

    def stop(self) -> None:
        self.started = False
        for task in self._tasks:
            task.cancel()
        self._tasks = []
        for task in self._refreshes:
            task.cancel()
        for completion in self._completions:
            completion.cancel()
        self.channel.stop()
        for partition in list(self.state_log.shards):
            self.state_log.resign(partition)

    def leadership_changed(self) -> None:
        """Cluster mode's hook (LeaderAndIsr, StopReplica): the coordinator follows the leadership of
        `__transaction_state` partitions, as the group coordinator follows `__consumer_offsets`."""
        if self.started:
            task = asyncio.get_running_loop().create_task(self.refresh_leadership())
            self._refreshes.add(task)
            task.add_done_callback(self._refreshes.discard)

    async def refresh_leadership(self) -> None:
        """Load the `__transaction_state` partitions this broker leads, drop the others."""
        async with self._refreshing:
            await self._refresh_leadership()

    async def _refresh_leadership(self) -> None:
        topic = self.cluster.topic(TRANSACTION_STATE_TOPIC)
        if topic is None:
            return
        runtime = self.state_log
        for state in topic.partitions:
            # led here as the replica manager says, at its epoch (not the metadata cache's)
            epoch = runtime.leadership.leader_epoch(TRANSACTION_STATE_TOPIC, state.partition)
            if epoch is not None:
                loaded_at = runtime.leader_epochs.get(state.partition, epoch)
                if loaded_at != epoch and self._led_anew_since(state.partition, loaded_at):
                    # Led here again at a newer epoch (it moved away and back between two hooks):
                    # reload, so markers carry the new coordinator epoch. A new epoch that kept this
                    # broker leader (an ISR change, a reassignment) is no new election: as Kafka's
                    # onElection, which only a new leader hears, the loaded state and its writes stay.
                    runtime.resign(state.partition)
                runtime.become_leader(state.partition)
            elif state.partition in runtime.shards:
                runtime.resign(state.partition)
        await runtime.wait_loaded()

    def _led_anew_since(self, partition: int, epoch: int) -> bool:
        """Whether this broker's leadership of the partition began after `epoch` (it stopped leading
        it meanwhile); without the replica manager's word, any newer epoch counts as such."""
        if self.leader_since_epoch is None:
            return True
        since = self.leader_since_epoch(partition)
        return since is None or since > epoch

    def _loaded(self, transactions: list[TransactionMetadata]) -> None:
        """A partition's transactions, just loaded: those the previous leader left prepared (it died
        between the prepare and the complete record) get their markers now."""
        prepared = [m for m in transactions if m.state.is_prepared]
        for metadata in prepared:
            self._complete_later(metadata)
        if prepared:
            log.info("completing %d prepared transactions found on loading", len(prepared))

    def coordinator_node(self, transactional_id: str) -> int | None:
        if not self.started:
            return None
        if self.cluster.topic(TRANSACTION_STATE_TOPIC) is None:
            # Created in the background (COORDINATOR_NOT_AVAILABLE meanwhile, which clients retry).
            asyncio.get_running_loop().create_task(self._create_and_load())
            return None
        state = self.cluster.partition(
            TRANSACTION_STATE_TOPIC, self.state_log.partition_for(transactional_id)
        )
        if state is None or state.leader_id < 0:
            return None
        return int(state.leader_id)

    async def _create_and_load(self) -> None:
        if await self.state_log.ensure_topic(self.single_node):
            await self.refresh_leadership()

    async def _every(self, interval_ms: int, job: Callable[[], Awaitable[None]]) -> None:
        while True:
            await asyncio.sleep(interval_ms / 1000)
            try:
                await job()
            except Exception:
                log.exception("transaction coordinator housekeeping failed")

    # ----- lookups --------------------------------------------------------------------------------

    def transactions(self) -> list[TransactionMetadata]:
        return list(self.state_log.txns.values())

    def by_producer_id(self, producer_id: int) -> TransactionMetadata | None:
        return self.state_log.by_producer.get(producer_id)

    def _metadata(self, transactional_id: str, producer_id: int, producer_epoch: int) -> TransactionMetadata:
        """The id's metadata if the producer id and epoch are its current ones; else the client's error."""
        self.state_log.check_coordinator(transactional_id)
        metadata = self.state_log.txns.get(transactional_id)
        if metadata is None or metadata.producer_id != producer_id:
            raise KafkaError(E.INVALID_PRODUCER_ID_MAPPING)
        if transactional_id in self._writing:
            raise KafkaError(E.CONCURRENT_TRANSACTIONS)
        if metadata.producer_epoch != producer_epoch:
            raise KafkaError(E.PRODUCER_FENCED)
        return metadata

    async def _write(self, transactional_id: str, value: TransactionLogValue | None) -> None:
        """Append `value` (None: a tombstone), wait for the ISR, then apply it; KafkaError (nothing
        applied) when the write failed, or while another write of the id waits."""
        if transactional_id in self._writing:
            raise KafkaError(E.CONCURRENT_TRANSACTIONS)
        self._writing.add(transactional_id)
        try:
            error = await self.state_log.append(TxnLogRecord(transactional_id, value))
        finally:
            self._writing.discard(transactional_id)
        if error is not None:
            raise KafkaError(error)
        metadata = self.state_log.txns.get(transactional_id)
        if value is None:
            self.state_log.remove(transactional_id)
        elif metadata is None:
            metadata = TransactionMetadata.from_value(transactional_id, value)
            metadata.coordinator_epoch = self.state_log.coordinator_epoch(
                self.state_log.partition_for(transactional_id)
            )
            self.state_log.put(metadata)
        else:
            old_producer_id = metadata.producer_id
            metadata.apply(value)
            self.state_log.put(metadata, old_producer_id)

    # ----- InitProducerId -------------------------------------------------------------------------

    async def init_producer_id(
        self,
        transactional_id: str,
        timeout_ms: int,
        producer_id: int,
        producer_epoch: int,
        *,
        two_phase_commit: bool = False,
    ) -> tuple[int, int]:
        """(producer id, epoch) for a transactional producer; KafkaError for the client's error. An
        unfinished transaction of an earlier instance is aborted first (CONCURRENT_TRANSACTIONS)."""
        answer = await self._init(transactional_id, timeout_ms, producer_id, producer_epoch, two_phase_commit)
        return answer.producer_id, answer.producer_epoch

    async def init_keeping_prepared_txn(
        self,
        transactional_id: str,
        timeout_ms: int,
        producer_id: int,
        producer_epoch: int,
        *,
        two_phase_commit: bool = False,
    ) -> InitAnswer:
        """KIP-939's keepPreparedTxn: an ongoing transaction is kept, not aborted. The epoch is bumped
        (fencing the process that prepared it) and the transaction now belongs to the new epoch, so the
        caller can commit or abort it with EndTxn; the answer also names the producer id and epoch the
        transaction had, for the caller to match against what its external coordinator recorded."""
        return await self._init(
            transactional_id, timeout_ms, producer_id, producer_epoch, two_phase_commit, keep_prepared=True
        )

    async def _init(
        self,
        transactional_id: str,
        timeout_ms: int,
        producer_id: int,
        producer_epoch: int,
        two_phase_commit: bool,
        keep_prepared: bool = False,
    ) -> InitAnswer:
        if two_phase_commit:
            # KIP-939: the external coordinator decides when the transaction ends, so no timeout (and
            # no transaction.max.timeout.ms bound); stored as Kafka stores it.
            timeout_ms = TWO_PHASE_COMMIT_TIMEOUT_MS
        elif timeout_ms <= 0 or timeout_ms > self.config.transaction_max_timeout_ms:
            raise KafkaError(E.INVALID_TRANSACTION_TIMEOUT)
        self.state_log.check_coordinator(transactional_id)
        metadata = self.state_log.txns.get(transactional_id)
        now = self.now_ms()
        if metadata is None:
            new_id = await self.producer_ids.generate()
            # Re-check: another InitProducerId for this id may have run while the id block was written.
            if transactional_id not in self.state_log.txns:
                value = TransactionMetadata(transactional_id, new_id, 0, timeout_ms).next_value(now)
                await self._write(transactional_id, value)
                return InitAnswer(new_id, 0)
            metadata = self.state_log.txns[transactional_id]
        if transactional_id in self._writing:
            raise KafkaError(E.CONCURRENT_TRANSACTIONS)
        if producer_id >= 0:
            # KIP-360: a producer re-initialising names its id and epoch. The current pair gets the next
            # epoch; the pair it had before its last such bump is a retry whose answer was lost (the
            # current epoch again, as Kafka answers); any other pair is a zombie.
            if producer_id != metadata.producer_id:
                raise KafkaError(E.PRODUCER_FENCED)
            if producer_epoch != metadata.producer_epoch:
                if producer_epoch == metadata.last_producer_epoch and metadata.state.is_complete:
                    return InitAnswer(metadata.producer_id, metadata.producer_epoch)
                raise KafkaError(E.PRODUCER_FENCED)
        if metadata.state.is_prepared:
            self._complete_later(metadata)
            raise KafkaError(E.CONCURRENT_TRANSACTIONS)
        if metadata.state is TxnState.ONGOING and keep_prepared:
            return await self._take_over_ongoing(metadata, timeout_ms, now)
        if metadata.state is TxnState.ONGOING:
            # A new instance takes over: the old one's transaction is aborted with a bumped epoch
            # (which fences it); the client retries and then gets its own epoch.
            await self._abort_fencing(metadata)
            raise KafkaError(E.CONCURRENT_TRANSACTIONS)
        if metadata.producer_epoch >= MAX_EPOCH:
            next_id, next_epoch = await self.producer_ids.generate(), 0  # epoch exhausted: a new id
        else:
            next_id, next_epoch = metadata.producer_id, metadata.producer_epoch + 1
        value = metadata.next_value(
            now,
            state=TxnState.EMPTY,
            producer_id=next_id,
            producer_epoch=next_epoch,
            timeout_ms=timeout_ms,
            partitions=set(),
        )
        previous_epoch = metadata.producer_epoch
        await self._write(transactional_id, value)
        # Only the producer that asked with its own epoch may retry with it; a new instance (no id
        # given) or a new producer id leaves nothing to retry.
        same_producer = producer_id >= 0 and next_id == producer_id
        metadata.last_producer_epoch = previous_epoch if same_producer else -1
        return InitAnswer(next_id, next_epoch)

    async def _take_over_ongoing(
        self, metadata: TransactionMetadata, timeout_ms: int, now: int
    ) -> InitAnswer:
        """The ongoing transaction stays open, under the next epoch. The producer id stays: the
        transaction's batches carry it, and its markers must too. At the last epoch nothing can be
        bumped, and the transaction is handed over as it is."""
        ongoing = metadata.producer_id, metadata.producer_epoch
        epoch = min(metadata.producer_epoch + 1, MAX_EPOCH)
        value = metadata.next_value(now, producer_epoch=epoch, timeout_ms=timeout_ms)
        await self._write(metadata.transactional_id, value)
        metadata.last_producer_epoch = -1
        log.info(
            "%s: ongoing transaction of producer %d epoch %d kept for its two-phase commit (now epoch %d)",
            metadata.transactional_id,
            ongoing[0],
            ongoing[1],
            epoch,
        )
        return InitAnswer(metadata.producer_id, epoch, *ongoing)

    # ----- AddPartitionsToTxn / AddOffsetsToTxn ---------------------------------------------------

    async def add_partitions(
        self, transactional_id: str, producer_id: int, producer_epoch: int, partitions: list[tuple[str, int]]
    ) -> dict[tuple[str, int], ErrorCode]:
        try:
            metadata = self._metadata(transactional_id, producer_id, producer_epoch)
            if metadata.state.is_prepared:
                raise KafkaError(E.CONCURRENT_TRANSACTIONS)
            if metadata.state not in (TxnState.ONGOING, *[s for s in TxnState if s.is_complete]):
                raise KafkaError(E.INVALID_TXN_STATE)
        except KafkaError as error:
            return {tp: error.error_code for tp in partitions}
        unknown = {tp for tp in partitions if self.cluster.partition(*tp) is None}
        if unknown:
            return {
                tp: E.UNKNOWN_TOPIC_OR_PARTITION if tp in unknown else E.OPERATION_NOT_ATTEMPTED
                for tp in partitions
            }
        wanted = metadata.partitions | set(partitions)
        if metadata.state is not TxnState.ONGOING or wanted != metadata.partitions:
            value = metadata.next_value(self.now_ms(), state=TxnState.ONGOING, partitions=wanted)
            try:
                await self._write(transactional_id, value)
            except KafkaError as error:
                return {tp: error.error_code for tp in partitions}
        return {tp: E.NONE for tp in partitions}

    async def add_offsets(
        self, transactional_id: str, producer_id: int, producer_epoch: int, group_id: str
    ) -> ErrorCode:
        topic = self.cluster.topic(OFFSETS_TOPIC)
        if topic is None:
            return E.COORDINATOR_NOT_AVAILABLE
        tp = (OFFSETS_TOPIC, partition_for(group_id, len(topic.partitions)))
        return (await self.add_partitions(transactional_id, producer_id, producer_epoch, [tp]))[tp]

    def check_producer(self, producer_id: int, producer_epoch: int) -> ErrorCode:
        """TxnOffsetCommit and transactional Produce: the producer's transaction must be ongoing, with
        this epoch (a zombie's older epoch is fenced)."""
        metadata = self.by_producer_id(producer_id)
        if metadata is None:
            return E.INVALID_TXN_STATE
        if producer_epoch != metadata.producer_epoch:
            return E.PRODUCER_FENCED  # checked first: a zombie is told it is fenced, whatever the state
        if metadata.state is not TxnState.ONGOING:
            return E.INVALID_TXN_STATE
        return E.NONE

    def verify_partition(
        self, producer_id: int, producer_epoch: int, topic: str, partition: int
    ) -> ErrorCode:
        """KIP-890 part 1 on the leader: a transactional batch only for a partition added to the
        producer's ongoing transaction (`transaction.partition.verification.enable`)."""
        if not self.config.transaction_partition_verification_enable:
            return E.NONE
        error = self.check_producer(producer_id, producer_epoch)
        if error is E.PRODUCER_FENCED:
            return E.INVALID_PRODUCER_EPOCH
        if error is not E.NONE:
            return error
        metadata = self.by_producer_id(producer_id)
        assert metadata is not None
        return E.NONE if (topic, partition) in metadata.partitions else E.INVALID_TXN_STATE

    # ----- EndTxn and completion ------------------------------------------------------------------

    async def end_txn(
        self, transactional_id: str, producer_id: int, producer_epoch: int, committed: bool
    ) -> None:
        metadata = self._metadata(transactional_id, producer_id, producer_epoch)
        state = metadata.state
        if state is TxnState.ONGOING:
            target = TxnState.PREPARE_COMMIT if committed else TxnState.PREPARE_ABORT
            await self._write(transactional_id, metadata.next_value(self.now_ms(), state=target))
            # On the ISR now: the markers may go out (never before, or a lost Prepare* record could
            # leave a transaction committed on some partitions and aborted on the others).
            await self._complete(metadata)
            return
        if (state, committed) in ((TxnState.COMPLETE_COMMIT, True), (TxnState.COMPLETE_ABORT, False)):
            return  # a retry of an EndTxn that already completed
        if state.is_prepared:
            self._complete_later(metadata)
            if (state is TxnState.PREPARE_COMMIT) == committed:
                return
            raise KafkaError(E.INVALID_TXN_STATE)
        raise KafkaError(E.INVALID_TXN_STATE)

    def _complete_later(self, metadata: TransactionMetadata) -> None:
        """Complete a prepared transaction in the background (a step that finds one answers at once)."""
        task = asyncio.get_running_loop().create_task(self._complete(metadata))
        self._completions.add(task)
        task.add_done_callback(self._completions.discard)

    async def _complete(self, metadata: TransactionMetadata) -> bool:
        """Write the markers of a prepared transaction, then its Complete* record. The partitions this
        broker leads get theirs directly; those led elsewhere through the marker channel, which writes
        the Complete* record once the last is written. True when completed now; False when markers are
        under way or one failed here (retried by the periodic check)."""
        transactional_id = metadata.transactional_id
        if (
            self.channel.under_way(transactional_id)
            or transactional_id in self._writing
            or transactional_id in self._writing_markers
        ):
            return False
        committed = metadata.state is TxnState.PREPARE_COMMIT
        elsewhere: set[tuple[str, int]] = set()
        here: list[tuple[str, int]] = []
        for topic, partition in sorted(metadata.partitions):
            state = self.cluster.partition(topic, partition)
            if state is not None and state.leader_id != self.node_id and not self.single_node:
                elsewhere.add((topic, partition))
            else:
                here.append((topic, partition))
        self._writing_markers.add(transactional_id)
        try:
            errors = await asyncio.gather(
                *(
                    self.markers.write(
                        topic,
                        partition,
                        metadata.producer_id,
                        metadata.producer_epoch,
                        committed,
                        metadata.coordinator_epoch,
                    )
                    for topic, partition in here
                )
            )
        finally:
            self._writing_markers.discard(transactional_id)
        failed = False
        for (topic, partition), error in zip(here, errors, strict=True):
            if error is E.NOT_LEADER_OR_FOLLOWER and not self.single_node:
                elsewhere.add((topic, partition))  # leadership moved since the cache was read
            elif error not in (E.NONE, E.UNKNOWN_TOPIC_OR_PARTITION):
                log.warning(
                    "%s marker for %s to %s-%d failed: %s",
                    "COMMIT" if committed else "ABORT",
                    transactional_id,
                    topic,
                    partition,
                    error.name,
                )
                failed = True
        if failed:
            return False  # retried by the periodic check
        if not self._still_prepared(metadata, committed):
            return False  # its partition moved meanwhile: the next coordinator completes it
        if elsewhere:
            self.channel.send(
                PendingMarkers(
                    transactional_id,
                    metadata.producer_id,
                    metadata.producer_epoch,
                    committed,
                    metadata.coordinator_epoch,
                    elsewhere,
                )
            )
            return False
        return await self._write_complete(metadata)

    def _still_prepared(self, metadata: TransactionMetadata, committed: bool) -> bool:
        """After a wait: the transaction is still this coordinator's, prepared as it was."""
        prepared = TxnState.PREPARE_COMMIT if committed else TxnState.PREPARE_ABORT
        current = self.state_log.txns.get(metadata.transactional_id)
        return current is metadata and metadata.state is prepared

    async def _write_complete(self, metadata: TransactionMetadata) -> bool:
        committed = metadata.state is TxnState.PREPARE_COMMIT
        done = TxnState.COMPLETE_COMMIT if committed else TxnState.COMPLETE_ABORT
        try:
            await self._write(
                metadata.transactional_id, metadata.next_value(self.now_ms(), state=done, partitions=set())
            )
        except KafkaError:
            return False  # retried by the periodic check
        return True

    # ----- the marker channel's callbacks (cluster mode) -------------------------------------------

    def _current(self, txn: PendingMarkers) -> TransactionMetadata | None:
        """The transaction's metadata if this broker still coordinates it in the state the markers
        were sent for (same producer, epoch and coordinator epoch, still prepared)."""
        metadata = self.state_log.txns.get(txn.transactional_id)
        if (
            metadata is None
            or not metadata.state.is_prepared
            or (metadata.state is TxnState.PREPARE_COMMIT) != txn.committed
            or (metadata.producer_id, metadata.producer_epoch) != (txn.producer_id, txn.producer_epoch)
            or metadata.coordinator_epoch != txn.coordinator_epoch
        ):
            return None
        return metadata

    async def _write_marker_here(self, txn: PendingMarkers, tp: tuple[str, int]) -> ErrorCode:
        return await self.markers.write(
            *tp, txn.producer_id, txn.producer_epoch, txn.committed, txn.coordinator_epoch
        )

    def _markers_written(self, txn: PendingMarkers) -> None:
        metadata = self._current(txn)
        if metadata is not None:
            task = asyncio.get_running_loop().create_task(self._write_complete(metadata))
            self._completions.add(task)
            task.add_done_callback(self._completions.discard)

    async def _abort_fencing(self, metadata: TransactionMetadata) -> None:
        """Abort an ongoing transaction with the epoch bumped, so its producer is fenced (Kafka's
        PrepareEpochFence, then PrepareAbort)."""
        epoch = (
            metadata.producer_epoch + 1 if metadata.producer_epoch < MAX_EPOCH else metadata.producer_epoch
        )
        value = metadata.next_value(self.now_ms(), state=TxnState.PREPARE_ABORT, producer_epoch=epoch)
        await self._write(metadata.transactional_id, value)
        metadata.last_producer_epoch = -1  # the fenced epoch may not come back as a "retry"
        await self._complete(metadata)

    async def abort_timed_out(self) -> None:
        """Proactive aborts of transactions open longer than their timeout; prepared ones retried."""
        now = self.now_ms()
        for metadata in self.transactions():
            if metadata.transactional_id in self._writing:
                continue  # its write is still waiting for the ISR
            try:
                if metadata.timed_out(now):
                    log.info(
                        "aborting transaction of %s: open longer than %d ms",
                        metadata.transactional_id,
                        metadata.timeout_ms,
                    )
                    await self._abort_fencing(metadata)
                elif metadata.state.is_prepared:
                    await self._complete(metadata)
            except KafkaError as error:
                log.warning("aborting %s failed: %s", metadata.transactional_id, error)

    async def remove_expired(self) -> None:
        """Forget transactional ids idle for `transactional.id.expiration.ms` (a tombstone)."""
        now = self.now_ms()
        expiry = self.config.transactional_id_expiration_ms
        for metadata in self.transactions():
            if metadata.state.is_complete and now - metadata.last_update_ms >= expiry:
                try:
                    await self._write(metadata.transactional_id, None)
                except KafkaError as error:
                    log.warning("expiring %s failed: %s", metadata.transactional_id, error)
