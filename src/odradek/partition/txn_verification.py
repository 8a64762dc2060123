"""KIP-890 part 1 on a partition leader: a transactional batch is appended only to a partition that is
in its producer's ongoing transaction, so that no stray batch can pin the last stable offset (Kafka's
ReplicaManager.appendRecordsWithVerification).

This broker's transaction coordinator is asked directly (`verify_batch`). When the producer's
coordinator is another broker, the leader asks it first, for the whole request at once
(`TxnVerification.verify`: AddPartitionsToTxn v4, `verify_only`, through the `RemoteTxnCoordinators`
port that cluster/txn_verification.py implements). As Kafka, only a partition with no transaction of
this producer open yet is verified: once its first batch is in, the producer state says the
transaction is open here. The coordinator's retriable answers, and a coordinator that cannot be
reached, are NOT_ENOUGH_REPLICAS to the producer (which retries), as Kafka maps them for Produce.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

from odradek.config.broker import BrokerConfig
from odradek.partition.leadership import Leadership
from odradek.partition.ports import RemoteTxnCoordinators, TxnCoordinatorLookup
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.records.attributes import TRANSACTIONAL_FLAG_MASK
from odradek.protocol.records.header import ATTRIBUTES_OFFSET
from odradek.storage.log_manager import LogManager

Verdicts = dict[tuple[str, int], ErrorCode]
#: A produce request's partitions: topic name (None: unknown), partition, its records.
ProducedPartitions = Iterable[tuple[str | None, int, bytes | bytearray | memoryview | None]]
_ATTRIBUTES = struct.Struct(">h")
_PRODUCER_ID = struct.Struct(">q")
#: Batch header: base offset 8, length 4, leader epoch 4, magic 1, crc 4, attributes 2, last offset
#: delta 4, base timestamp 8, max timestamp 8, then the producer id 8 and epoch 2.
_PRODUCER_ID_OFFSET = 43
_EPOCH_OFFSET = 51
_MAGIC_OFFSET = 16
_RETRIABLE = {
    ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.NOT_COORDINATOR,
    ErrorCode.CONCURRENT_TRANSACTIONS,
}


def transactional_producer(batches: bytes | bytearray | memoryview) -> tuple[int, int] | None:
    """(producer id, epoch) of a transactional v2 batch; None for any other."""
    if len(batches) <= _EPOCH_OFFSET + 2 or batches[_MAGIC_OFFSET] != 2:
        return None
    if not _ATTRIBUTES.unpack_from(batches, ATTRIBUTES_OFFSET)[0] & TRANSACTIONAL_FLAG_MASK:
        return None
    (producer_id,) = _PRODUCER_ID.unpack_from(batches, _PRODUCER_ID_OFFSET)
    (producer_epoch,) = _ATTRIBUTES.unpack_from(batches, _EPOCH_OFFSET)
    return producer_id, producer_epoch


def verify_batch(
    coordinator: TxnCoordinatorLookup | None,
    transactional_id: str | None,
    topic: str,
    partition: int,
    batches: bytearray | memoryview,
    verdicts: Verdicts | None = None,
) -> ErrorCode:
    """NONE for a non-transactional batch; for a transactional one, whether its producer's ongoing
    transaction holds the partition (Kafka 3.x's INVALID_TXN_STATE otherwise), that producer being the
    request's transactional id's (else INVALID_PRODUCER_ID_MAPPING). Only the header's
    attributes, producer id and epoch are read. In a cluster, `verdicts` holds what other brokers'
    coordinators answered (`TxnVerification.verify`)."""
    producer = transactional_producer(batches)
    if producer is None:
        return ErrorCode.NONE
    if verdicts is not None and (topic, partition) in verdicts:
        return verdicts[(topic, partition)]
    if coordinator is None:
        return ErrorCode.INVALID_TXN_STATE
    if transactional_id is None:  # refused before, as Kafka's KafkaApis (handlers/produce.py)
        return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    return _for_produce(coordinator.verify_partition(transactional_id, *producer, topic, partition))


class TxnVerification:
    """A leader's verification of transactional batches with other brokers' transaction coordinators."""

    def __init__(
        self,
        node_id: int,
        config: BrokerConfig,
        leadership: Leadership,
        logs: LogManager,
        coordinators: RemoteTxnCoordinators,
    ) -> None:
        self._node_id = node_id
        self._config = config
        self._leadership = leadership
        self._logs = logs
        self.coordinators = coordinators

    async def verify(
        self,
        transactional_id: str | None,
        coordinator: TxnCoordinatorLookup | None,
        partitions: ProducedPartitions,
    ) -> Verdicts:
        """The verdicts for the request's transactional partitions whose coordinator is another broker
        (the others are verified locally, by `verify_batch`).

        Transactional batches of more than one producer are all INVALID_PRODUCER_ID_MAPPING, as Kafka's
        ReplicaManager refuses such a request: the coordinator is asked for one producer, and another's
        batch must not ride on its answer. (Kafka answers the whole request so; this answers the
        transactional partitions led here, the others are refused or appended as they would be.)"""
        if transactional_id is None:
            return {}
        candidates, open_here = self._transactional_partitions(partitions)
        if len(set(candidates.values())) > 1:
            return dict.fromkeys(candidates, ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        if (
            not candidates
            or coordinator is None
            or not self._config.transaction_partition_verification_enable
        ):
            return {}
        node = coordinator.coordinator_node(transactional_id)
        if node == self._node_id:
            return {}  # the local coordinator answers, in verify_batch
        verdicts: Verdicts = dict.fromkeys(open_here, ErrorCode.NONE)
        wanted = {tp: producer for tp, producer in candidates.items() if tp not in open_here}
        if not wanted:
            return verdicts
        producer_id, producer_epoch = next(iter(wanted.values()))
        asked = await self.coordinators.verify(
            node, transactional_id, producer_id, producer_epoch, list(wanted)
        )
        return verdicts | {tp: _for_produce(error) for tp, error in asked.items()}

    def _transactional_partitions(
        self, partitions: ProducedPartitions
    ) -> tuple[dict[tuple[str, int], tuple[int, int]], set[tuple[str, int]]]:
        """The transactional partitions led here with their batch's producer, and those of them where
        that producer's transaction is already open (verified when it began)."""
        candidates: dict[tuple[str, int], tuple[int, int]] = {}
        open_here: set[tuple[str, int]] = set()
        for name, index, records in partitions:
            if name is None:
                continue
            producer = transactional_producer(records or b"")
            if producer is None or self._leadership.leader_refusal(name, index) is not None:
                continue
            log = self._logs.get_log(name, index)
            if log is None:
                continue
            candidates[(name, index)] = producer
            entry = log.producer_state.last_entry(producer[0])
            if (
                entry is not None
                and entry.producer_epoch == producer[1]
                and entry.current_txn_first_offset is not None
            ):
                open_here.add((name, index))
        return candidates, open_here

    def close(self) -> None:
        self.coordinators.close()


def _for_produce(error: ErrorCode) -> ErrorCode:
    return ErrorCode.NOT_ENOUGH_REPLICAS if error in _RETRIABLE else error
