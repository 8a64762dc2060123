"""CreateTopics (key 19), DeleteTopics (key 20), CreatePartitions (key 37): topic administration (KIP-4).

Version notes:
- CreateTopics v1 adds validate_only and per-topic error messages, v2 throttle time, v4 lets
  num_partitions / replication_factor be -1 for the broker defaults (KIP-464; like Kafka's broker,
  odradek accepts -1 at every version, old clients simply never send it), v5 is flexible and returns
  each new topic's partition count, replication factor and configs (KIP-525), v6 may throttle
  (never here), v7 returns the topic id. A validate-only request is answered like a real one (with a
  topic id that is then forgotten, as Kafka does) but changes nothing.
- DeleteTopics v1 adds throttle time, v3 reports TOPIC_DELETION_DISABLED where v0-2 got
  INVALID_REQUEST (delete.topic.enable=false), v4 is flexible, v5 adds error messages, v6 names
  topics by name or by id. A name or id given twice, both or neither, is INVALID_REQUEST.
- CreatePartitions v1 is v0 (throttling), v2 is flexible, v3 may throttle.
- A topic named twice in one CreateTopics / CreatePartitions request gets one INVALID_REQUEST result.
- A change is answered once it is durable and visible (a single node needs no propagation), so
  timeout_ms is never needed; the files of new partitions are made in a worker thread, and changes
  are applied one at a time, in arrival order, as Kafka's controller does. Kafka shuffles
  DeleteTopics results (to hide which topics exist from unauthorized clients); here they follow the
  request: a topic the principal may not delete is TOPIC_AUTHORIZATION_FAILED whether it exists or not.
- With an authorizer (as Kafka): CreateTopics needs CREATE on the cluster or on the topic, DeleteTopics
  DELETE on the topic, CreatePartitions ALTER on it; else TOPIC_AUTHORIZATION_FAILED for that topic,
  checked before anything else about it. A created topic's configs (v5+) are left out, with
  topic_config_error_code TOPIC_AUTHORIZATION_FAILED, without DESCRIBE_CONFIGS on it.
- As Kafka's controller, one CreateTopics or CreatePartitions may make at most 10,000 metadata records
  (a topic, its partitions, its configs; QuorumController.MAX_RECORDS_PER_USER_OP): past that the
  whole request fails with POLICY_VIOLATION, before anything is created (a client asking for 2^31-1
  partitions would otherwise have the broker make directories until its disk is full). Only the
  topics the principal may create or alter count, as only those reach Kafka's controller: counting
  the others would tell which of them exist and how many partitions they have.
- Internal topics (__consumer_offsets, __transaction_state, __share_group_state) are created by their
  coordinators only, cannot be deleted (TOPIC_DELETION_DISABLED) and cannot get more partitions
  (INVALID_REQUEST: a key's partition is a hash modulo the count): Kafka lets an administrator do
  all three.
"""

from __future__ import annotations

import uuid
from collections import Counter

from odradek.cluster.metadata import TopicState
from odradek.handlers._common.authorization import authorize, authorize_cluster
from odradek.handlers._common.config_entries import created_topic_configs
from odradek.handlers._common.context import RequestContext
from odradek.handlers._common.registry import handles
from odradek.partition.errors import resource_failure
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.create_partitions import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreatePartitionsTopic,
    CreatePartitionsTopicResult,
)
from odradek.protocol.messages.create_topics import (
    CreatableTopic,
    CreatableTopicResult,
    CreateTopicsRequest,
    CreateTopicsResponse,
)
from odradek.protocol.messages.delete_topics import (
    DeletableTopicResult,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
)
from odradek.protocol.schema import ZERO_UUID
from odradek.security.acl import AclOperation, ResourceType

