"""Writing COMMIT / ABORT markers into the partitions a broker leads: what WriteTxnMarkers (key 27)
does on the partition leader, and what a single-node transaction coordinator calls directly (the
leader is itself, so there is no network round trip to make).

A marker is a control batch of the producer id and epoch, appended with the coordinator's origin (no
sequence checks; an older coordinator epoch is refused by the producer state as
TRANSACTION_COORDINATOR_FENCED). Appending it closes the producer's transaction in that partition,
which moves the last stable offset and, for an abort, adds the transaction to the `.txnindex`
(storage does both). A marker in `__consumer_offsets` also completes the producer's pending
transactional offset commits. As Kafka's acks=-1 marker appends, a marker counts as written only once
the partition's in-sync replicas hold it (`write_replicated`): a transaction completed on a marker its
leader alone had would stay open in that partition for good if the leader were lost.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Hashable
from typing import Any

from odradek.cluster.leadership import Leadership
from odradek.coordinator.settings import OFFSETS_TOPIC
from odradek.handlers.errors import error_code_for
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.records import ControlRecordType
from odradek.protocol.records.control import build_end_transaction_marker_batch
from odradek.storage import errors as storage_errors
from odradek.storage.partition import TopicPartition
from odradek.storage.producer_state import AppendOrigin


class MarkerWriter:
    def __init__(
        self,
        logs: Any,
        leadership: Leadership,
        groups: Any,
        notify_append: Callable[[Hashable], None] | None = None,
        clock: Callable[[], float] = time.time,
        replicated: Callable[[str, int, int], Awaitable[ErrorCode]] | None = None,
    ) -> None:
        self.logs = logs
        #: Which partitions this broker leads, and at which epoch (cluster/leadership.py).
        self.leadership = leadership
        self.groups = groups
        self.notify_append = notify_append
        self.clock = clock
        #: Waits until a partition's in-sync replicas hold what was appended (topic, partition, the
        #: offset after it): the append's outcome. None: the append itself is enough (a single node).
        self.replicated = replicated

    async def write_replicated(
        self,
        topic: str,
        partition: int,
        producer_id: int,
        producer_epoch: int,
        committed: bool,
        coordinator_epoch: int,
    ) -> ErrorCode:
        """`write`, then wait for the in-sync replicas: NONE once they hold the marker, else the
        append's error (REQUEST_TIMED_OUT, NOT_ENOUGH_REPLICAS_AFTER_APPEND, NOT_LEADER_OR_FOLLOWER),
        which the coordinator retries: a marker written again closes nothing twice."""
        error = self.write(topic, partition, producer_id, producer_epoch, committed, coordinator_epoch)
        log = self.logs.get_log(topic, partition)
        if error is not ErrorCode.NONE or self.replicated is None or log is None:
            return error
        return await self.replicated(topic, partition, log.log_end_offset)

    def write(
        self,
        topic: str,
        partition: int,
        producer_id: int,
        producer_epoch: int,
        committed: bool,
        coordinator_epoch: int,
    ) -> ErrorCode:
        log = self.logs.get_log(topic, partition)
        if log is None:
            # The partition was deleted meanwhile: Kafka's marker channel drops it, nothing to close.
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        # Stamped with the epoch of the last LeaderAndIsr this broker applied, never the cache's
        epoch = self.leadership.leader_epoch(topic, partition)
        if epoch is None:
            # Another broker leads it: the marker goes there (the coordinator's marker channel).
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        control = ControlRecordType.COMMIT if committed else ControlRecordType.ABORT
        batch = bytearray(
            build_end_transaction_marker_batch(
                control,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                coordinator_epoch=coordinator_epoch,
                timestamp=int(self.clock() * 1000),
            )
        )
        try:
            log.append(batch, leader_epoch=epoch, origin=AppendOrigin.COORDINATOR)
        except storage_errors.StorageError as error:
            return error_code_for(error)
        if topic == OFFSETS_TOPIC and self.groups is not None:
            self.groups.complete_transaction(partition, producer_id, committed)
        if self.notify_append is not None:
            self.notify_append(TopicPartition(topic, partition))
        return ErrorCode.NONE
