"""OffsetCommit (8), OffsetFetch (9), OffsetDelete (47): committed positions of consumer groups.

Version notes:
- OffsetCommit v0 commits outside any generation; v1 adds generation and member id (its per-partition
  commit timestamp is ignored, as Kafka 4 does); v2-4 a retention time (an explicit expiry, stored as
  OffsetCommitValue v1); v5 drops it; v6 the leader epoch; v7 group.instance.id; v8 flexible; v9
  GROUP_ID_NOT_FOUND for an unknown group (ILLEGAL_GENERATION before) and KIP-848 member epochs;
  v10 topic ids instead of names (UNKNOWN_TOPIC_ID). A topic the broker does not know gets
  UNKNOWN_TOPIC_OR_PARTITION. The answer waits until the commit is appended to `__consumer_offsets`,
  and in a cluster until its in-sync replicas have it (as acks=all), at most offsets.commit.timeout.ms:
  then REQUEST_TIMED_OUT, as the group coordinator of a ZooKeeper-mode Kafka answers (it passes the
  timed-out append's error through). Clients retry it against the same coordinator; answering
  COORDINATOR_NOT_AVAILABLE (KRaft's coordinator does) makes them drop and look up a coordinator
  that did not move, and librdkafka 2.0 (Debian's kcat) can then stall, committing nothing more.
  With the partition's ISR under min.insync.replicas nothing is appended (COORDINATOR_NOT_AVAILABLE,
  as an ISR that shrank below it while waiting); leadership lost meanwhile is NOT_COORDINATOR. A
  commit is returned by OffsetFetch only once the in-sync replicas hold it.
- OffsetFetch v0-1 name topics (group errors on each partition); v2 a null topic list means every
  committed offset, plus a top-level error; v3 throttle time; v5 leader epochs; v6 flexible; v7
  `require_stable`: a partition with a transactional offset commit not yet ended by its transaction's
  marker, or with a commit (a transaction's whose COMMIT marker is appended) not yet on the in-sync
  replicas, is UNSTABLE_OFFSET_COMMIT, as Kafka's hasPendingOffsetCommitsForTopicPartition (the
  client retries; read_committed consumers ask it); v8 several
  groups per request; v9 member id and epoch, checked for KIP-848 groups; v10 topic ids. A partition
  without a committed offset reads -1 with empty metadata.
- OffsetDelete v0: only offsets of topics the group does not subscribe to (GROUP_SUBSCRIBED_TO_TOPIC);
  a non-empty group that is not a consumer group gets NON_EMPTY_GROUP.
- With an authorizer (as Kafka): OffsetCommit needs READ on the group and on each topic, OffsetFetch
  DESCRIBE on both (topics without it are TOPIC_AUTHORIZATION_FAILED when named, left out when every
  committed offset is asked for), OffsetDelete DELETE on the group and READ on each topic. The group's
  refusal is GROUP_AUTHORIZATION_FAILED, a topic's TOPIC_AUTHORIZATION_FAILED (checked before its
  existence).
"""

from __future__ import annotations

import uuid
from typing import TypeVar

from odradek.coordinator.offset_requests import OffsetCommitContext, OffsetCommitItem
from odradek.coordinator.offsets import OffsetAndMetadata
from odradek.handlers._common.authorization import authorize, authorize_group, require_group
from odradek.handlers._common.context import RequestContext
from odradek.handlers._common.coordinators import group_coordinator
from odradek.handlers._common.registry import handles
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)
from odradek.protocol.messages.offset_delete import (
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetDeleteResponsePartition,
    OffsetDeleteResponseTopic,
)
from odradek.protocol.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartition,
    OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic,
    OffsetFetchResponseTopics,
)
from odradek.protocol.schema import ZERO_UUID
from odradek.security.acl import AclOperation, ResourceType

_READ, _DESCRIBE, _TOPIC = AclOperation.READ, AclOperation.DESCRIBE, ResourceType.TOPIC
_TOPIC_DENIED = ErrorCode.TOPIC_AUTHORIZATION_FAILED


