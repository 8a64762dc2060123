"""Kafka's TransactionMarkerChannelManager: the COMMIT / ABORT markers of prepared transactions, written
in the background wherever their partitions are led, then the transaction's completion.

One queue and one sender task per destination broker; everything queued for a broker when its sender
wakes goes in one WriteTxnMarkers (v1) request, a marker per transaction, one request in flight per
broker (as Kafka's). A partition answered NONE (or UNSUPPORTED_FOR_MESSAGE_FORMAT: nothing of the
transaction can be there) is done; any other error (UNKNOWN_TOPIC_OR_PARTITION from a leader whose
LeaderAndIsr is late, NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS, REQUEST_TIMED_OUT...), or a failed
connection, sends it again after a backoff to whoever leads it then (the metadata cache is the
controller's view, refreshed by its UpdateMetadata); a partition gone from that view was deleted and
is skipped. A partition led here is written directly
(`write_local` appends at the call, where the marker writer checks the replica manager's leadership,
never the cache's, and the in-sync replicas are then waited for in a task of its own, as a leader
elsewhere answers only once they hold it). A partition without a leader waits for one. Once every
marker is written, `on_complete` writes the transaction's Complete* record; the transaction stays
under way until that returns. A transaction the coordinator no longer owns (its `__transaction_state`
partition moved, or a newer epoch) is dropped: the new coordinator sends its markers again.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from odradek.coordinator.ports import BrokerUnavailable, MetadataView, TxnMarkerSender
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.write_txn_markers import (
    WritableTxnMarker,
    WritableTxnMarkerTopic,
    WriteTxnMarkersRequest,
)

log = logging.getLogger("odradek.coordinator.transactions")

VERSION = 1
#: Pause before a partition's marker is sent again (Kafka retries after its metadata refresh backoff).
RETRY_BACKOFF_S = 0.1
TopicPartition = tuple[str, int]


@dataclass(eq=False)
class PendingMarkers:
    """The markers of one prepared transaction still to be written."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    committed: bool
    coordinator_epoch: int
    remaining: set[TopicPartition] = field(default_factory=set)
    #: Every marker written: its Complete* record is being written (`on_complete`).
    completing: bool = False


#: Answers after which a partition needs no marker (Kafka's completion handler removes it on these).
_DONE = frozenset({ErrorCode.NONE, ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT, ErrorCode.UNSUPPORTED_VERSION})


