"""The transaction coordinator (Kafka's TransactionCoordinator), over `__transaction_state`.

Every step checks the request against the transactional id's metadata and writes the next
TransactionLogValue, applied once the in-sync replicas hold it (txn_state_log.py); while an id's write
waits, other steps for it are answered CONCURRENT_TRANSACTIONS, as Kafka does while its pending state
is set. Ending a transaction writes PrepareCommit/PrepareAbort and, once it is on the ISR, answers and
hands the transaction over for its markers and its CompleteCommit/CompleteAbort, written in the
background (txn_completion.py); meanwhile its steps are answered CONCURRENT_TRANSACTIONS, as Kafka's
between the two. A transaction found prepared (the broker died between the two, or its Complete*
record could not be written) is handed over again when its partition is loaded and by the periodic
check, as Kafka's coordinator re-sends markers on takeover. The periodic checks (timed-out
transactions, expired transactional ids) are txn_expiry.py's.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from odradek.config.broker import BrokerConfig
from odradek.coordinator.partitioning import check_key_length, partition_for
from odradek.coordinator.ports import InternalTopics, MetadataView, ProducerIdSource, TxnMarkerSender
from odradek.coordinator.settings import OFFSETS_TOPIC
from odradek.coordinator.txn_completion import TxnCompletion
from odradek.coordinator.txn_expiry import TxnExpiry
from odradek.coordinator.txn_init import InitAnswer, ProducerIdInit
from odradek.coordinator.txn_log_replication import txn_log_replicated
from odradek.coordinator.txn_markers import MarkerWriter, OffsetsTransactions
from odradek.coordinator.txn_metadata import TWO_PHASE_COMMIT_TIMEOUT_MS, TransactionMetadata, TxnState
from odradek.coordinator.txn_state_log import TRANSACTION_STATE_TOPIC, TxnStateLog
from odradek.partition.leadership import Leadership
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.storage.log_manager import LogManager

log = logging.getLogger("odradek.coordinator.transactions")
E = ErrorCode


class TransactionCoordinator:
    def __init__(
        self,
        config: BrokerConfig,
        cluster: MetadataView,
        topics: InternalTopics,
        logs: LogManager,
        node_id: int,
        producer_ids: ProducerIdSource,
        groups: OffsetsTransactions | None,
        clock: Callable[[], float] = time.time,
        *,
        leadership: Leadership,
        marker_sender: TxnMarkerSender,
    ) -> None:
        self.config = config
        self.cluster = cluster
        self.node_id = node_id
        self.clock = clock
        self.state_log = TxnStateLog(
            config,
            cluster,
            topics,
            logs,
            node_id,
            clock,
            leadership=leadership,
            on_partition_loaded=self._loaded,
        )
        #: Also what WriteTxnMarkers appends with, for partitions this broker leads.
        self.markers = MarkerWriter(self.state_log.leadership, groups, clock, config.request_timeout_ms)
        #: Markers for partitions led elsewhere go through `marker_sender` (the inter-broker client).
        self.completion = TxnCompletion(cluster, node_id, self.state_log, self.markers, marker_sender)
        self.initialising = ProducerIdInit(self.state_log, producer_ids, self.completion)
        #: The periodic aborts of timed-out transactions and removal of expired transactional ids.
        self.expiry = TxnExpiry(config, self.state_log, self.completion)
        #: One leadership refresh at a time: a partition's load and unload must not interleave.
        self._refreshing = asyncio.Lock()
        self._refreshes: set[asyncio.Task[None]] = set()
        self.started = False

    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    # ----- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        """Create `__transaction_state` if the internal-topic port says so now (a single node), load the
        partitions this broker leads and start the periodic checks."""
        self.started = True
        if self.state_log.topics.created_at_startup:
            await self.state_log.ensure_topic()
        await self.refresh_leadership()
        self.expiry.start()

    def stop(self) -> None:
        self.started = False
        self.expiry.stop()
        for task in self._refreshes:
            task.cancel()
        self.completion.stop()
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
        it meanwhile), as the replica manager says."""
        since = self.state_log.leadership.leader_since_epoch(TRANSACTION_STATE_TOPIC, partition)
        return since is None or since > epoch

    def _loaded(self, transactions: list[TransactionMetadata]) -> None:
        """A partition's transactions, just loaded: those the previous leader left prepared (it died
        between the prepare and the complete record) get their markers now."""
        prepared = [m for m in transactions if m.state.is_prepared]
        for metadata in prepared:
            self.completion.send_markers(metadata)
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
        if await self.state_log.ensure_topic():
            await self.refresh_leadership()

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
        if transactional_id in self.state_log.writing:
            raise KafkaError(E.CONCURRENT_TRANSACTIONS)
        if metadata.producer_epoch != producer_epoch:
            raise KafkaError(E.PRODUCER_FENCED)
        return metadata

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
        """(producer id, epoch) for a transactional producer, once committed; KafkaError for the
        client's error. An unfinished transaction of an earlier instance is aborted first
        (CONCURRENT_TRANSACTIONS)."""
        timeout_ms = self._transaction_timeout_ms(timeout_ms, two_phase_commit)
        answer = await self.initialising.init(transactional_id, timeout_ms, producer_id, producer_epoch)
        await self._committed(transactional_id)
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
        timeout_ms = self._transaction_timeout_ms(timeout_ms, two_phase_commit)
        answer = await self.initialising.init(
            transactional_id, timeout_ms, producer_id, producer_epoch, keep_prepared=True
        )
        await self._committed(transactional_id)
        return answer

    def _transaction_timeout_ms(self, timeout_ms: int, two_phase_commit: bool) -> int:
        if two_phase_commit:
            # KIP-939: the external coordinator decides when the transaction ends, so no timeout (and
            # no transaction.max.timeout.ms bound); stored as Kafka stores it.
            return TWO_PHASE_COMMIT_TIMEOUT_MS
        if timeout_ms <= 0 or timeout_ms > self.config.transaction_max_timeout_ms:
            raise KafkaError(E.INVALID_TRANSACTION_TIMEOUT)
        return timeout_ms

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
                await self.state_log.write(transactional_id, value)
            except KafkaError as error:
                return {tp: error.error_code for tp in partitions}
        uncommitted = await txn_log_replicated(self.state_log, transactional_id)
        return dict.fromkeys(partitions, uncommitted or E.NONE)

    async def add_offsets(
        self, transactional_id: str, producer_id: int, producer_epoch: int, group_id: str
    ) -> ErrorCode:
        topic = self.cluster.topic(OFFSETS_TOPIC)
        if topic is None:
            return E.COORDINATOR_NOT_AVAILABLE
        try:
            check_key_length(group_id, "group id", E.INVALID_GROUP_ID)
        except KafkaError as error:
            return error.error_code
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
        self, transactional_id: str, producer_id: int, producer_epoch: int, topic: str, partition: int
    ) -> ErrorCode:
        """KIP-890 part 1 on the leader: a transactional batch only for a partition added to the
        ongoing transaction of the producer the transactional id has now
        (`transaction.partition.verification.enable`). Another id's producer is
        INVALID_PRODUCER_ID_MAPPING, as Kafka's handleVerifyPartitionsInTransaction: the right to write
        one transactional id is not one to append in another's transaction."""
        if not self.config.transaction_partition_verification_enable:
            return E.NONE
        try:  # as Kafka's getTransactionState first: loading, or not coordinated here, is retriable
            self.state_log.check_coordinator(transactional_id)
        except KafkaError as not_here:
            return not_here.error_code
        owner = self.state_log.txns.get(transactional_id)
        if owner is None or owner.producer_id != producer_id:
            return E.INVALID_PRODUCER_ID_MAPPING
        error = self.check_producer(producer_id, producer_epoch)
        if error is E.PRODUCER_FENCED:
            return E.INVALID_PRODUCER_EPOCH
        if error is not E.NONE:
            return error
        metadata = self.by_producer_id(producer_id)
        assert metadata is not None
        return E.NONE if (topic, partition) in metadata.partitions else E.INVALID_TXN_STATE

    # ----- EndTxn -----------------------------------------------------------------------------------

    async def end_txn(
        self, transactional_id: str, producer_id: int, producer_epoch: int, committed: bool
    ) -> None:
        """Prepare the transaction's commit or abort; answered once that is on the ISR, as Kafka's (its
        markers and completion follow in the background)."""
        metadata = self._metadata(transactional_id, producer_id, producer_epoch)
        state = metadata.state
        if state is TxnState.ONGOING:
            target = TxnState.PREPARE_COMMIT if committed else TxnState.PREPARE_ABORT
            await self.state_log.write(transactional_id, metadata.next_value(self.now_ms(), state=target))
            # On the ISR now: the markers may go out (never before, or a lost Prepare* record could
            # leave a transaction committed on some partitions and aborted on the others).
            self.completion.send_markers(metadata)
            await self._committed(transactional_id)
            return
        if (state, committed) in ((TxnState.COMPLETE_COMMIT, True), (TxnState.COMPLETE_ABORT, False)):
            await self._committed(transactional_id)  # a retry of an EndTxn that already completed
            return
        if state.is_prepared:
            self.completion.send_markers(metadata)  # if they are not under way already
            if (state is TxnState.PREPARE_COMMIT) == committed:
                raise KafkaError(E.CONCURRENT_TRANSACTIONS)  # a retry: answered once complete
        raise KafkaError(E.INVALID_TXN_STATE)

    async def _committed(self, transactional_id: str) -> None:
        """The end of a step answered to a client: once what the id's partition holds is committed
        (coordinator/txn_log_replication.py); KafkaError when it is not."""
        uncommitted = await txn_log_replicated(self.state_log, transactional_id)
        if uncommitted is not None:
            raise KafkaError(uncommitted)
