"""Metadata (key 3): brokers, controller, cluster id, and each topic's partitions and leaders.

Version notes:
- v0: an empty topic list means every topic. v1+: null means every topic, empty means none; v1 adds
  the controller id, rack and is_internal; v2 the cluster id; v3 throttle time.
- v4+: `allow_auto_topic_creation` (earlier versions always may auto-create, as Kafka did); topics are
  created only when the broker's `auto.create.topics.enable` is also true, with `num.partitions`.
  A topic created this way is returned once its partitions are durable (a single node needs no
  election). A topic being created (by CreateTopics, another Metadata request, or a coordinator, e.g.
  `__consumer_offsets`) is not listed yet; asked for by name it gets LEADER_NOT_AVAILABLE and no
  partitions, as Kafka answers while it creates a topic.
- ZooKeeper mode: brokers, controller and partitions come from the controller's UpdateMetadata; each
  broker is listed with its endpoint for the listener the client came in on (a broker without that
  listener is left out, as Kafka does) and a partition whose leader is not among them is
  LEADER_NOT_AVAILABLE with leader -1. No auto-creation yet (see `may_create`).
- v5 offline replicas, v7 leader epochs, v8 authorized operations (no authorizer: everything allowed),
  v9 flexible, v10 topic ids (topics may be asked for by id), v12 a null topic name for id lookups,
  v13 a top-level error code. A request carrying any topic id is answered by id alone, its names
  (null, or "" as the Java client leaves them) ignored, as Kafka's. include_cluster_authorized_operations
  (v8-10) is honoured the same way.
- With an authorizer (as Kafka): topics without DESCRIBE are left out of an all-topics answer and are
  TOPIC_AUTHORIZATION_FAILED when named (no topic id, no partitions, existence not disclosed);
  auto-creation needs CREATE on the cluster or on the topic, else TOPIC_AUTHORIZATION_FAILED; the
  authorized-operations fields are the principal's own (cluster: 0 without DESCRIBE on it).
"""

from __future__ import annotations

