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

import asyncio
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field

from odradek.handlers._common.authorization import authorize, require_group
from odradek.handlers._common.context import RequestContext
from odradek.handlers._common.registry import handles
from odradek.partition.share.in_flight import AcknowledgementBatch, AcknowledgeType
from odradek.partition.share.log_reader import LogChunk, read_batches
from odradek.partition.share.manager import SharePartitionManager
from odradek.partition.share.persister import SharePartitionKey
from odradek.partition.share.sessions import FINAL_EPOCH, INITIAL_EPOCH, SessionPartition, ShareSession
from odradek.partition.share.share_partition import SharePartition
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.protocol.messages import share_acknowledge as sa
from odradek.protocol.messages import share_fetch as sf
from odradek.security.acl import AclOperation, ResourceType
from odradek.storage.errors import OffsetOutOfRangeError, StorageError
from odradek.storage.log import Log
from odradek.storage.partition import TopicPartition

#: ShareFetch v2's ShareAcquireMode (KIP-1206): whole batches up to MaxRecords, or MaxRecords at most.
BATCH_OPTIMIZED, RECORD_LIMIT = 0, 1
ACQUIRE_MODES = (BATCH_OPTIMIZED, RECORD_LIMIT)
#: The longest member id a share member may send (Kafka's: a UUID's 36 characters).
_MAX_MEMBER_ID_LENGTH = 36


@dataclass
class _Outcome:
    """One partition's answer: its error, its acknowledgement's, what was acquired and the bytes."""

    error: ErrorCode = ErrorCode.NONE
    acknowledge_error: ErrorCode | None = None
    leader_id: int = -1
    leader_epoch: int = -1
    records: bytes = b""
    acquired: list[sf.AcquiredRecords] = field(default_factory=list)


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
    outcomes: dict[SessionPartition, _Outcome] = {key: _Outcome(code) for key, code in unknown.items()}
    await _acknowledge(manager, group_id, member_id, acks, outcomes, context, renewing)
    if request.share_session_epoch == FINAL_EPOCH:
        await _close(manager, group_id, member_id)
    elif not renewing:
        await _fetch(manager, session, request, outcomes, context)
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
    outcomes: dict[SessionPartition, _Outcome] = {}
    renewing = context.api_version >= 2 and request.is_renew_ack
    await _acknowledge(manager, group_id, member_id, acks, outcomes, context, renewing)
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


# ----- acknowledging and fetching ------------------------------------------------------------------


async def _acknowledge(
    manager: SharePartitionManager,
    group_id: str,
    member_id: str,
    acks: dict[SessionPartition, list[AcknowledgementBatch]],
    outcomes: dict[SessionPartition, _Outcome],
    context: RequestContext,
    renewing: bool,
) -> None:
    newest_type = AcknowledgeType.RENEW if context.api_version >= 2 else AcknowledgeType.REJECT
    for key, batches in acks.items():
        outcome = outcomes.setdefault(key, _Outcome())
        try:
            _check_batches(batches, newest_type, renewing)
            share = await _share_partition(manager, group_id, key, outcome, context)
            await share.acknowledge(member_id, batches)
            outcome.acknowledge_error = ErrorCode.NONE
        except KafkaError as error:
            outcome.acknowledge_error = error.error_code


async def _fetch(
    manager: SharePartitionManager,
    session: ShareSession,
    request: sf.ShareFetchRequest,
    outcomes: dict[SessionPartition, _Outcome],
    context: RequestContext,
) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(request.max_wait_ms, 0) / 1000
    wanted = sorted(session.partitions)
    keys = _log_keys(wanted, context)
    with context.services.appends.waiting_on(keys) as waiter:
        while True:
            acquired = await _fetch_once(manager, session, wanted, request, outcomes, context)
            remaining = deadline - loop.time()
            errors = any(o.error != ErrorCode.NONE for o in outcomes.values())
            if acquired or errors or remaining <= 0:
                return
            waiter.rearm()
            await waiter.wait(remaining)


async def _fetch_once(
    manager: SharePartitionManager,
    session: ShareSession,
    wanted: list[SessionPartition],
    request: sf.ShareFetchRequest,
    outcomes: dict[SessionPartition, _Outcome],
    context: RequestContext,
) -> int:
    budget = request.max_records if request.max_records > 0 else 500
    record_limit = context.api_version >= 2 and request.share_acquire_mode == RECORD_LIMIT
    max_bytes = max(min(request.max_bytes, context.services.config.fetch_max_bytes), 1)
    acquired = 0
    for key in wanted:
        if acquired >= budget:
            break
        outcome = outcomes.setdefault(key, _Outcome())
        try:
            share = await _share_partition(manager, session.group_id, key, outcome, context)
            if not share.can_acquire():
                continue
            partition_log = context.services.logs.get_log(_topic_name(key, context), key[1])
            if partition_log is None:
                raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
            chunk = await _read_next(share, partition_log, max_bytes)
            if not chunk.batches:
                continue
            got = await share.acquire(session.member_id, chunk, budget - acquired, record_limit=record_limit)
        except OffsetOutOfRangeError:
            continue  # deleted again meanwhile: the next fetch moves on
        except StorageError:
            outcome.error = ErrorCode.KAFKA_STORAGE_ERROR
            continue
        except KafkaError as error:
            outcome.error = error.error_code
            continue
        if got:
            outcome.records += chunk.records
            outcome.acquired += [
                sf.AcquiredRecords(
                    first_offset=a.first_offset, last_offset=a.last_offset, delivery_count=a.delivery_count
                )
                for a in got
            ]
            acquired += sum(a.last_offset - a.first_offset + 1 for a in got)
    for key in [k for k, o in outcomes.items() if o == _Outcome()]:
        del outcomes[key]  # nothing to say about it: left out, as Kafka does
    return acquired