_DUPLICATE_NAME = "Duplicate topic name."
#: Kafka's QuorumController.MAX_RECORDS_PER_USER_OP: the records one request may make.
MAX_RECORDS_PER_USER_OP = 10_000
#: What Kafka answers past it (EventHandlerExceptionInfo, for a BoundedListTooLongException).
_EXCESSIVE = "Unable to perform excessively large batch operation."
#: What Kafka's UnknownTopicIdException says (its default message for UNKNOWN_TOPIC_ID).
_UNKNOWN_TOPIC_ID = "This server does not host this topic ID."
_DENIED = ErrorCode.TOPIC_AUTHORIZATION_FAILED
#: What Kafka answers a topic the principal may not create or alter.
_DENIED_MESSAGE = "Authorization failed."


@handles(ApiKey.CREATE_TOPICS, 0, 7)
async def handle_create_topics(request: CreateTopicsRequest, context: RequestContext) -> CreateTopicsResponse:
    counts = Counter(topic.name for topic in request.topics)
    validate_only = context.api_version >= 1 and request.validate_only
    may_create_any = authorize_cluster(context, AclOperation.CREATE)
    authorized = {
        name
        for name in counts
        if may_create_any or authorize(context, AclOperation.CREATE, ResourceType.TOPIC, name)
    }
    # Only the topics the principal may create count (Kafka's controller sees only those): a topic it
    # may not create must get the same answer whether it exists or not.
    if _records_to_create(request.topics, counts, authorized, context) > MAX_RECORDS_PER_USER_OP:
        return CreateTopicsResponse(
            topics=[_not_created(name, ErrorCode.POLICY_VIOLATION, _EXCESSIVE) for name in counts]
        )
    results: dict[str, CreatableTopicResult] = {}
    for topic in request.topics:
        if topic.name in results:
            continue
        if counts[topic.name] > 1:
            results[topic.name] = _not_created(topic.name, ErrorCode.INVALID_REQUEST, _DUPLICATE_NAME)
            continue
        if topic.name not in authorized:
            results[topic.name] = _not_created(topic.name, _DENIED, _DENIED_MESSAGE)
            continue
        try:
            state = await _create(topic, validate_only, context)
        except Exception as error:
            results[topic.name] = _not_created(
                topic.name, *resource_failure(error, context, f"topic {topic.name!r}")
            )
            continue
        result = CreatableTopicResult(
            name=topic.name,
            topic_id=state.topic_id,
            error_code=ErrorCode.NONE,
            error_message=None,
            num_partitions=len(state.partitions),
            replication_factor=len(state.partitions[0].replicas),
            configs=created_topic_configs(state.configs, context.services.config),
        )
        if not authorize(context, AclOperation.DESCRIBE_CONFIGS, ResourceType.TOPIC, topic.name):
            # as Kafka: created, but its configs are not shown to a principal who may not describe them
            result.configs, result.topic_config_error_code = [], _DENIED
        results[topic.name] = result
    return CreateTopicsResponse(topics=list(results.values()))


@handles(ApiKey.DELETE_TOPICS, 0, 6)
async def handle_delete_topics(request: DeleteTopicsRequest, context: RequestContext) -> DeleteTopicsResponse:
    version = context.api_version
    if version < 6:
        wanted: list[tuple[str | None, uuid.UUID]] = [(name, ZERO_UUID) for name in request.topic_names]
    else:
        wanted = [(topic.name, topic.topic_id) for topic in request.topics]
    if not context.services.config.delete_topic_enable:
        code = ErrorCode.INVALID_REQUEST if version < 3 else ErrorCode.TOPIC_DELETION_DISABLED
        return DeleteTopicsResponse(
            responses=[DeletableTopicResult(name=n, topic_id=i, error_code=code) for n, i in wanted]
        )
    names = Counter(name for name, topic_id in wanted if name is not None and topic_id == ZERO_UUID)
    ids = Counter(topic_id for name, topic_id in wanted if name is None and topic_id != ZERO_UUID)
    cluster = context.services.cluster
    named_ids = {state.topic_id for state in map(cluster.topic, names) if state is not None}
    clashing = named_ids & set(ids)  # a topic asked for both by name and by id
    answered: set[tuple[str | None, uuid.UUID]] = set()
    responses = []
    for name, topic_id in wanted:
        if (name, topic_id) in answered:
            continue
        answered.add((name, topic_id))
        responses.append(await _delete(name, topic_id, names, ids, clashing, context))
    return DeleteTopicsResponse(responses=responses)


