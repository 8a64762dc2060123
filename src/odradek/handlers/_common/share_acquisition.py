"""What ShareFetch and ShareAcknowledge do with share partitions (KIP-932): the acknowledgements checked
and applied, records acquired for the member (waiting up to max_wait_ms for an append), and each
partition's outcome. The share partitions themselves are ``partition/share/``'s; the sessions and the
answers are ``handlers/share_fetch.py``'s."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass, field

from odradek.handlers._common.authorization import authorize
from odradek.handlers._common.context import RequestContext
from odradek.partition.share.in_flight import AcknowledgementBatch, AcknowledgeType
from odradek.partition.share.log_reader import LogChunk, read_batches
from odradek.partition.share.manager import SharePartitionManager
from odradek.partition.share.persister import SharePartitionKey
from odradek.partition.share.sessions import SessionPartition, ShareSession
from odradek.partition.share.share_partition import SharePartition
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.protocol.messages import share_fetch as sf
from odradek.security.acl import AclOperation, ResourceType
from odradek.storage.errors import OffsetOutOfRangeError, StorageError
from odradek.storage.log import Log
from odradek.storage.partition import TopicPartition

#: ShareFetch v2's ShareAcquireMode (KIP-1206): whole batches up to MaxRecords, or MaxRecords at most.
BATCH_OPTIMIZED, RECORD_LIMIT = 0, 1
ACQUIRE_MODES = (BATCH_OPTIMIZED, RECORD_LIMIT)


@dataclass
class ShareOutcome:
    """One partition's answer: its error, its acknowledgement's, what was acquired and the bytes."""

    error: ErrorCode = ErrorCode.NONE
    acknowledge_error: ErrorCode | None = None
    leader_id: int = -1
    leader_epoch: int = -1
    records: bytes = b""
    acquired: list[sf.AcquiredRecords] = field(default_factory=list)


async def acknowledge(
    manager: SharePartitionManager,
    group_id: str,
    member_id: str,
    acks: dict[SessionPartition, list[AcknowledgementBatch]],
    outcomes: dict[SessionPartition, ShareOutcome],
    context: RequestContext,
    renewing: bool,
) -> None:
    newest_type = AcknowledgeType.RENEW if context.api_version >= 2 else AcknowledgeType.REJECT
    for key, batches in acks.items():
        outcome = outcomes.setdefault(key, ShareOutcome())
        try:
            _check_batches(batches, newest_type, renewing)
            share = await _share_partition(manager, group_id, key, outcome, context)
            await share.acknowledge(member_id, batches)
            outcome.acknowledge_error = ErrorCode.NONE
        except KafkaError as error:
            outcome.acknowledge_error = error.error_code


async def fetch_and_acquire(
    manager: SharePartitionManager,
    session: ShareSession,
    request: sf.ShareFetchRequest,
    outcomes: dict[SessionPartition, ShareOutcome],
    context: RequestContext,
) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(request.max_wait_ms, 0) / 1000
    wanted = sorted(session.partitions)
    keys = log_keys(wanted, context)
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
    outcomes: dict[SessionPartition, ShareOutcome],
    context: RequestContext,
) -> int:
    budget = request.max_records if request.max_records > 0 else 500
    record_limit = context.api_version >= 2 and request.share_acquire_mode == RECORD_LIMIT
    # MaxBytes (capped by fetch.max.bytes) bounds the whole answer, as a Fetch's: the first partition
    # with records gets a whole batch at least, the next ones what room is left
    bytes_left = max(min(request.max_bytes, context.services.config.fetch_max_bytes), 1)
    answered = False
    acquired = 0
    for key in wanted:
        if acquired >= budget or bytes_left <= 0:
            break
        outcome = outcomes.setdefault(key, ShareOutcome())
        try:
            share = await _share_partition(manager, session.group_id, key, outcome, context)
            if not share.can_acquire():
                continue
            partition_log = context.services.logs.get_log(topic_name(key, context), key[1])
            if partition_log is None:
                raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
            chunk = await _read_next(share, partition_log, bytes_left, not answered)
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
            bytes_left -= len(chunk.records)
            answered = True
            outcome.acquired += [
                sf.AcquiredRecords(
                    first_offset=a.first_offset, last_offset=a.last_offset, delivery_count=a.delivery_count
                )
                for a in got
            ]
            acquired += sum(a.last_offset - a.first_offset + 1 for a in got)
    for key in [k for k, o in outcomes.items() if o == ShareOutcome()]:
        del outcomes[key]  # nothing to say about it: left out, as Kafka does
    return acquired


async def _read_next(
    share: SharePartition, partition_log: Log, max_bytes: int, min_one_message: bool
) -> LogChunk:
    """What the share partition fetches next. Records deleted under it (retention, DeleteRecords) move
    it on to the log start first, as Kafka's share fetch does: else it would read there for good."""
    try:
        return read_batches(
            partition_log, share.next_fetch_offset(), max_bytes, share.read_committed, min_one_message
        )
    except OffsetOutOfRangeError:
        await share.log_start_moved(partition_log.log_start_offset)
        return read_batches(
            partition_log, share.next_fetch_offset(), max_bytes, share.read_committed, min_one_message
        )


async def _share_partition(
    manager: SharePartitionManager,
    group_id: str,
    key: SessionPartition,
    outcome: ShareOutcome,
    context: RequestContext,
) -> SharePartition:
    """The share partition of `key` for the group, if this broker leads it and the member may read it."""
    name = topic_name(key, context)
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


def topic_name(key: SessionPartition, context: RequestContext) -> str:
    topic = context.services.cluster.topic_by_id(key[0])
    if topic is None:
        raise KafkaError(ErrorCode.UNKNOWN_TOPIC_ID)
    return str(topic.name)


def log_keys(partitions: Iterable[SessionPartition], context: RequestContext) -> list[TopicPartition]:
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