from odradek.cluster.metadata import TopicState
from odradek.cluster.topic_checks import INTERNAL_TOPICS
from odradek.handlers._common.authorization import authorize, authorize_cluster, authorized_operations
from odradek.handlers._common.authorized_operations import OMITTED
from odradek.handlers._common.context import RequestContext
from odradek.handlers._common.registry import handles
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.protocol.messages.metadata import (
    MetadataRequest,
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from odradek.protocol.schema import ZERO_UUID
from odradek.security.acl import CLUSTER_NAME, AclOperation, ResourceType


@handles(ApiKey.METADATA, 0, 13)
async def handle_metadata(request: MetadataRequest, context: RequestContext) -> MetadataResponse:
    services = context.services
    await services.await_first_metadata()
    cluster = services.cluster
    version = context.api_version
    wanted = request.topics
    brokers = services.advertised_brokers(context.listener)
    if wanted is None or (version == 0 and not wanted):
        topics = [
            _describe(t, request, context)
            for t in sorted(cluster.topics.values(), key=lambda t: t.name)
            if _may_describe(context, t.name)
        ]
    else:
        may_create = (version < 4 or request.allow_auto_topic_creation) and services.auto_create_topics
        # In a ZooKeeper cluster TopicAdmin is the ZooKeeper one: it writes the assignment for the
        # controller and answers LEADER_NOT_AVAILABLE until leaders are elected, as Kafka.
        # Kafka asks for a set of topics: one named (or identified) twice is answered once. A request
        # carrying any topic id is answered by id alone, whatever the names say (Kafka's `useTopicId`:
        # the Java client leaves the name "", the field's default, not null).
        ids = [entry.topic_id for entry in wanted if entry.topic_id not in (None, ZERO_UUID)]
        by_id: list[tuple[str | None, object]] = [(None, topic_id) for topic_id in ids]
        asked = dict.fromkeys(by_id or [(entry.name, entry.topic_id) for entry in wanted])
        topics = [await _lookup(name, topic_id, may_create, request, context) for name, topic_id in asked]
    return MetadataResponse(
        brokers=[
            MetadataResponseBroker(node_id=b.node_id, host=b.host, port=b.port, rack=b.rack) for b in brokers
        ],
        cluster_id=cluster.cluster_id,
        controller_id=cluster.controller_id,
        topics=topics,
        cluster_authorized_operations=_cluster_operations(request, context),
    )


def _may_describe(context: RequestContext, topic: str) -> bool:
    return authorize(context, AclOperation.DESCRIBE, ResourceType.TOPIC, topic)


def _may_create(context: RequestContext, topic: str) -> bool:
    return authorize_cluster(context, AclOperation.CREATE) or authorize(
        context, AclOperation.CREATE, ResourceType.TOPIC, topic
    )


def _cluster_operations(request: MetadataRequest, context: RequestContext) -> int:
    if not request.include_cluster_authorized_operations:
        return OMITTED
    if not authorize_cluster(context, AclOperation.DESCRIBE):
        return 0
    return authorized_operations(context, ResourceType.CLUSTER, CLUSTER_NAME)


async def _lookup(
    name: str | None,
    topic_id: object,
    may_create: bool,
    request: MetadataRequest,
    context: RequestContext,
) -> MetadataResponseTopic:
    cluster = context.services.cluster
    if name is None:
        topic = cluster.topic_by_id(topic_id)  # type: ignore[arg-type]
        if topic is None:
            return MetadataResponseTopic(error_code=ErrorCode.UNKNOWN_TOPIC_ID, name=None, topic_id=topic_id)
        if not _may_describe(context, topic.name):  # a topic id is not secret, its name is
            return MetadataResponseTopic(
                error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, name=None, topic_id=topic_id
            )
        return _describe(topic, request, context)
    if not _may_describe(context, name):
        return MetadataResponseTopic(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, name=name)
    topic = cluster.topic(name)
    if topic is None and context.services.topics.is_being_created(name):
        return MetadataResponseTopic(
            error_code=ErrorCode.LEADER_NOT_AVAILABLE, name=name, is_internal=name in INTERNAL_TOPICS
        )
    if topic is None and may_create:
        if not _may_create(context, name):
            return MetadataResponseTopic(
                error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                name=name,
                is_internal=name in INTERNAL_TOPICS,
            )
        try:
            topic = await context.services.topics.auto_create(name)
        except KafkaError as error:
            return MetadataResponseTopic(error_code=error.error_code, name=name)
    if topic is None:
        try:
            context.services.topics.validate_name(name)
        except KafkaError as error:
            return MetadataResponseTopic(error_code=error.error_code, name=name)
        return MetadataResponseTopic(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name=name)
    return _describe(topic, request, context)


def _describe(topic: TopicState, request: MetadataRequest, context: RequestContext) -> MetadataResponseTopic:
    cluster = context.services.cluster
    partitions = []
    for p in topic.partitions:
        # a leader not alive on this listener cannot be reached: Kafka answers LEADER_NOT_AVAILABLE
        leader = cluster.reachable_leader(p, context.listener)
        partitions.append(
            MetadataResponsePartition(
                error_code=ErrorCode.NONE if leader >= 0 else ErrorCode.LEADER_NOT_AVAILABLE,
                partition_index=p.partition,
                leader_id=leader,
                leader_epoch=p.leader_epoch,
                replica_nodes=list(p.replicas),
                isr_nodes=list(p.isr),
                offline_replicas=list(p.offline_replicas),
            )
        )
    return MetadataResponseTopic(
        error_code=ErrorCode.NONE,
        name=topic.name,
        topic_id=topic.topic_id or ZERO_UUID,
        is_internal=topic.is_internal,
        partitions=partitions,
        topic_authorized_operations=authorized_operations(
            context, ResourceType.TOPIC, topic.name, request.include_topic_authorized_operations
        ),
    )