@handles(ApiKey.CREATE_PARTITIONS, 0, 3)
async def handle_create_partitions(
    request: CreatePartitionsRequest, context: RequestContext
) -> CreatePartitionsResponse:
    counts = Counter(topic.name for topic in request.topics)
    authorized = {name for name in counts if authorize(context, AclOperation.ALTER, ResourceType.TOPIC, name)}
    # As for CreateTopics, only the topics the principal may alter count towards the limit; a topic
    # whose count could not be read (ZooKeeper unreachable) is answered with that failure, not grown.
    unread: dict[str, Exception] = {}
    if (
        await _partitions_to_add(request.topics, counts, authorized, unread, context)
        > MAX_RECORDS_PER_USER_OP
    ):
        return CreatePartitionsResponse(
            results=[
                CreatePartitionsTopicResult(
                    name=name, error_code=ErrorCode.POLICY_VIOLATION, error_message=_EXCESSIVE
                )
                for name in counts
            ]
        )
    results: dict[str, CreatePartitionsTopicResult] = {}
    for topic in request.topics:
        if topic.name in results:
            continue
        message: str | None
        if counts[topic.name] > 1:
            code, message = ErrorCode.INVALID_REQUEST, _DUPLICATE_NAME
        elif topic.name not in authorized:
            code, message = _DENIED, _DENIED_MESSAGE
        elif topic.name in unread:
            code, message = resource_failure(unread[topic.name], context, f"topic {topic.name!r}")
        else:
            try:
                await _grow(topic, request.validate_only, context)
                code, message = ErrorCode.NONE, None
            except Exception as error:
                code, message = resource_failure(error, context, f"topic {topic.name!r}")
        results[topic.name] = CreatePartitionsTopicResult(
            name=topic.name, error_code=code, error_message=message
        )
    return CreatePartitionsResponse(results=list(results.values()))


# ----- helpers ---------------------------------------------------------------------------------------


def _records_to_create(
    topics: list[CreatableTopic], counts: Counter[str], authorized: set[str], context: RequestContext
) -> int:
    """The metadata records Kafka's controller would make for these topics: one per topic, partition
    and config, for the topics it would try to create (named once, authorized, not existing yet)."""
    cluster = context.services.cluster
    records = 0
    for topic in topics:
        if counts[topic.name] > 1 or topic.name not in authorized or cluster.topic(topic.name) is not None:
            continue
        if topic.assignments:
            partitions = len(topic.assignments)
        elif topic.num_partitions == -1:
            partitions = context.services.config.num_partitions
        else:
            partitions = max(topic.num_partitions, 0)  # a non-positive count is refused on its own
        records += 1 + partitions + len(topic.configs)
    return records


async def _partitions_to_add(
    topics: list[CreatePartitionsTopic],
    counts: Counter[str],
    authorized: set[str],
    unread: dict[str, Exception],
    context: RequestContext,
) -> int:
    """The partition records Kafka's controller would make to grow these (authorized) topics, counted
    from the partitions each has where it will be grown (in a ZooKeeper cluster, ZooKeeper's: the
    metadata cache may not know a topic just created); `unread` gets the topics whose count failed."""
    records = 0
    for topic in topics:
        if counts[topic.name] != 1 or topic.name not in authorized:
            continue
        try:
            current = await context.services.topics.partition_count(topic.name)
        except Exception as error:  # answered as the growth would have failed: see the caller
            unread[topic.name] = error
            continue
        if current is not None:
            records += max(topic.count - current, 0)
    return records


