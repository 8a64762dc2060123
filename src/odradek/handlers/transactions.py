"""The transaction APIs: AddPartitionsToTxn (24), AddOffsetsToTxn (25), EndTxn (26), WriteTxnMarkers
(27) and TxnOffsetCommit (28), answered by the transaction coordinator (coordinator/txn_coordinator.py)
and, for offsets, the group coordinator.

Version notes:
- PRODUCER_FENCED (90) is answered as INVALID_PRODUCER_EPOCH to clients too old to know it, as Kafka
  does: AddPartitionsToTxn, AddOffsetsToTxn and EndTxn before v2, TxnOffsetCommit before v3.
- AddPartitionsToTxn v0-3 is the client's call (one transaction); v4+ is the broker's batched form
  (KIP-890 part 1), served too: `verify_only` answers whether each partition is already in the
  producer's ongoing transaction, without adding it.
- WriteTxnMarkers is served for the partitions this broker leads (NOT_LEADER_OR_FOLLOWER for the
  others); a single-node coordinator writes its markers through the same code without a request.
"""

from __future__ import annotations

import struct

from odradek.coordinator.offset_requests import OffsetCommitItem
from odradek.coordinator.settings import OFFSETS_TOPIC
from odradek.coordinator.txn_coordinator import TransactionCoordinator
from odradek.handlers.context import RequestContext
from odradek.handlers.groups import group_coordinator
from odradek.handlers.leadership import refusal
from odradek.handlers.registry import handles
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.protocol.messages.add_offsets_to_txn import AddOffsetsToTxnRequest, AddOffsetsToTxnResponse
from odradek.protocol.messages.add_partitions_to_txn import (
    AddPartitionsToTxnPartitionResult,
    AddPartitionsToTxnPartitionResultResult,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    AddPartitionsToTxnResult,
    AddPartitionsToTxnTopicResult,
    AddPartitionsToTxnTopicResultResult,
)
from odradek.protocol.messages.end_txn import EndTxnRequest, EndTxnResponse
from odradek.protocol.messages.txn_offset_commit import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
    TxnOffsetCommitResponsePartition,
    TxnOffsetCommitResponseTopic,
)
from odradek.protocol.messages.write_txn_markers import (
    WritableTxnMarkerPartitionResult,
    WritableTxnMarkerResult,
    WritableTxnMarkerTopicResult,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)
from odradek.protocol.records.attributes import TRANSACTIONAL_FLAG_MASK
from odradek.protocol.records.header import ATTRIBUTES_OFFSET


def transaction_coordinator(context: RequestContext) -> TransactionCoordinator:
    coordinator = context.services.transactions
    if coordinator is None:
        raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    return coordinator


def for_version(error: ErrorCode, api_version: int, fenced_since: int) -> ErrorCode:
    """PRODUCER_FENCED as the client's version knows it."""
    if error is ErrorCode.PRODUCER_FENCED and api_version < fenced_since:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return error


@handles(ApiKey.ADD_PARTITIONS_TO_TXN, 0, 5)
async def handle_add_partitions_to_txn(
    request: AddPartitionsToTxnRequest, context: RequestContext
) -> AddPartitionsToTxnResponse:
    if context.api_version >= 4:
        return _add_partitions_batched(request, context)
    wanted = [(t.name, p) for t in request.v3_and_below_topics for p in t.partitions]
    try:
        errors = transaction_coordinator(context).add_partitions(
            request.v3_and_below_transactional_id,
            request.v3_and_below_producer_id,
            request.v3_and_below_producer_epoch,
            wanted,
        )
    except KafkaError as error:
        errors = {tp: error.error_code for tp in wanted}
    by_topic: dict[str, list[AddPartitionsToTxnPartitionResultResult]] = {}
    for (topic, partition), error_code in errors.items():
        by_topic.setdefault(topic, []).append(
            AddPartitionsToTxnPartitionResultResult(
                partition_index=partition,
                partition_error_code=for_version(error_code, context.api_version, 2),
            )
        )
    return AddPartitionsToTxnResponse(
        results_by_topic_v3_and_below=[
            AddPartitionsToTxnTopicResultResult(name=t, results_by_partition=r) for t, r in by_topic.items()
        ]
    )


def _add_partitions_batched(
    request: AddPartitionsToTxnRequest, context: RequestContext
) -> AddPartitionsToTxnResponse:
    results = []
    for txn in request.transactions:
        wanted = [(t.name, p) for t in txn.topics for p in t.partitions]
        try:
            coordinator = transaction_coordinator(context)
            if txn.verify_only:
                errors = {
                    tp: coordinator.verify_partition(txn.producer_id, txn.producer_epoch, *tp)
                    for tp in wanted
                }
            else:
                errors = coordinator.add_partitions(
                    txn.transactional_id, txn.producer_id, txn.producer_epoch, wanted
                )
        except KafkaError as error:
            errors = {tp: error.error_code for tp in wanted}
        by_topic: dict[str, list[AddPartitionsToTxnPartitionResult]] = {}
        for (topic, partition), error_code in errors.items():
            by_topic.setdefault(topic, []).append(
                AddPartitionsToTxnPartitionResult(partition_index=partition, partition_error_code=error_code)
            )
        results.append(
            AddPartitionsToTxnResult(
                transactional_id=txn.transactional_id,
                topic_results=[
                    AddPartitionsToTxnTopicResult(name=t, results_by_partition=r) for t, r in by_topic.items()
                ],
            )
        )
    return AddPartitionsToTxnResponse(error_code=ErrorCode.NONE, results_by_transaction=results)


