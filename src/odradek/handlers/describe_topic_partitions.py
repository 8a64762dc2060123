"""DescribeTopicPartitions (key 75, KIP-966): topics' partitions in pages of a partition limit, with a
cursor; what Kafka 4.x's admin client asks to describe topics by name (Metadata where not served).

Version notes:
- v0 (the only version, flexible). As Kafka's KRaft broker (DescribeTopicPartitionsRequestHandler):
  an empty topic list means every topic; topics are answered sorted by name, each name once. A page
  holds at most min(ResponsePartitionLimit, `max.request.partition.size.limit`) partitions, and at
  least one; a topic cut by the limit ends the page with NextCursor at its next partition, a full
  page with NextCursor at the next topic's partition 0. The cursor's topic starts at its partition
  index (a topic past its last partition is answered with none); topics sorted before it are left out.
- INVALID_REQUEST for every topic named (none when every topic is asked for) when the cursor's
  partition is negative, or names a topic the request does not name.
- A named topic that does not exist: UNKNOWN_TOPIC_OR_PARTITION, or INVALID_TOPIC_EXCEPTION for a
  name no topic may have; such answers take no room in the page. Topics vanishing from an all-topics
  listing are left out.
- Partitions: a leader the client's listener cannot reach is -1 with no error (Metadata says
  LEADER_NOT_AVAILABLE there); replicas, ISR and offline replicas as Metadata's; no eligible leader
  replicas (KIP-966's ELR is not built): empty lists, as Kafka without ELR.
- With an authorizer: topics without DESCRIBE are left out of an all-topics answer and are
  TOPIC_AUTHORIZATION_FAILED when named (no id, no partitions, existence not disclosed; listed after
  the page's other topics, as Kafka); a cursor on such a topic tells nothing either. Every other
  topic carries the principal's authorized operations (KIP-430, always: the request has no flag).
- Deliberately unlike Kafka 4.4: a topic named "" in a request without a cursor is answered
  INVALID_TOPIC_EXCEPTION, where Kafka's handler fails on the null cursor and answers every topic
  UNKNOWN_SERVER_ERROR. A name longer than 32,767 bytes is INVALID_TOPIC_EXCEPTION too (Kafka's
  parser refuses such a string and closes the connection; our codec takes it).
"""

from __future__ import annotations

from odradek.cluster.metadata import ClusterMetadata, PartitionState, TopicState
from odradek.cluster.topic_checks import INTERNAL_TOPICS, validate_topic_name
from odradek.handlers._common.authorization import authorize, authorized_operations
from odradek.handlers._common.context import RequestContext
from odradek.handlers._common.registry import handles
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.protocol.messages.describe_topic_partitions import (
    Cursor,
    DescribeTopicPartitionsRequest,
    DescribeTopicPartitionsResponse,
    DescribeTopicPartitionsResponsePartition,
    DescribeTopicPartitionsResponseTopic,
)
from odradek.protocol.schema import ZERO_UUID
from odradek.security.acl import AclOperation, ResourceType


@handles(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, 0)
async def handle_describe_topic_partitions(
    request: DescribeTopicPartitionsRequest, context: RequestContext
) -> DescribeTopicPartitionsResponse:
    services = context.services
    await services.await_first_metadata()
    cluster = services.cluster
    cursor = request.cursor
    every_topic = not request.topics
    start = cursor.topic_name if cursor is not None else ""
    if every_topic:
        names = {name for name in cluster.topics if name >= start}
    else:
        names = {topic.name for topic in request.topics if topic.name >= start}
        if cursor is not None and cursor.topic_name not in names:
            return _invalid_request(request)
    if cursor is not None and cursor.partition_index < 0:
        return _invalid_request(request)
    limit = max(min(services.config.max_request_partition_size_limit, request.response_partition_limit), 1)
    page = _Page(cluster, context.listener, limit)
    refused: list[DescribeTopicPartitionsResponseTopic] = []
    for name in sorted(names):
        if not authorize(context, AclOperation.DESCRIBE, ResourceType.TOPIC, name):
            if not every_topic:
                refused.append(_refused(name))
            continue  # left out of an all-topics answer: never disclosed
        first = cursor.partition_index if cursor is not None and name == cursor.topic_name else 0
        if not page.add(name, first, report_missing=not every_topic):
            break
    for topic in page.topics:
        name = topic.name or ""
        topic.topic_authorized_operations = authorized_operations(context, ResourceType.TOPIC, name)
    return DescribeTopicPartitionsResponse(topics=page.topics + refused, next_cursor=page.next_cursor)


class _Page:
    """The topics of one answer, until `limit` partitions are in it."""

    def __init__(self, cluster: ClusterMetadata, listener: str, limit: int) -> None:
        self.cluster = cluster
        self.listener = listener
        self.remaining = limit
        self.topics: list[DescribeTopicPartitionsResponseTopic] = []
        self.next_cursor: Cursor | None = None

    def add(self, name: str, first: int, report_missing: bool) -> bool:
        """Add topic `name` from partition `first`; False when the page is full (the cursor is set)."""
        if self.remaining == 0:
            self.next_cursor = Cursor(topic_name=name, partition_index=0)
            return False
        state = self.cluster.topic(name)
        if state is None:
            if report_missing:
                self.topics.append(_missing(name))
            return True
        end = min(len(state.partitions), first + self.remaining)
        partitions = [self._partition(p) for p in state.partitions[first:end]]
        self.topics.append(_described(state, partitions))
        if end < len(state.partitions):
            self.next_cursor = Cursor(topic_name=name, partition_index=end)
            return False
        self.remaining -= len(partitions)
        return True

    def _partition(self, partition: PartitionState) -> DescribeTopicPartitionsResponsePartition:
        return DescribeTopicPartitionsResponsePartition(
            error_code=ErrorCode.NONE,
            partition_index=partition.partition,
            leader_id=self.cluster.reachable_leader(partition, self.listener),
            leader_epoch=partition.leader_epoch,
            replica_nodes=list(partition.replicas),
            isr_nodes=list(partition.isr),
            eligible_leader_replicas=[],
            last_known_elr=[],
            offline_replicas=list(partition.offline_replicas),
        )


def _described(
    state: TopicState, partitions: list[DescribeTopicPartitionsResponsePartition]
) -> DescribeTopicPartitionsResponseTopic:
    return DescribeTopicPartitionsResponseTopic(
        error_code=ErrorCode.NONE,
        name=state.name,
        topic_id=state.topic_id or ZERO_UUID,
        is_internal=state.is_internal,
        partitions=partitions,
    )


def _missing(name: str) -> DescribeTopicPartitionsResponseTopic:
    try:
        validate_topic_name(name)
        error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    except KafkaError as invalid:
        error = invalid.error_code
    return DescribeTopicPartitionsResponseTopic(
        error_code=error, name=name, topic_id=ZERO_UUID, is_internal=name in INTERNAL_TOPICS, partitions=[]
    )


def _refused(name: str) -> DescribeTopicPartitionsResponseTopic:
    return DescribeTopicPartitionsResponseTopic(
        error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, name=name, topic_id=ZERO_UUID, partitions=[]
    )


def _invalid_request(request: DescribeTopicPartitionsRequest) -> DescribeTopicPartitionsResponse:
    """Kafka's error answer: every topic as named (duplicates too), none when every topic was asked."""
    return DescribeTopicPartitionsResponse(
        topics=[
            DescribeTopicPartitionsResponseTopic(
                error_code=ErrorCode.INVALID_REQUEST, name=topic.name, topic_id=ZERO_UUID, partitions=[]
            )
            for topic in request.topics
        ]
    )