@handles(ApiKey.OFFSET_COMMIT, 0, 10)
async def handle_offset_commit(request: OffsetCommitRequest, context: RequestContext) -> OffsetCommitResponse:
    version = context.api_version
    cluster = context.services.cluster
    names: list[str | None] = []
    denied: set[str] = set()
    items: list[OffsetCommitItem] = []
    group_allowed = authorize_group(context, request.group_id)
    #: Partitions the topic does not have: answered UNKNOWN_TOPIC_OR_PARTITION and not committed, as
    #: Kafka's KafkaApis does before it asks the coordinator (whatever the group's own error).
    missing: set[tuple[str, int]] = set()
    for topic in request.topics:
        if version < 10 and group_allowed and not authorize(context, _READ, _TOPIC, topic.name):
            denied.add(topic.name)  # refused before its existence is looked at, as Kafka
        state = cluster.topic_by_id(topic.topic_id) if version >= 10 else cluster.topic(topic.name)
        name = state.name if state is not None else None
        if (
            version >= 10
            and name is not None
            and group_allowed
            and not authorize(context, _READ, _TOPIC, name)
        ):
            denied.add(name)
        names.append(name)
        if name is None or not group_allowed or name in denied:
            continue
        for p in topic.partitions:
            if cluster.partition(name, p.partition_index) is None:
                missing.add((name, p.partition_index))
                continue
            items.append(
                OffsetCommitItem(
                    name,
                    p.partition_index,
                    p.committed_offset,
                    p.committed_leader_epoch,
                    p.committed_metadata,
                )
            )
    commit = OffsetCommitContext(
        group_id=request.group_id,
        member_id=request.member_id,
        generation_id_or_member_epoch=request.generation_id_or_member_epoch,
        group_instance_id=request.group_instance_id,
        retention_time_ms=request.retention_time_ms if 2 <= version <= 4 else -1,
        api_version=version,
    )
    group_error: ErrorCode | None = None
    errors: dict[tuple[str, int], ErrorCode] = {}
    try:
        require_group(context, request.group_id)
        errors = (
            await group_coordinator(context).offsets.commit_offsets_committed(commit, items) if items else {}
        )
    except KafkaError as failure:
        group_error = failure.error_code
    unknown = ErrorCode.UNKNOWN_TOPIC_ID if version >= 10 else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    topics = []
    for topic, name in zip(request.topics, names, strict=True):
        partitions = []
        for p in topic.partitions:
            code: ErrorCode
            if group_error is ErrorCode.GROUP_AUTHORIZATION_FAILED:
                code = group_error
            elif (name if version >= 10 else topic.name) in denied:
                code = _TOPIC_DENIED
            elif name is None:
                code = unknown
            elif (name, p.partition_index) in missing:
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif group_error is not None:
                code = group_error
            else:
                code = errors.get((name, p.partition_index), ErrorCode.UNKNOWN_SERVER_ERROR)
            partitions.append(
                OffsetCommitResponsePartition(partition_index=p.partition_index, error_code=code)
            )
        topics.append(
            OffsetCommitResponseTopic(name=topic.name, topic_id=topic.topic_id, partitions=partitions)
        )
    return OffsetCommitResponse(topics=topics)


@handles(ApiKey.OFFSET_FETCH, 0, 10)
async def handle_offset_fetch(request: OffsetFetchRequest, context: RequestContext) -> OffsetFetchResponse:
    version = context.api_version
    if version >= 8:
        groups = [
            _fetch_group(
                context,
                group.group_id,
                None
                if group.topics is None
                else [(t.name, t.topic_id, list(t.partition_indexes)) for t in group.topics],
                group.member_id,
                group.member_epoch,
                request.require_stable,
            )
            for group in request.groups
        ]
        return OffsetFetchResponse(groups=groups)
    wanted = (
        None
        if request.topics is None
        else [(t.name, ZERO_UUID, list(t.partition_indexes)) for t in request.topics]
    )
    answer = _fetch_group(context, request.group_id, wanted, None, -1, request.require_stable)
    topics = [
        OffsetFetchResponseTopic(
            name=t.name,
            partitions=[
                OffsetFetchResponsePartition(
                    partition_index=p.partition_index,
                    committed_offset=p.committed_offset,
                    committed_leader_epoch=p.committed_leader_epoch,
                    metadata=p.metadata,
                    error_code=p.error_code,
                )
                for p in t.partitions
            ],
        )
        for t in answer.topics
    ]
    if answer.error_code and version < 2 and request.topics is not None:
        topics = [
            OffsetFetchResponseTopic(
                name=t.name,
                partitions=[
                    _no_offset(p, answer.error_code, OffsetFetchResponsePartition)
                    for p in t.partition_indexes
                ],
            )
            for t in request.topics
        ]
    return OffsetFetchResponse(topics=topics, error_code=answer.error_code)