@handles(ApiKey.ADD_OFFSETS_TO_TXN, 0, 4)
async def handle_add_offsets_to_txn(
    request: AddOffsetsToTxnRequest, context: RequestContext
) -> AddOffsetsToTxnResponse:
    try:
        error = transaction_coordinator(context).add_offsets(
            request.transactional_id, request.producer_id, request.producer_epoch, request.group_id
        )
    except KafkaError as failure:
        error = failure.error_code
    return AddOffsetsToTxnResponse(error_code=for_version(error, context.api_version, 2))


@handles(ApiKey.END_TXN, 0, 4)
async def handle_end_txn(request: EndTxnRequest, context: RequestContext) -> EndTxnResponse:
    try:
        transaction_coordinator(context).end_txn(
            request.transactional_id, request.producer_id, request.producer_epoch, request.committed
        )
    except KafkaError as failure:
        return EndTxnResponse(error_code=for_version(failure.error_code, context.api_version, 2))
    return EndTxnResponse(error_code=ErrorCode.NONE)


@handles(ApiKey.TXN_OFFSET_COMMIT, 0, 4)
async def handle_txn_offset_commit(
    request: TxnOffsetCommitRequest, context: RequestContext
) -> TxnOffsetCommitResponse:
    wanted = [(t.name, p.partition_index) for t in request.topics for p in t.partitions]
    try:
        # The group's offsets partition must be in the producer's ongoing transaction (AddOffsetsToTxn),
        # or no marker would ever reach it and the offsets would stay pending for good.
        coordinator = transaction_coordinator(context)
        groups = group_coordinator(context)
        offsets_partition = groups.runtime.partition_for(request.group_id)
        unverified = coordinator.check_producer(request.producer_id, request.producer_epoch)
        if unverified is ErrorCode.NONE:
            unverified = coordinator.verify_partition(
                request.producer_id, request.producer_epoch, OFFSETS_TOPIC, offsets_partition
            )
        if unverified is not ErrorCode.NONE:
            raise KafkaError(unverified)
        items = [
            OffsetCommitItem(
                t.name, p.partition_index, p.committed_offset, p.committed_leader_epoch, p.committed_metadata
            )
            for t in request.topics
            for p in t.partitions
        ]
        errors = groups.commit_transactional_offsets(
            request.group_id,
            request.producer_id,
            request.producer_epoch,
            request.member_id,
            request.generation_id,
            items,
        )
    except KafkaError as failure:
        errors = dict.fromkeys(wanted, failure.error_code)
    by_topic: dict[str, list[TxnOffsetCommitResponsePartition]] = {}
    for (topic, partition), error_code in errors.items():
        by_topic.setdefault(topic, []).append(
            TxnOffsetCommitResponsePartition(
                partition_index=partition, error_code=for_version(error_code, context.api_version, 3)
            )
        )
    return TxnOffsetCommitResponse(
        topics=[TxnOffsetCommitResponseTopic(name=t, partitions=p) for t, p in by_topic.items()]
    )


@handles(ApiKey.WRITE_TXN_MARKERS, 0, 1)
async def handle_write_txn_markers(
    request: WriteTxnMarkersRequest, context: RequestContext
) -> WriteTxnMarkersResponse:
    coordinator = transaction_coordinator(context)
    results = []
    for marker in request.markers:
        topics = []
        for topic in marker.topics:
            partitions = []
            for partition in topic.partition_indexes:
                refused = refusal(context, topic.name, partition)
                if refused is not None:
                    error = refused.error_code
                else:
                    error = coordinator.markers.write(
                        topic.name,
                        partition,
                        marker.producer_id,
                        marker.producer_epoch,
                        marker.transaction_result,
                        marker.coordinator_epoch,
                    )
                partitions.append(
                    WritableTxnMarkerPartitionResult(partition_index=partition, error_code=error)
                )
            topics.append(WritableTxnMarkerTopicResult(name=topic.name, partitions=partitions))
        results.append(WritableTxnMarkerResult(producer_id=marker.producer_id, topics=topics))
    return WriteTxnMarkersResponse(markers=results)


def verify_transactional_produce(
    context: RequestContext, topic: str, partition: int, batches: bytearray | memoryview
) -> ErrorCode:
    """NONE for a non-transactional batch; for a transactional one, whether its producer's ongoing
    transaction holds the partition (Kafka 3.x's INVALID_TXN_STATE otherwise), so no stray batch can
    pin the last stable offset. Only the header's attributes, producer id and epoch are read."""
    if len(batches) <= _EPOCH_OFFSET + 2 or not _ATTRIBUTES.unpack_from(batches, ATTRIBUTES_OFFSET)[0] & (
        TRANSACTIONAL_FLAG_MASK
    ):
        return ErrorCode.NONE
    (producer_id,) = _PRODUCER_ID.unpack_from(batches, _PRODUCER_ID_OFFSET)
    (producer_epoch,) = _ATTRIBUTES.unpack_from(batches, _EPOCH_OFFSET)
    coordinator = context.services.transactions
    if coordinator is None:
        return ErrorCode.INVALID_TXN_STATE
    return coordinator.verify_partition(producer_id, producer_epoch, topic, partition)


_ATTRIBUTES = struct.Struct(">h")
_PRODUCER_ID = struct.Struct(">q")
#: Batch header: base offset 8, length 4, leader epoch 4, magic 1, crc 4, attributes 2, last offset
#: delta 4, base timestamp 8, max timestamp 8, then the producer id 8 and epoch 2.
_PRODUCER_ID_OFFSET = 43
_EPOCH_OFFSET = 51