class TxnMarkerChannel:
    def __init__(
        self,
        cluster: MetadataView,
        node_id: int,
        sender: TxnMarkerSender,
        write_local: Callable[[PendingMarkers, TopicPartition], Awaitable[ErrorCode]],
        still_wanted: Callable[[PendingMarkers], bool],
        on_complete: Callable[[PendingMarkers], Awaitable[None]],
    ) -> None:
        self.cluster = cluster
        #: The requests to other brokers (their connections are the channel's: closed when it stops).
        self.sender = sender
        self.node_id = node_id
        self.write_local = write_local
        self.still_wanted = still_wanted
        self.on_complete = on_complete
        #: Transactions whose markers are under way, by transactional id.
        self.pending: dict[str, PendingMarkers] = {}
        self._queues: dict[int, list[tuple[PendingMarkers, TopicPartition]]] = {}
        self._wakeups: dict[int, asyncio.Event] = {}
        self._senders: dict[int, asyncio.Task[None]] = {}
        self._retries: set[asyncio.TimerHandle] = set()
        #: Markers appended here, waiting for their in-sync replicas.
        self._local_writes: set[asyncio.Future[ErrorCode]] = set()
        #: Transactions whose Complete* record is being written.
        self._completions: set[asyncio.Task[None]] = set()
        self._unreachable: set[int] = set()

    def send(self, txn: PendingMarkers) -> None:
        """Write `txn`'s remaining markers wherever their partitions are led (those led here at once);
        `on_complete` when all are. It replaces what was under way for the same transactional id."""
        self.pending[txn.transactional_id] = txn
        for tp in sorted(txn.remaining):
            self._route(txn, tp)
        self._maybe_done(txn)

    def under_way(self, transactional_id: str) -> PendingMarkers | None:
        """What is being written for the transactional id (its markers, then its completion), if any."""
        return self.pending.get(transactional_id)

    def drop(self, transactional_id: str) -> None:
        """Stop sending the transaction's markers (its coordinator moved): queued entries are skipped."""
        self.pending.pop(transactional_id, None)

    def stop(self) -> None:
        for task in self._senders.values():
            task.cancel()
        for handle in self._retries:
            handle.cancel()
        for write in self._local_writes:
            write.cancel()
        for completion in self._completions:
            completion.cancel()
        self._local_writes.clear()
        self._completions.clear()
        self._senders.clear()
        self._retries.clear()
        self._queues.clear()
        self.pending.clear()
        self.sender.close()

    # ----- routing ------------------------------------------------------------------------------------

    def _live(self, txn: PendingMarkers) -> bool:
        if self.pending.get(txn.transactional_id) is not txn:
            return False
        if not self.still_wanted(txn):
            self.pending.pop(txn.transactional_id, None)
            return False
        return True

    def _route(self, txn: PendingMarkers, tp: TopicPartition) -> None:
        if not self._live(txn) or tp not in txn.remaining:
            return
        state = self.cluster.partition(*tp)
        if state is None:
            txn.remaining.discard(tp)  # deleted meanwhile: no marker to write
            return
        leader = state.leader_id
        if leader == self.node_id:
            try:
                written = asyncio.ensure_future(self.write_local(txn, tp))  # appended now; its wait runs
            except Exception:
                # Kept under way (and tried again) rather than lost with the rest of `send`.
                log.exception("writing a marker of %s to %s-%d failed", txn.transactional_id, *tp)
                self._retry_later(txn, tp)
                return
            self._local_writes.add(written)
            written.add_done_callback(self._local_writes.discard)
            written.add_done_callback(functools.partial(self._written_here, txn, tp))
            return
        if leader < 0 or not self.sender.reachable(leader):
            self._retry_later(txn, tp)  # no leader yet: wait for the controller to elect one
            return
        self._queues.setdefault(leader, []).append((txn, tp))
        self._wake(leader)

    def _written_here(
        self, txn: PendingMarkers, tp: TopicPartition, written: asyncio.Future[ErrorCode]
    ) -> None:
        if written.cancelled():
            return  # the channel stopped
        failure = written.exception()
        if failure is not None:
            log.error("writing a marker of %s to %s-%d failed", txn.transactional_id, *tp, exc_info=failure)
        if failure is None and written.result() in _DONE:
            txn.remaining.discard(tp)
            self._maybe_done(txn)
        else:
            self._retry_later(txn, tp)

    def _retry_later(self, txn: PendingMarkers, tp: TopicPartition) -> None:
        def again() -> None:
            self._retries.discard(handle)
            self._route(txn, tp)
            self._maybe_done(txn)

        handle = asyncio.get_running_loop().call_later(RETRY_BACKOFF_S, again)
        self._retries.add(handle)

    def _maybe_done(self, txn: PendingMarkers) -> None:
        if not txn.remaining and not txn.completing and self.pending.get(txn.transactional_id) is txn:
            txn.completing = True
            completion = asyncio.get_running_loop().create_task(self._complete(txn))
            self._completions.add(completion)
            completion.add_done_callback(self._completions.discard)

    async def _complete(self, txn: PendingMarkers) -> None:
        try:
            await self.on_complete(txn)
        finally:
            if self.pending.get(txn.transactional_id) is txn:
                del self.pending[txn.transactional_id]

    # ----- senders ------------------------------------------------------------------------------------

    def _wake(self, broker: int) -> None:
        event = self._wakeups.setdefault(broker, asyncio.Event())
        event.set()
        task = self._senders.get(broker)
        if task is None or task.done():
            self._senders[broker] = asyncio.get_running_loop().create_task(
                self._sender(broker, event), name=f"txn-markers-to-{broker}"
            )

    async def _sender(self, broker: int, wakeup: asyncio.Event) -> None:
        while True:
            await wakeup.wait()
            wakeup.clear()
            batch = [(txn, tp) for txn, tp in self._queues.pop(broker, []) if self._live(txn)]
            if batch:
                try:
                    await self._send(broker, batch)
                except Exception:
                    log.exception("sending transaction markers to broker %d failed", broker)
                    for txn, tp in batch:
                        self._retry_later(txn, tp)

    async def _send(self, broker: int, batch: list[tuple[PendingMarkers, TopicPartition]]) -> None:
        if not self.sender.reachable(broker):  # it left the cluster since: its partitions get other leaders
            for txn, tp in batch:
                self._retry_later(txn, tp)
            return
        by_txn: dict[int, tuple[PendingMarkers, dict[str, list[int]]]] = {}
        for txn, tp in batch:
            topics = by_txn.setdefault(id(txn), (txn, {}))[1]
            topics.setdefault(tp[0], []).append(tp[1])
        request = WriteTxnMarkersRequest(
            markers=[
                WritableTxnMarker(
                    producer_id=txn.producer_id,
                    producer_epoch=txn.producer_epoch,
                    transaction_result=txn.committed,
                    topics=[
                        WritableTxnMarkerTopic(name=topic, partition_indexes=sorted(set(indexes)))
                        for topic, indexes in topics.items()
                    ],
                    coordinator_epoch=txn.coordinator_epoch,
                )
                for txn, topics in by_txn.values()
            ]
        )
        try:
            response = await self.sender.write_txn_markers(broker, request, VERSION)
        except BrokerUnavailable as unreachable:
            # Said once per outage: the retries run every RETRY_BACKOFF_S until it answers or leaves.
            level = logging.DEBUG if broker in self._unreachable else logging.INFO
            self._unreachable.add(broker)
            log.log(level, "transaction markers to broker %d not sent (%s): retrying", broker, unreachable)
            for txn, tp in batch:
                self._retry_later(txn, tp)
            return
        self._unreachable.discard(broker)
        answered: dict[tuple[int, str, int], ErrorCode] = {}
        for result in response.markers:
            for topic in result.topics:
                for partition in topic.partitions:
                    answered[(result.producer_id, topic.name, partition.partition_index)] = ErrorCode(
                        partition.error_code
                    )
        for txn, tp in batch:
            error = answered.get((txn.producer_id, *tp), ErrorCode.UNKNOWN_SERVER_ERROR)
            self._answered(broker, txn, tp, error)

    def _answered(self, broker: int, txn: PendingMarkers, tp: TopicPartition, error: ErrorCode) -> None:
        if error in _DONE:
            txn.remaining.discard(tp)
            self._maybe_done(txn)
        elif error in (ErrorCode.TRANSACTION_COORDINATOR_FENCED, ErrorCode.INVALID_PRODUCER_EPOCH):
            # A newer coordinator (or producer epoch) owns the transaction: Kafka stops here too.
            log.warning(
                "%s marker of %s refused by broker %d for %s-%d: %s; left to the newer coordinator",
                "COMMIT" if txn.committed else "ABORT",
                txn.transactional_id,
                broker,
                *tp,
                error.name,
            )
            self.drop(txn.transactional_id)
        else:
            log.debug(
                "%s marker of %s to %s-%d on broker %d: %s; sending again",
                "COMMIT" if txn.committed else "ABORT",
                txn.transactional_id,
                *tp,
                broker,
                error.name,
            )
            self._retry_later(txn, tp)