async def _read_next(share: SharePartition, partition_log: Log, max_bytes: int) -> LogChunk:
    """What the share partition fetches next. Records deleted under it (retention, DeleteRecords) move
    it on to the log start first, as Kafka's share fetch does: else it would read there for good."""
    try:
        return read_batches(partition_log, share.next_fetch_offset(), max_bytes, share.read_committed)
    except OffsetOutOfRangeError:
        await share.log_start_moved(partition_log.log_start_offset)
        return read_batches(partition_log, share.next_fetch_offset(), max_bytes, share.read_committed)


async def _share_partition(
    manager: SharePartitionManager,
    group_id: str,
    key: SessionPartition,
    outcome: _Outcome,
    context: RequestContext,
) -> SharePartition:
    """The share partition of `key` for the group, if this broker leads it and the member may read it."""
    name = _topic_name(key, context)
    if not authorize(context, AclOperation.READ, ResourceType.TOPIC, name):
        raise KafkaError(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    refused = context.services.leadership.leader_refusal(name, key[1], -1)
    if refused is not None:
        outcome.leader_id, outcome.leader_epoch = refused.leader_id, refused.leader_epoch
        raise KafkaError(refused.error_code)
    epoch = context.services.leadership.leader_epoch(name, key[1])
    partition_log = context.services.logs.get_log(name, key[1])
    if epoch is None or partition_log is None:
        raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
    outcome.leader_id, outcome.leader_epoch = context.services.node_id, epoch
    return await manager.partition(SharePartitionKey(group_id, key[0], key[1]), partition_log, epoch)


def _unknown(partitions: set[SessionPartition], context: RequestContext) -> dict[SessionPartition, ErrorCode]:
    """The partitions of unknown topic ids (UNKNOWN_TOPIC_ID) or that their topic does not have
    (UNKNOWN_TOPIC_OR_PARTITION): answered so, never kept in a session."""
    unknown = {}
    for topic_id, partition in partitions:
        topic = context.services.cluster.topic_by_id(topic_id)
        if topic is None:
            unknown[topic_id, partition] = ErrorCode.UNKNOWN_TOPIC_ID
        elif not 0 <= partition < len(topic.partitions):
            unknown[topic_id, partition] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return unknown


def _by_topic(
    outcomes: dict[SessionPartition, _Outcome],
) -> list[tuple[uuid.UUID, list[tuple[int, _Outcome]]]]:
    """The outcomes by topic id, both in order (one pass: a request may name 100,000 partitions)."""
    topics: dict[uuid.UUID, list[tuple[int, _Outcome]]] = {}
    for (topic_id, partition), outcome in sorted(outcomes.items(), key=lambda item: item[0]):
        topics.setdefault(topic_id, []).append((partition, outcome))
    return list(topics.items())


def _topic_name(key: SessionPartition, context: RequestContext) -> str:
    topic = context.services.cluster.topic_by_id(key[0])
    if topic is None:
        raise KafkaError(ErrorCode.UNKNOWN_TOPIC_ID)
    return str(topic.name)


def _log_keys(partitions: Iterable[SessionPartition], context: RequestContext) -> list[TopicPartition]:
    """What an append to these partitions wakes (topics no longer known are left out)."""
    keys = []
    for topic_id, partition in partitions:
        topic = context.services.cluster.topic_by_id(topic_id)
        if topic is not None:
            keys.append(TopicPartition(topic.name, partition))
    return keys


def _check_batches(batches: list[AcknowledgementBatch], newest_type: int, renewing: bool) -> None:
    """A partition's acknowledgement batches as Kafka's broker checks them before any is applied."""
    previous_last = -1
    for batch in batches:
        if batch.first_offset > batch.last_offset or batch.first_offset < previous_last:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "Acknowledgement batches out of order.")
        size = batch.last_offset - batch.first_offset + 1
        if not batch.types or (len(batch.types) > 1 and len(batch.types) != size):
            raise KafkaError(ErrorCode.INVALID_REQUEST, "Acknowledge types do not match the offsets.")
        if any(not 0 <= kind <= newest_type for kind in batch.types):
            raise KafkaError(ErrorCode.INVALID_REQUEST, "Unknown acknowledge type.")
        if not renewing and AcknowledgeType.RENEW in batch.types:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "Renew acknowledgements need IsRenewAck.")
        previous_last = batch.last_offset


def _batches(
    batches: Iterable[sf.AcknowledgementBatch | sa.AcknowledgementBatch],
) -> list[AcknowledgementBatch]:
    return [AcknowledgementBatch(b.first_offset, b.last_offset, tuple(b.acknowledge_types)) for b in batches]
