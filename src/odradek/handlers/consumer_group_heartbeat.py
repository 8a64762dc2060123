"""ConsumerGroupHeartbeat (68) and ConsumerGroupDescribe (69): the KIP-848 consumer group protocol.

Version notes:
- ConsumerGroupHeartbeat v0: the coordinator hands out member ids on join; v1 adds the subscribed
  topic regex and the client brings its own member id (KIP-1082). Member epoch 0 joins, -1 leaves,
  -2 leaves a static member for a moment (it keeps its partitions for its session timeout).
  Assignments are computed on the broker by the "uniform" (default) or "range" assignor
  (`group.consumer.assignors`). Regexes are RE2's syntax, matched against whole topic names (Kafka
  uses RE2/J), resolved in the background as Kafka 4 does (coordinator/consumer_regexes.py): a member
  joining with a regex is assigned its topics at a heartbeat after the resolution.
- With "consumer" left out of `group.coordinator.rebalance.protocols`, heartbeats get
  UNSUPPORTED_VERSION, as from Kafka.
- Groups use the broker-wide `group.consumer.session.timeout.ms` and `.heartbeat.interval.ms`, or
  their GROUP configs `consumer.session.timeout.ms` and `consumer.heartbeat.interval.ms` where set
  (IncrementalAlterConfigs on GROUP resources), read at each heartbeat as Kafka 4.4 does.
- A classic group that is empty becomes a consumer group when a consumer member joins; a non-empty
  one answers GROUP_ID_NOT_FOUND (Kafka's online upgrade and classic members inside consumer groups
  are not supported).
- ConsumerGroupDescribe v1 adds the member type (always 1, consumer). Authorized operations: the
  principal's on the group (everything a group allows without an authorizer), when asked for.
- With an authorizer (as Kafka 4): a heartbeat needs READ on the group, a describe DESCRIBE on each
  group; else GROUP_AUTHORIZATION_FAILED. A heartbeat subscribing by name to a topic the principal may
  not DESCRIBE (existing or not) gets TOPIC_AUTHORIZATION_FAILED; a regex resolves only to topics the
  member may DESCRIBE; a described group whose members are assigned (or targeted) a topic the caller
  may not DESCRIBE is answered TOPIC_AUTHORIZATION_FAILED, without its members.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator

from odradek.coordinator.consumer_regexes import TopicFilter, describe_all
from odradek.coordinator.regex_lane import Requester
from odradek.handlers._common.authorization import authorize, require_group
from odradek.handlers._common.context import RequestContext
from odradek.handlers._common.coordinators import client_host, group_coordinator
from odradek.handlers._common.group_describe import describe_groups
from odradek.handlers._common.registry import handles
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.protocol.messages.consumer_group_describe import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    DescribedGroup,
)
from odradek.protocol.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from odradek.security.acl import AclOperation, ResourceType


@handles(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, 1)
async def handle_consumer_group_heartbeat(
    request: ConsumerGroupHeartbeatRequest, context: RequestContext
) -> ConsumerGroupHeartbeatResponse:
    try:
        require_group(context, request.group_id)
        coordinator = group_coordinator(context)
    except KafkaError as error:
        return ConsumerGroupHeartbeatResponse(error_code=error.error_code)
    if "consumer" not in coordinator.settings.rebalance_protocols:
        return ConsumerGroupHeartbeatResponse(
            error_code=ErrorCode.UNSUPPORTED_VERSION,
            error_message="The consumer group protocol is disabled (group.coordinator.rebalance.protocols).",
        )
    if context.services.authorizer is None:
        describable: TopicFilter = describe_all
    else:
        # Kafka's KafkaApis: a client may not subscribe to (and so learn of) a topic it cannot describe.
        if any(not _may_describe(context, name) for name in set(request.subscribed_topic_names or ())):
            return ConsumerGroupHeartbeatResponse(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED)

        def describable(names: Collection[str]) -> Collection[str]:
            return [name for name in names if _may_describe(context, name)]

    return await coordinator.consumer_group_heartbeat_committed(
        request,
        context.api_version,
        context.client_id or "",
        client_host(context),
        describable,
        requester=Requester(context.principal, context.closed),
    )


@handles(ApiKey.CONSUMER_GROUP_DESCRIBE, 0, 1)
async def handle_consumer_group_describe(
    request: ConsumerGroupDescribeRequest, context: RequestContext
) -> ConsumerGroupDescribeResponse:
    try:
        coordinator = group_coordinator(context)
    except KafkaError as error:
        return ConsumerGroupDescribeResponse(
            groups=[DescribedGroup(error_code=error.error_code, group_id=g) for g in request.group_ids]
        )
    groups = describe_groups(
        context,
        request.group_ids,
        request.include_authorized_operations,
        coordinator.consumer_group_describe,
        _named_topics,
        DescribedGroup,
    )
    return ConsumerGroupDescribeResponse(groups=groups)


def _may_describe(context: RequestContext, topic: str) -> bool:
    return authorize(context, AclOperation.DESCRIBE, ResourceType.TOPIC, topic)


def _named_topics(described: DescribedGroup) -> Iterator[str]:
    """The topics a group names: in its members' assignments and targets."""
    for member in described.members:
        for assignment in (member.assignment, member.target_assignment):
            for topic in assignment.topic_partitions:
                yield topic.topic_name