async def _create(topic: CreatableTopic, validate_only: bool, context: RequestContext) -> TopicState:
    configs = {config.name: config.value for config in topic.configs}  # the last of a repeated name wins
    assignments = [(a.partition_index, list(a.broker_ids)) for a in topic.assignments]
    return await context.services.topics.create_topic(
        topic.name,
        topic.num_partitions,
        topic.replication_factor,
        assignments or None,
        configs,
        validate_only=validate_only,
    )


def _not_created(name: str, code: ErrorCode, message: str | None) -> CreatableTopicResult:
    return CreatableTopicResult(
        name=name,
        topic_id=ZERO_UUID,
        error_code=code,
        error_message=message,
        num_partitions=-1,
        replication_factor=-1,
        configs=[],
    )


async def _delete(
    name: str | None,
    topic_id: uuid.UUID,
    names: Counter[str],
    ids: Counter[uuid.UUID],
    clashing: set[uuid.UUID],
    context: RequestContext,
) -> DeletableTopicResult:
    """Kafka's controller rules for one DeleteTopics entry (by name, or by id)."""
    cluster = context.services.cluster
    if name is None and topic_id == ZERO_UUID:
        return _deletion(
            None, ZERO_UUID, ErrorCode.INVALID_REQUEST, "Neither topic name nor id were specified."
        )
    if name is not None and topic_id != ZERO_UUID:
        return _deletion(
            name, topic_id, ErrorCode.INVALID_REQUEST, "You may not specify both topic name and topic id."
        )
    if name is not None and names[name] > 1:
        return _deletion(name, ZERO_UUID, ErrorCode.INVALID_REQUEST, _DUPLICATE_NAME)
    if name is None and ids[topic_id] > 1:
        return _deletion(None, topic_id, ErrorCode.INVALID_REQUEST, "Duplicate topic id.")
    if name is None:
        state = cluster.topic_by_id(topic_id)
        if state is None:
            return _deletion(None, topic_id, ErrorCode.UNKNOWN_TOPIC_ID, _UNKNOWN_TOPIC_ID)
        if not authorize(context, AclOperation.DELETE, ResourceType.TOPIC, state.name):
            return _deletion(None, topic_id, _DENIED, None)
    else:
        if not authorize(context, AclOperation.DELETE, ResourceType.TOPIC, name):
            return _deletion(name, ZERO_UUID, _DENIED, None)
        state = cluster.topic(name)
        if state is None:
            return _deletion(name, ZERO_UUID, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None)
    if state.topic_id in clashing:
        # Kafka deletes neither and answers the name only; the id gets the same answer here.
        return _deletion(
            name,
            state.topic_id,
            ErrorCode.INVALID_REQUEST,
            "The provided topic name maps to an ID that was already supplied.",
        )
    try:
        await context.services.topics.delete_topic(state.name)
    except Exception as error:  # one topic's failure is its own answer, as in Kafka
        return _deletion(
            state.name, state.topic_id, *resource_failure(error, context, f"topic {state.name!r}")
        )
    # Share groups' state of the topic goes too (a cluster's leaders learn it by StopReplica).
    if context.services.share_partitions is not None:
        context.services.share_partitions.topic_deleted(state.topic_id)
    if context.services.share_coordinator is not None:
        await context.services.share_coordinator.topics_deleted({state.topic_id})
    if context.services.groups is not None:
        context.services.groups.share.topics_deleted({state.topic_id})
    return _deletion(state.name, state.topic_id, ErrorCode.NONE, None)


def _deletion(
    name: str | None, topic_id: uuid.UUID, code: ErrorCode, message: str | None
) -> DeletableTopicResult:
    return DeletableTopicResult(name=name, topic_id=topic_id, error_code=code, error_message=message)


async def _grow(topic: CreatePartitionsTopic, validate_only: bool, context: RequestContext) -> None:
    assignments = [list(a.broker_ids) for a in topic.assignments] if topic.assignments is not None else None
    await context.services.topics.create_partitions(
        topic.name, topic.count, assignments, validate_only=validate_only
    )
