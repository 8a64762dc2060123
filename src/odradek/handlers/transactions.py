"""The transaction APIs: AddPartitionsToTxn (24), AddOffsetsToTxn (25), EndTxn (26), WriteTxnMarkers
(27) and TxnOffsetCommit (28), answered by the transaction coordinator (coordinator/txn_coordinator.py)
and, for offsets, the group coordinator.

Version notes:
- PRODUCER_FENCED (90) is answered as INVALID_PRODUCER_EPOCH to clients too old to know it, as Kafka
  does: AddPartitionsToTxn, AddOffsetsToTxn and EndTxn before v2, TxnOffsetCommit before v3.
- AddPartitionsToTxn v0-3 is the client's call (one transaction); v4+ is the broker's batched form
  (KIP-890 part 1), served too: `verify_only` answers whether each partition is already in the
  producer's ongoing transaction, without adding it.
- TxnOffsetCommit v0-4, as Kafka 3.9. v5 is KIP-890 part 2 (transaction.version 2: the coordinator adds
  the group to the transaction itself, with EndTxn v5's epoch bumps) and v6 (KIP-1319) adds topic ids
  on top of it; the codec knows v6, but neither is served: kafka-clients 4.4 sends v5+ only while
  transaction.version >= 2 is finalized, which odradek does not finalize (no KIP-890 part 2).
- WriteTxnMarkers is served for the partitions this broker leads (NOT_LEADER_OR_FOLLOWER for the
  others); a coordinator writes the markers of partitions its broker leads through the same code
  without a request. As Kafka's acks=-1 marker appends, a partition under min.insync.replicas is
  refused with nothing appended (NOT_ENOUGH_REPLICAS); the others are answered once their in-sync
  replicas hold the marker, at most request.timeout.ms (REQUEST_TIMED_OUT; NOT_LEADER_OR_FOLLOWER if
  the leadership moved), all in one response, and the coordinator sends a marker again until then.
- With an authorizer, as Kafka's KafkaApis: AddPartitionsToTxn needs WRITE on the transactional id
  (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED for every partition) and WRITE on each topic (else
  TOPIC_AUTHORIZATION_FAILED for its partitions and OPERATION_NOT_ATTEMPTED for the others); v4+ (the
  broker's batched form) needs CLUSTER_ACTION. AddOffsetsToTxn needs WRITE on the transactional id and
  READ on the group (GROUP_AUTHORIZATION_FAILED); TxnOffsetCommit the same plus READ on each topic
  (TOPIC_AUTHORIZATION_FAILED for its partitions, the others committed); EndTxn WRITE on the
  transactional id; WriteTxnMarkers CLUSTER_ACTION (CLUSTER_AUTHORIZATION_FAILED for every partition).
- In a cluster AddPartitionsToTxn, AddOffsetsToTxn and EndTxn are answered once the coordinator's
  `__transaction_state` record is on the ISR (the coordinator's own wait, coordinator/txn_log_replication.py),
  TxnOffsetCommit once the group's `__consumer_offsets` partition has the commit (the group
  coordinator's), as Kafka's acks=-1 appends.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

from odradek.coordinator.offset_requests import OffsetCommitItem
from odradek.coordinator.settings import OFFSETS_TOPIC
from odradek.handlers._common.authorization import authorize, authorize_cluster, authorize_group
from odradek.handlers._common.context import RequestContext
from odradek.handlers._common.coordinators import for_version, group_coordinator, transaction_coordinator
from odradek.handlers._common.leadership import refusal
from odradek.handlers._common.registry import handles
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
    TxnOffsetCommitRequestTopic,
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
from odradek.security.acl import AclOperation, ResourceType


def may_write_transactional_id(context: RequestContext, transactional_id: str) -> bool:
    return authorize(context, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id)


def _may_read(context: RequestContext, topic: str) -> bool:
    return authorize(context, AclOperation.READ, ResourceType.TOPIC, topic)


@handles(ApiKey.ADD_PARTITIONS_TO_TXN, 0, 5)
async def handle_add_partitions_to_txn(
    request: AddPartitionsToTxnRequest, context: RequestContext
) -> AddPartitionsToTxnResponse:
    if context.api_version >= 4:
        if not authorize_cluster(context, AclOperation.CLUSTER_ACTION):
            return AddPartitionsToTxnResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        return await _add_partitions_batched(request, context)
    wanted = [(t.name, p) for t in request.v3_and_below_topics for p in t.partitions]
    errors: dict[tuple[str, int], ErrorCode]
    if not may_write_transactional_id(context, request.v3_and_below_transactional_id):
        errors = dict.fromkeys(wanted, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    elif denied := {
        t.name
        for t in request.v3_and_below_topics
        if not authorize(context, AclOperation.WRITE, ResourceType.TOPIC, t.name)
    }:
        errors = {
            tp: ErrorCode.TOPIC_AUTHORIZATION_FAILED if tp[0] in denied else ErrorCode.OPERATION_NOT_ATTEMPTED
            for tp in wanted
        }
    else:
        try:
            coordinator = transaction_coordinator(context)
            errors = await coordinator.add_partitions(
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


async def _add_partitions_batched(
    request: AddPartitionsToTxnRequest, context: RequestContext
) -> AddPartitionsToTxnResponse:
    results = []
    for txn in request.transactions:
        wanted = [(t.name, p) for t in txn.topics for p in t.partitions]
        try:
            coordinator = transaction_coordinator(context)
            if txn.verify_only:
                # Asked by a partition leader: only the id's own coordinator may answer (else the
                # leader's NOT_COORDINATOR, retried once it knows the new one).
                coordinator.state_log.check_coordinator(txn.transactional_id)
                errors = {
                    tp: coordinator.verify_partition(
                        txn.transactional_id, txn.producer_id, txn.producer_epoch, *tp
                    )
                    for tp in wanted
                }
            else:
                errors = await coordinator.add_partitions(
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
    if not may_write_transactional_id(context, request.transactional_id):
        return AddOffsetsToTxnResponse(error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if not authorize_group(context, request.group_id):
        return AddOffsetsToTxnResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    try:
        coordinator = transaction_coordinator(context)
        error = await coordinator.add_offsets(
            request.transactional_id, request.producer_id, request.producer_epoch, request.group_id
        )
    except KafkaError as failure:
        error = failure.error_code
    return AddOffsetsToTxnResponse(error_code=for_version(error, context.api_version, 2))


@handles(ApiKey.END_TXN, 0, 4)
async def handle_end_txn(request: EndTxnRequest, context: RequestContext) -> EndTxnResponse:
    if not may_write_transactional_id(context, request.transactional_id):
        return EndTxnResponse(error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    try:
        # Answered once the Prepare* record is on the ISR: a successor coordinator then finishes it.
        await transaction_coordinator(context).end_txn(
            request.transactional_id, request.producer_id, request.producer_epoch, request.committed
        )
        error = ErrorCode.NONE
    except KafkaError as failure:
        error = failure.error_code
    return EndTxnResponse(error_code=for_version(error, context.api_version, 2))


@handles(ApiKey.TXN_OFFSET_COMMIT, 0, 4)
async def handle_txn_offset_commit(
    request: TxnOffsetCommitRequest, context: RequestContext
) -> TxnOffsetCommitResponse:
    wanted = [(t.name, p.partition_index) for t in request.topics for p in t.partitions]
    refused: ErrorCode | None = None
    if not may_write_transactional_id(context, request.transactional_id):
        refused = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    elif not authorize_group(context, request.group_id):
        refused = ErrorCode.GROUP_AUTHORIZATION_FAILED
    if refused is not None:
        return _txn_offset_commit_response(dict.fromkeys(wanted, refused), context)
    denied = {
        t.name
        for t in request.topics
        if not authorize(context, AclOperation.READ, ResourceType.TOPIC, t.name)
    }
    errors = await _txn_offset_commit(request, [t for t in request.topics if t.name not in denied], context)
    errors.update({tp: ErrorCode.TOPIC_AUTHORIZATION_FAILED for tp in wanted if tp[0] in denied})
    return _txn_offset_commit_response({tp: errors[tp] for tp in wanted if tp in errors}, context)


async def _txn_offset_commit(
    request: TxnOffsetCommitRequest, topics: list[TxnOffsetCommitRequestTopic], context: RequestContext
) -> dict[tuple[str, int], ErrorCode]:
    wanted = [(t.name, p.partition_index) for t in topics for p in t.partitions]
    if not wanted:
        return {}
    try:
        # The group's offsets partition must be in the producer's ongoing transaction (AddOffsetsToTxn),
        # or no marker would ever reach it and the offsets would stay pending for good.
        groups = group_coordinator(context)
        offsets_partition = groups.runtime.partition_for(request.group_id)
        unverified = await _verify_offsets_partition(request, offsets_partition, context)
        if unverified is not ErrorCode.NONE:
            raise KafkaError(unverified)
        items = [
            OffsetCommitItem(
                t.name, p.partition_index, p.committed_offset, p.committed_leader_epoch, p.committed_metadata
            )
            for t in topics
            for p in t.partitions
        ]
        errors = await groups.offsets.commit_transactional_offsets(
            request.group_id,
            request.producer_id,
            request.producer_epoch,
            request.member_id,
            request.generation_id_or_member_epoch,
            items,
        )
    except KafkaError as failure:
        errors = dict.fromkeys(wanted, failure.error_code)
    return dict(errors)


async def _verify_offsets_partition(
    request: TxnOffsetCommitRequest, offsets_partition: int, context: RequestContext
) -> ErrorCode:
    """Whether the producer's ongoing transaction holds the group's offsets partition, asked of its
    transaction coordinator: this broker's, or in a cluster another broker's (KIP-890 part 1)."""
    coordinator = transaction_coordinator(context)
    pid, epoch = request.producer_id, request.producer_epoch
    verification = context.services.txn_verification
    if verification is not None:
        node = coordinator.coordinator_node(request.transactional_id)
        if node != context.services.node_id:
            tp = (OFFSETS_TOPIC, offsets_partition)
            asked = await verification.coordinators.verify(node, request.transactional_id, pid, epoch, [tp])
            error = asked[tp]
            # The coordinator answers as to a leader; a TxnOffsetCommit client is told it is fenced.
            return ErrorCode.PRODUCER_FENCED if error is ErrorCode.INVALID_PRODUCER_EPOCH else error
    try:  # loading, or not coordinated here: retriable, as another broker's coordinator answers
        coordinator.state_log.check_coordinator(request.transactional_id)
    except KafkaError as not_here:
        return not_here.error_code
    unverified = coordinator.check_producer(pid, epoch)
    if unverified is ErrorCode.NONE:
        unverified = coordinator.verify_partition(
            request.transactional_id, pid, epoch, OFFSETS_TOPIC, offsets_partition
        )
    return unverified


def _txn_offset_commit_response(
    errors: dict[tuple[str, int], ErrorCode], context: RequestContext
) -> TxnOffsetCommitResponse:
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
    if not authorize_cluster(context, AclOperation.CLUSTER_ACTION):
        return _markers_refused(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    coordinator = transaction_coordinator(context)
    results = []
    #: Each marker, appended as its partition is checked; their waits for the in-sync replicas run
    #: together and the request is answered once all are decided (Kafka's one delayed produce each).
    writes: list[tuple[WritableTxnMarkerPartitionResult, Awaitable[ErrorCode]]] = []
    for marker in request.markers:
        topics = []
        for topic in marker.topics:
            partitions = []
            for partition in topic.partition_indexes:
                answer = WritableTxnMarkerPartitionResult(partition_index=partition)
                refused = refusal(context, topic.name, partition)
                if refused is not None:
                    answer.error_code = refused.error_code
                else:
                    written = coordinator.markers.write(
                        topic.name,
                        partition,
                        marker.producer_id,
                        marker.producer_epoch,
                        marker.transaction_result,
                        marker.coordinator_epoch,
                    )
                    writes.append((answer, written))
                partitions.append(answer)
            topics.append(WritableTxnMarkerTopicResult(name=topic.name, partitions=partitions))
        results.append(WritableTxnMarkerResult(producer_id=marker.producer_id, topics=topics))
    outcomes = await asyncio.gather(*(written for _, written in writes))
    for (answer, _), outcome in zip(writes, outcomes, strict=True):
        answer.error_code = outcome
    return WriteTxnMarkersResponse(markers=results)


def _markers_refused(request: WriteTxnMarkersRequest, error: ErrorCode) -> WriteTxnMarkersResponse:
    return WriteTxnMarkersResponse(
        markers=[
            WritableTxnMarkerResult(
                producer_id=marker.producer_id,
                topics=[
                    WritableTxnMarkerTopicResult(
                        name=topic.name,
                        partitions=[
                            WritableTxnMarkerPartitionResult(partition_index=p, error_code=error)
                            for p in topic.partition_indexes
                        ],
                    )
                    for topic in marker.topics
                ],
            )
            for marker in request.markers
        ]
    )