def _fetch_group(
    context: RequestContext,
    group_id: str,
    wanted: list[tuple[str, uuid.UUID, list[int]]] | None,
    member_id: str | None,
    member_epoch: int,
    require_stable: bool = False,
) -> OffsetFetchResponseGroup:
    by_id = context.api_version >= 10
    cluster = context.services.cluster
    resolved: list[tuple[str, int]] = []  # (name, partition) asked for, where the topic is known
    unknown_ids: list[tuple[uuid.UUID, list[int]]] = []
    denied: list[tuple[str, uuid.UUID, list[int]]] = []
    if not authorize_group(context, group_id, _DESCRIBE):
        return OffsetFetchResponseGroup(group_id=group_id, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if wanted is not None:
        for name, topic_id, partitions in wanted:
            if by_id:
                state = cluster.topic_by_id(topic_id)
                if state is None:
                    unknown_ids.append((topic_id, partitions))
                    continue
                name = state.name
            if not authorize(context, _DESCRIBE, _TOPIC, name):
                denied.append((name, topic_id, partitions))
                continue
            resolved += [(name, p) for p in partitions]
    try:
        group_offsets = group_coordinator(context).offsets
        query = None if wanted is None else _group_by_topic(resolved)
        fetched = group_offsets.fetch_offsets(group_id, query, member_id, member_epoch)
        unstable = group_offsets.unstable_offsets(group_id) if require_stable else set()
    except KafkaError as failure:
        return OffsetFetchResponseGroup(group_id=group_id, error_code=failure.error_code)
    topics = []
    for name, offsets in fetched:
        state = cluster.topic(name)
        if by_id and state is None:
            continue  # a deleted topic has no id to answer with
        if wanted is None and not authorize(context, _DESCRIBE, _TOPIC, name):
            continue  # offsets of topics the principal may not describe are not disclosed
        topics.append(
            OffsetFetchResponseTopics(
                name=name,
                topic_id=state.topic_id if state is not None else ZERO_UUID,
                partitions=[
                    _no_offset(p, ErrorCode.UNSTABLE_OFFSET_COMMIT, OffsetFetchResponsePartitions)
                    if (name, p) in unstable
                    else _partition_answer(p, offset)
                    for p, offset in offsets
                ],
            )
        )
    for name, topic_id, partitions in denied:
        topics.append(
            OffsetFetchResponseTopics(
                name=name,
                topic_id=topic_id,
                partitions=[_no_offset(p, _TOPIC_DENIED, OffsetFetchResponsePartitions) for p in partitions],
            )
        )
    for topic_id, partitions in unknown_ids:
        topics.append(
            OffsetFetchResponseTopics(
                topic_id=topic_id,
                partitions=[
                    _no_offset(p, ErrorCode.UNKNOWN_TOPIC_ID, OffsetFetchResponsePartitions)
                    for p in partitions
                ],
            )
        )
    return OffsetFetchResponseGroup(group_id=group_id, topics=topics, error_code=ErrorCode.NONE)


def _group_by_topic(pairs: list[tuple[str, int]]) -> list[tuple[str, list[int]]]:
    topics: dict[str, list[int]] = {}
    for name, partition in pairs:
        topics.setdefault(name, []).append(partition)
    return list(topics.items())


def _partition_answer(partition: int, offset: OffsetAndMetadata | None) -> OffsetFetchResponsePartitions:
    if offset is None:
        return _no_offset(partition, ErrorCode.NONE, OffsetFetchResponsePartitions)
    return OffsetFetchResponsePartitions(
        partition_index=partition,
        committed_offset=offset.offset,
        committed_leader_epoch=offset.leader_epoch,
        metadata=offset.metadata,
        error_code=ErrorCode.NONE,
    )


P = TypeVar("P", OffsetFetchResponsePartition, OffsetFetchResponsePartitions)


def _no_offset(partition: int, error: int, kind: type[P]) -> P:
    return kind(
        partition_index=partition,
        committed_offset=-1,
        committed_leader_epoch=-1,
        metadata="",
        error_code=error,
    )


@handles(ApiKey.OFFSET_DELETE, 0, 0)
async def handle_offset_delete(request: OffsetDeleteRequest, context: RequestContext) -> OffsetDeleteResponse:
    cluster = context.services.cluster
    if not authorize_group(context, request.group_id, AclOperation.DELETE):
        return OffsetDeleteResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    denied = {t.name for t in request.topics if not authorize(context, _READ, _TOPIC, t.name)}
    wanted = [
        (t.name, [p.partition_index for p in t.partitions])
        for t in request.topics
        if t.name not in denied and cluster.topic(t.name) is not None
    ]
    try:
        errors = group_coordinator(context).offsets.delete_offsets(request.group_id, wanted)
    except KafkaError as failure:
        return OffsetDeleteResponse(error_code=failure.error_code)
    topics = []
    for topic in request.topics:
        known = cluster.topic(topic.name) is not None
        partitions = [
            OffsetDeleteResponsePartition(
                partition_index=p.partition_index,
                error_code=_TOPIC_DENIED
                if topic.name in denied
                else errors.get((topic.name, p.partition_index), ErrorCode.NONE)
                if known
                else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            )
            for p in topic.partitions
        ]
        topics.append(OffsetDeleteResponseTopic(name=topic.name, partitions=partitions))
    return OffsetDeleteResponse(error_code=ErrorCode.NONE, topics=topics)
