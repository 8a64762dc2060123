"""ShareFetch (78) and ShareAcknowledge (79): KIP-932 share groups read and settle records.

Version notes:
- v1 and v2: v0 was Kafka 4.0's early access (removed in 4.1). A fetch acquires whole batches until
  `MaxRecords` are acquired (batch-optimized); v2's ShareAcquireMode 1 (record-limit, KIP-1206) never
  acquires more than `MaxRecords`, splitting a batch; another mode is INVALID_REQUEST (Kafka 4.4 answers
  UNKNOWN_SERVER_ERROR, its lookup of the mode throwing: a client's bad byte is the client's error).
- v2 renews locks (KIP-1222): acknowledge type 4 (RENEW) keeps a record the member holds under a fresh
  lock of `group.share.record.lock.duration.ms`; only in v2 with IsRenewAck set (else INVALID_REQUEST
  for the partition). A ShareFetch with IsRenewAck must ask for nothing (MaxBytes, MinBytes, MaxRecords
  and MaxWaitMs 0; else INVALID_REQUEST for the request) and fetches nothing. ShareAcknowledge v2 answers
  the lock duration too (AcquisitionLockTimeoutMs).
- Acknowledgement batches are checked per partition as Kafka's broker checks them (INVALID_REQUEST): a
  batch ending before it starts, or starting before the previous one ends, no types, as many types as
  offsets or one, and only the types the version knows.
- A member's share session (partition/share/sessions.py) opens with epoch 0 (acknowledgements then are
  INVALID_REQUEST: nothing is acquired in a session not yet open), continues with the next epoch
  (INVALID_SHARE_SESSION_EPOCH otherwise, SHARE_SESSION_NOT_FOUND if unknown), and closes with -1: its
  acknowledgements are applied and whatever the member still holds is released; a closing ShareFetch
  fetches nothing.
- Acknowledgements ride on ShareFetch or come alone in ShareAcknowledge; each is written to the share
  coordinator before it is answered (per-partition AcknowledgeErrorCode / ErrorCode: INVALID_RECORD_STATE
  for records the member does not hold, the coordinator's error if the write is refused).
- A ShareFetch that acquires nothing waits up to `MaxWaitMs` for records to arrive in its partitions.
  `MaxBytes` (at most `fetch.max.bytes`) bounds the whole answer, as a Fetch's: the first partition
  with records gets a whole batch at least, the next ones only what room is left.
- A member id longer than 36 characters is INVALID_REQUEST, as Kafka's; partitions of unknown topic ids
  are answered UNKNOWN_TOPIC_ID, those their topic lacks UNKNOWN_TOPIC_OR_PARTITION, neither kept in
  the session (a hostile list costs nothing after it).
  The sessions opened on a connection close with it, their members' records released (sessions.py).
- A partition this broker does not lead answers NOT_LEADER_OR_FOLLOWER with the leader it knows; an
  unknown topic id UNKNOWN_TOPIC_ID. With an authorizer: READ on the group (else
  GROUP_AUTHORIZATION_FAILED for the request) and READ on each topic (else TOPIC_AUTHORIZATION_FAILED
  for its partitions), as Kafka 4.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from odradek.handlers._common.authorization import authorize, require_group
from odradek.handlers._common.context import RequestContext
from odradek.handlers._common.registry import handles
from odradek.handlers._common.share_acquisition import (
    ACQUIRE_MODES,
    ShareOutcome,
    acknowledge,
    fetch_and_acquire,
)
from odradek.partition.share.in_flight import AcknowledgementBatch
from odradek.partition.share.manager import SharePartitionManager
from odradek.partition.share.sessions import FINAL_EPOCH, INITIAL_EPOCH, SessionPartition, ShareSession
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.protocol.messages import share_acknowledge as sa
from odradek.protocol.messages import share_fetch as sf
from odradek.security.acl import AclOperation, ResourceType

#: The longest member id a share member may send (Kafka's: a UUID's 36 characters).
_MAX_MEMBER_ID_LENGTH = 36


@handles(ApiKey.SHARE_FETCH, 1, 2)
async def handle_share_fetch(request: sf.ShareFetchRequest, context: RequestContext) -> sf.ShareFetchResponse:
    renewing = context.api_version >= 2 and request.is_renew_ack
    try:
        if renewing and (
            request.max_bytes or request.min_bytes or request.max_records or request.max_wait_ms
        ):
            raise KafkaError(
                ErrorCode.INVALID_REQUEST,
                "A ShareFetch renewing locks (IsRenewAck) must set MaxBytes, MinBytes, MaxRecords and "
                "MaxWaitMs to 0.",
            )
        if context.api_version >= 2 and request.share_acquire_mode not in ACQUIRE_MODES:
            raise KafkaError(
                ErrorCode.INVALID_REQUEST, f"Unknown ShareAcquireMode {request.share_acquire_mode}."
            )
        manager, group_id, member_id = _check(request.group_id, request.member_id, context)
        requested = {(t.topic_id, p.partition_index) for t in request.topics for p in t.partitions}
        acks = {
            (t.topic_id, p.partition_index): _batches(p.acknowledgement_batches)
            for t in request.topics
            for p in t.partitions
            if p.acknowledgement_batches
        }
        unknown = _unknown(requested, context)
        session = _session(
            manager,
            group_id,
            member_id,
            request.share_session_epoch,
            requested - set(unknown),
            bool(acks),
            context,
        )
    except KafkaError as error:
        return sf.ShareFetchResponse(error_code=error.error_code, error_message=error.error_message)
    for topic in request.forgotten_topics_data:
        session.partitions -= {(topic.topic_id, p) for p in topic.partitions}
    outcomes: dict[SessionPartition, ShareOutcome] = {
        key: ShareOutcome(code) for key, code in unknown.items()
    }
    await acknowledge(manager, group_id, member_id, acks, outcomes, context, renewing)
    if request.share_session_epoch == FINAL_EPOCH:
        await _close(manager, group_id, member_id)
    elif not renewing:
        await fetch_and_acquire(manager, session, request, outcomes, context)
    return sf.ShareFetchResponse(
        acquisition_lock_timeout_ms=manager.limits().record_lock_duration_ms,
        responses=[
            sf.ShareFetchableTopicResponse(
                topic_id=topic_id,
                partitions=[
                    sf.PartitionData(
                        partition_index=partition,
                        error_code=outcome.error,
                        acknowledge_error_code=outcome.acknowledge_error or ErrorCode.NONE,
                        current_leader=sf.LeaderIdAndEpoch(
                            leader_id=outcome.leader_id, leader_epoch=outcome.leader_epoch
                        ),
                        records=outcome.records,
                        acquired_records=outcome.acquired,
                    )
                    for partition, outcome in partitions
                ],
            )
            for topic_id, partitions in _by_topic(outcomes)
        ],
    )


@handles(ApiKey.SHARE_ACKNOWLEDGE, 1, 2)
async def handle_share_acknowledge(
    request: sa.ShareAcknowledgeRequest, context: RequestContext
) -> sa.ShareAcknowledgeResponse:
    try:
        manager, group_id, member_id = _check(request.group_id, request.member_id, context)
        if request.share_session_epoch == INITIAL_EPOCH:
            raise KafkaError(ErrorCode.INVALID_SHARE_SESSION_EPOCH)
        manager.sessions.get(group_id, member_id, request.share_session_epoch)
    except KafkaError as error:
        return sa.ShareAcknowledgeResponse(error_code=error.error_code, error_message=error.error_message)
    acks = {
        (t.topic_id, p.partition_index): _batches(p.acknowledgement_batches)
        for t in request.topics
        for p in t.partitions
    }
    outcomes: dict[SessionPartition, ShareOutcome] = {}
    renewing = context.api_version >= 2 and request.is_renew_ack
    await acknowledge(manager, group_id, member_id, acks, outcomes, context, renewing)
    if request.share_session_epoch == FINAL_EPOCH:
        await _close(manager, group_id, member_id)
    return sa.ShareAcknowledgeResponse(
        acquisition_lock_timeout_ms=manager.limits().record_lock_duration_ms,
        responses=[
            sa.ShareAcknowledgeTopicResponse(
                topic_id=topic_id,
                partitions=[
                    sa.PartitionData(
                        partition_index=partition,
                        error_code=outcome.acknowledge_error or outcome.error,
                        current_leader=sa.LeaderIdAndEpoch(
                            leader_id=outcome.leader_id, leader_epoch=outcome.leader_epoch
                        ),
                    )
                    for partition, outcome in partitions
                ],
            )
            for topic_id, partitions in _by_topic(outcomes)
        ],
    )


# ----- sessions -------------------------------------------------------------------------------------


def _check(
    group_id: str | None, member_id: str | None, context: RequestContext
) -> tuple[SharePartitionManager, str, str]:
    manager = context.services.share_partitions
    if manager is None:
        raise KafkaError(ErrorCode.UNSUPPORTED_VERSION, "This broker serves no share partitions.")
    if not group_id or not member_id:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "GroupId and MemberId must be set.")
    if len(member_id) > _MAX_MEMBER_ID_LENGTH:  # Kafka's KafkaApis.isMemberIdValid
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Invalid member id in the request.")
    require_group(context, group_id)
    return manager, group_id, member_id


def _session(
    manager: SharePartitionManager,
    group_id: str,
    member_id: str,
    epoch: int,
    requested: set[SessionPartition],
    acknowledges: bool,
    context: RequestContext,
) -> ShareSession:
    if epoch == INITIAL_EPOCH:
        if acknowledges:
            raise KafkaError(
                ErrorCode.INVALID_REQUEST, "Acknowledgements in a share session's first request."
            )
        return manager.sessions.open(group_id, member_id, requested, context.connection_id)
    session = manager.sessions.get(group_id, member_id, epoch)
    session.partitions |= requested
    return session


async def _close(manager: SharePartitionManager, group_id: str, member_id: str) -> None:
    manager.sessions.close(group_id, member_id)
    await manager.release_member(group_id, member_id)


def _unknown(partitions: set[SessionPartition], context: RequestContext) -> dict[SessionPartition, ErrorCode]:
    """The partitions of unknown topic ids (UNKNOWN_TOPIC_ID) or that their topic does not have
    (UNKNOWN_TOPIC_OR_PARTITION; TOPIC_AUTHORIZATION_FAILED without READ on the topic, as Kafka checks
    READ first: its partition count is not disclosed): answered so, never kept in a session."""
    unknown = {}
    for topic_id, partition in partitions:
        topic = context.services.cluster.topic_by_id(topic_id)
        if topic is None:
            unknown[topic_id, partition] = ErrorCode.UNKNOWN_TOPIC_ID
        elif not 0 <= partition < len(topic.partitions):
            readable = authorize(context, AclOperation.READ, ResourceType.TOPIC, topic.name)
            unknown[topic_id, partition] = (
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if readable else ErrorCode.TOPIC_AUTHORIZATION_FAILED
            )
    return unknown


def _by_topic(
    outcomes: dict[SessionPartition, ShareOutcome],
) -> list[tuple[uuid.UUID, list[tuple[int, ShareOutcome]]]]:
    """The outcomes by topic id, both in order (one pass: a request may name 100,000 partitions)."""
    topics: dict[uuid.UUID, list[tuple[int, ShareOutcome]]] = {}
    for (topic_id, partition), outcome in sorted(outcomes.items(), key=lambda item: item[0]):
        topics.setdefault(topic_id, []).append((partition, outcome))
    return list(topics.items())


def _batches(
    batches: Iterable[sf.AcknowledgementBatch | sa.AcknowledgementBatch],
) -> list[AcknowledgementBatch]:
    return [AcknowledgementBatch(b.first_offset, b.last_offset, tuple(b.acknowledge_types)) for b in batches]
