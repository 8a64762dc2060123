"""InitProducerId for a transactional id (Kafka's TransactionCoordinator.handleInitProducerId): a new
producer id for a new transactional id, else the next epoch of its producer id (a new id once the epoch
is exhausted), fencing every earlier instance. KIP-360: a producer re-initialising names its id and
epoch, and a retry whose answer was lost gets the same answer again. An earlier instance's unfinished
transaction is aborted first (the client is answered CONCURRENT_TRANSACTIONS and retries), or, with
KIP-939's keepPreparedTxn, taken over.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from odradek.coordinator.ports import ProducerIdSource
from odradek.coordinator.txn_completion import TxnCompletion
from odradek.coordinator.txn_metadata import MAX_EPOCH, TransactionMetadata, TxnState
from odradek.coordinator.txn_state_log import TxnStateLog
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


class ProducerIdInit:
    def __init__(
        self, state_log: TxnStateLog, producer_ids: ProducerIdSource, completion: TxnCompletion
    ) -> None:
        self.state_log = state_log
        self.producer_ids = producer_ids
        self.completion = completion

    async def init(
        self,
        transactional_id: str,
        timeout_ms: int,
        producer_id: int,
        producer_epoch: int,
        keep_prepared: bool = False,
    ) -> InitAnswer:
        """The producer id and epoch for the transactional id (`timeout_ms` checked already); KafkaError
        for the client's error. An unfinished transaction of an earlier instance is aborted first
        (CONCURRENT_TRANSACTIONS), or with `keep_prepared` taken over."""
        self.state_log.check_coordinator(transactional_id)
        metadata = self.state_log.txns.get(transactional_id)
        now = self.state_log.now_ms()
        if metadata is None:
            new_id = await self.producer_ids.generate()
            # Re-check: another InitProducerId for this id may have run while the id block was written.
            if transactional_id not in self.state_log.txns:
                value = TransactionMetadata(transactional_id, new_id, 0, timeout_ms).next_value(now)
                await self.state_log.write(transactional_id, value)
                return InitAnswer(new_id, 0)
            metadata = self.state_log.txns[transactional_id]
        if transactional_id in self.state_log.writing:
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
            self.completion.send_markers(metadata)  # if they are not under way already
            raise KafkaError(E.CONCURRENT_TRANSACTIONS)
        if metadata.state is TxnState.ONGOING and keep_prepared:
            return await self._take_over_ongoing(metadata, timeout_ms, now)
        if metadata.state is TxnState.ONGOING:
            # A new instance takes over: the old one's transaction is aborted with a bumped epoch
            # (which fences it); the client retries and then gets its own epoch.
            await self.completion.abort_fencing(metadata)
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
        await self.state_log.write(transactional_id, value)
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
        await self.state_log.write(metadata.transactional_id, value)
        metadata.last_producer_epoch = -1
        log.info(
            "%s: ongoing transaction of producer %d epoch %d kept for its two-phase commit (now epoch %d)",
            metadata.transactional_id,
            ongoing[0],
            ongoing[1],
            epoch,
        )
        return InitAnswer(metadata.producer_id, epoch, *ongoing)
