"""Completing a prepared transaction: its COMMIT / ABORT markers, then its CompleteCommit /
CompleteAbort record (Kafka's TransactionMarkerChannelManager: addTxnMarkersToSend, then
maybeWriteTxnCompletion).

The coordinator hands a transaction over here once its PrepareCommit / PrepareAbort record is on the
ISR, and answers its client at once, as Kafka's endTransaction does: the markers are written in the
background by the marker channel (txn_marker_channel.py), each on its partition's leader with acks=-1
(txn_markers.py), sent again until written, and the Complete* record follows the last of them. So a
step never waits for markers: neither EndTxn, nor an InitProducerId that aborts its predecessor's
transaction, nor the periodic abort check (one marker waiting for its followers held every other
timed-out transaction open when it did). Until the Complete* record is written, the transaction's
steps are answered CONCURRENT_TRANSACTIONS by the coordinator, and its clients retry.

What is under way is the channel's, one entry per transactional id, for the transaction as it was
handed over (producer id and epoch, result, coordinator epoch): handed over again as it still is, it
is left alone; handed over anew (its `__transaction_state` partition loaded again, under a newer
coordinator epoch), it replaces what was under way, whose late answers are ignored.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable

from odradek.coordinator.ports import MetadataView, TxnMarkerSender
from odradek.coordinator.txn_marker_channel import (
    RETRY_BACKOFF_S,
    PendingMarkers,
    TopicPartition,
    TxnMarkerChannel,
)
from odradek.coordinator.txn_markers import MarkerWriter
from odradek.coordinator.txn_metadata import MAX_EPOCH, TransactionMetadata, TxnState
from odradek.coordinator.txn_state_log import TxnStateLog
from odradek.protocol.error_codes import ErrorCode, KafkaError

log = logging.getLogger("odradek.coordinator.transactions")
_WRITE_AGAIN = (ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.CONCURRENT_TRANSACTIONS)


class TxnCompletion:
    def __init__(
        self,
        cluster: MetadataView,
        node_id: int,
        state_log: TxnStateLog,
        markers: MarkerWriter,
        sender: TxnMarkerSender,
    ) -> None:
        self.state_log = state_log
        self.markers = markers
        self.channel = TxnMarkerChannel(
            cluster,
            node_id,
            sender,
            write_local=self._write_here,
            still_wanted=lambda txn: self._current(txn) is not None,
            on_complete=self._write_complete,
        )

    def send_markers(self, metadata: TransactionMetadata) -> None:
        """Write the markers of a prepared transaction in the background, then its Complete* record;
        nothing when they are under way already for the transaction as it is."""
        under_way = self.channel.under_way(metadata.transactional_id)
        if under_way is not None and self._current(under_way) is metadata:
            return
        self.channel.send(
            PendingMarkers(
                metadata.transactional_id,
                metadata.producer_id,
                metadata.producer_epoch,
                metadata.state is TxnState.PREPARE_COMMIT,
                metadata.coordinator_epoch,
                set(metadata.partitions),
            )
        )

    async def abort_fencing(self, metadata: TransactionMetadata) -> None:
        """Abort an ongoing transaction with the epoch bumped, so its producer is fenced (Kafka's
        PrepareEpochFence, then PrepareAbort), and send its markers; KafkaError if the PrepareAbort
        could not be written."""
        epoch = min(metadata.producer_epoch + 1, MAX_EPOCH)
        value = metadata.next_value(
            self.state_log.now_ms(), state=TxnState.PREPARE_ABORT, producer_epoch=epoch
        )
        await self.state_log.write(metadata.transactional_id, value)
        metadata.last_producer_epoch = -1  # the fenced epoch may not come back as a "retry"
        self.send_markers(metadata)

    def stop(self) -> None:
        self.channel.stop()

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

    def _write_here(self, txn: PendingMarkers, tp: TopicPartition) -> Awaitable[ErrorCode]:
        return self.markers.write(
            *tp, txn.producer_id, txn.producer_epoch, txn.committed, txn.coordinator_epoch
        )

    async def _write_complete(self, txn: PendingMarkers) -> None:
        """The Complete* record, once every marker is written; as Kafka's, written again while
        `__transaction_state` cannot take it (COORDINATOR_NOT_AVAILABLE: under its min ISR, timed out)
        or another write of the id waits (an earlier coordinator epoch's, after a reload), given up
        once this broker no longer coordinates the transaction as it was."""
        done = TxnState.COMPLETE_COMMIT if txn.committed else TxnState.COMPLETE_ABORT
        while (metadata := self._current(txn)) is not None:
            value = metadata.next_value(self.state_log.now_ms(), state=done, partitions=set())
            try:
                await self.state_log.write(txn.transactional_id, value)
                return
            except KafkaError as error:
                if error.error_code not in _WRITE_AGAIN:
                    # NOT_COORDINATOR: whoever loads the partition next completes it. Anything else
                    # leaves it prepared: the coordinator's periodic check hands it over again.
                    log.info("completing the transaction of %s: %s", txn.transactional_id, error)
                    return
                log.debug(
                    "completing the transaction of %s: %s; writing it again", txn.transactional_id, error
                )
            await asyncio.sleep(RETRY_BACKOFF_S)
