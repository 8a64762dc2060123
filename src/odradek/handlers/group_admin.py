"""DescribeGroups (15), ListGroups (16), DeleteGroups (42): groups as administration tools see them.

Version notes:
- DescribeGroups v1 throttle time; v3 authorized operations (no authorizer: everything a group allows,
  when asked for); v4 group.instance.id per member; v5 flexible; v6 GROUP_ID_NOT_FOUND with a message
  for a group that does not exist (or is a consumer group: describe those with ConsumerGroupDescribe),
  where v0-5 answer state "Dead" without error. Member metadata and assignments, and the protocol
  name, are only filled in while the group is Stable, as in Kafka.
- ListGroups v1 throttle time; v3 flexible; v4 a state filter (case-insensitive); v5 a type filter
  ("classic", "consumer") and each group's type. Groups of `__consumer_offsets` partitions still
  loading are left out and the answer carries COORDINATOR_LOAD_IN_PROGRESS.
- DeleteGroups v1 same as v0; v2 flexible; v3 a per-group ErrorMessage, which Kafka 4.4 fills only
  when a Streams group's topology cannot be removed (odradek has no Streams groups): always null here,
  as Kafka 4.4 answers for every other error (checked with raw requests). Only empty groups can be
  deleted (NON_EMPTY_GROUP); the group's offsets go with it.
- With an authorizer (as Kafka): DescribeGroups needs DESCRIBE on each group, DeleteGroups DELETE
  (else GROUP_AUTHORIZATION_FAILED for that group); ListGroups lists every group with DESCRIBE on
  the cluster, else only the groups the principal may describe.
"""

from __future__ import annotations

from odradek.handlers._common.authorization import authorize_cluster, authorize_group, authorized_operations
from odradek.handlers._common.authorized_operations import OMITTED
from odradek.handlers._common.context import RequestContext
from odradek.handlers._common.coordinators import group_coordinator
from odradek.handlers._common.registry import handles
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.protocol.messages.delete_groups import (
    DeletableGroupResult,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
)
from odradek.protocol.messages.describe_groups import (
    DescribedGroup,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
)
from odradek.protocol.messages.list_groups import ListedGroup, ListGroupsRequest, ListGroupsResponse
from odradek.security.acl import AclOperation, ResourceType


@handles(ApiKey.DESCRIBE_GROUPS, 0, 6)
async def handle_describe_groups(
    request: DescribeGroupsRequest, context: RequestContext
) -> DescribeGroupsResponse:
    try:
        coordinator = group_coordinator(context)
    except KafkaError as error:
        return DescribeGroupsResponse(
            groups=[DescribedGroup(error_code=error.error_code, group_id=g) for g in request.groups]
        )
    groups = []
    for group_id in request.groups:
        if not authorize_group(context, group_id, AclOperation.DESCRIBE):
            denied = ErrorCode.GROUP_AUTHORIZATION_FAILED
            groups.append(DescribedGroup(error_code=denied, group_id=group_id, authorized_operations=OMITTED))
            continue
        described = coordinator.describe_group(group_id, context.api_version)
        if request.include_authorized_operations and described.error_code == ErrorCode.NONE:
            described.authorized_operations = authorized_operations(context, ResourceType.GROUP, group_id)
        else:
            described.authorized_operations = OMITTED
        groups.append(described)
    return DescribeGroupsResponse(groups=groups)


@handles(ApiKey.LIST_GROUPS, 0, 5)
async def handle_list_groups(request: ListGroupsRequest, context: RequestContext) -> ListGroupsResponse:
    try:
        coordinator = group_coordinator(context)
    except KafkaError as failure:
        return ListGroupsResponse(error_code=failure.error_code)
    states = {s.lower() for s in request.states_filter}
    types = {t.lower() for t in request.types_filter}
    error, listed = coordinator.list_groups(states, types)
    if not authorize_cluster(context, AclOperation.DESCRIBE):
        listed = [g for g in listed if authorize_group(context, g.group_id, AclOperation.DESCRIBE)]
    return ListGroupsResponse(
        error_code=error,
        groups=[
            ListedGroup(
                group_id=g.group_id,
                protocol_type=g.protocol_type,
                group_state=g.group_state,
                group_type=g.group_type,
            )
            for g in sorted(listed, key=lambda g: g.group_id)
        ],
    )


@handles(ApiKey.DELETE_GROUPS, 0, 3)
async def handle_delete_groups(request: DeleteGroupsRequest, context: RequestContext) -> DeleteGroupsResponse:
    allowed = [g for g in request.groups_names if authorize_group(context, g, AclOperation.DELETE)]
    answers = {g: ErrorCode.GROUP_AUTHORIZATION_FAILED for g in request.groups_names}
    try:
        coordinator = group_coordinator(context)
        # An empty share group's state on the share coordinators goes first, as Kafka's; one whose
        # state could not be deleted is kept and answered with the error.
        refused = await coordinator.share.delete_state(allowed)
        answers.update(refused)
        kept = [g for g in allowed if g not in refused]
        answers.update(coordinator.delete_groups(kept) if kept else {})
    except KafkaError as failure:
        answers.update({g: failure.error_code for g in allowed})
    return DeleteGroupsResponse(
        results=[DeletableGroupResult(group_id=g, error_code=answers[g]) for g in request.groups_names]
    )
