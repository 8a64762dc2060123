"""DescribeAcls (key 29), CreateAcls (key 30) and DeleteAcls (key 31): the authorizer's ACLs.

Version notes:
- v0 of each has no pattern type (LITERAL implied); v1 adds it (filters: ANY, MATCH, LITERAL,
  PREFIXED); v2+ are flexible; v3 changes nothing on the wire (it allows USER resources in Kafka).
- Without an authorizer every answer is SECURITY_DISABLED. Describe needs DESCRIBE on the cluster,
  Create and Delete need ALTER on it (CLUSTER_AUTHORIZATION_FAILED), as Kafka's AclApis.
- A filter or ACL with UNKNOWN codes, an ANY or MATCH pattern in a creation, or a malformed principal
  is INVALID_REQUEST with the reason; the other creations and filters of the request still apply.
- A store that cannot be written (ZooKeeper unreachable) answers UNKNOWN_SERVER_ERROR for each creation
  or filter that would have changed it, as Kafka, with no message (Kafka's ApiError.fromThrowable keeps
  that code's detail to the broker): the reason names ZooKeeper's hosts and znodes, and is logged.
- Changes are persisted before the answer: the log dir on a single node; ZooKeeper's /kafka-acl layout
  in a cluster, with a change notification that every broker follows (DescribeAcls and decisions on
  another broker see the change once it has read the notification).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterator

from odradek.handlers._common.authorization import authorize_cluster
from odradek.handlers._common.context import RequestContext
from odradek.handlers._common.registry import handles
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.create_acls import (
    AclCreation,
    AclCreationResult,
    CreateAclsRequest,
    CreateAclsResponse,
)
from odradek.protocol.messages.delete_acls import (
    DeleteAclsFilter,
    DeleteAclsFilterResult,
    DeleteAclsMatchingAcl,
    DeleteAclsRequest,
    DeleteAclsResponse,
)
from odradek.protocol.messages.describe_acls import (
    AclDescription,
    DescribeAclsRequest,
    DescribeAclsResource,
    DescribeAclsResponse,
)
from odradek.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    InvalidAclError,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from odradek.security.acl_store import AclStoreError

log = logging.getLogger(__name__)

_NO_AUTHORIZER = "No Authorizer is configured on the broker"


@handles(ApiKey.DESCRIBE_ACLS, 0, 3)
async def handle_describe_acls(request: DescribeAclsRequest, context: RequestContext) -> DescribeAclsResponse:
    authorizer = context.services.authorizer
    if authorizer is None:
        return _describe_failed(ErrorCode.SECURITY_DISABLED, _NO_AUTHORIZER)
    if not authorize_cluster(context, AclOperation.DESCRIBE):
        denied = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return _describe_failed(denied, denied.message)
    try:
        acl_filter = _filter(request)
        acl_filter.validate()
    except (InvalidAclError, ValueError) as error:
        return _describe_failed(ErrorCode.INVALID_REQUEST, str(error))
    by_pattern: defaultdict[ResourcePattern, list[AccessControlEntry]] = defaultdict(list)
    for binding in authorizer.acls(acl_filter):
        by_pattern[binding.pattern].append(binding.entry)
    return DescribeAclsResponse(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        error_message=None,
        resources=[
            DescribeAclsResource(
                resource_type=pattern.resource_type,
                resource_name=pattern.name,
                pattern_type=pattern.pattern_type,
                acls=[
                    AclDescription(
                        principal=e.principal,
                        host=e.host,
                        operation=e.operation,
                        permission_type=e.permission_type,
                    )
                    for e in sorted(entries, key=_entry_order)
                ],
            )
            for pattern, entries in sorted(by_pattern.items(), key=lambda item: _pattern_order(item[0]))
        ],
    )


@handles(ApiKey.CREATE_ACLS, 0, 3)
async def handle_create_acls(request: CreateAclsRequest, context: RequestContext) -> CreateAclsResponse:
    authorizer = context.services.authorizer
    refusal = _refusal(context)
    if authorizer is None or refusal is not None:
        code, message = refusal or (ErrorCode.SECURITY_DISABLED, _NO_AUTHORIZER)
        results = [AclCreationResult(error_code=code, error_message=message) for _ in request.creations]
        return CreateAclsResponse(throttle_time_ms=0, results=results)
    results = []
    valid: list[AclBinding] = []
    for creation in request.creations:
        try:
            binding = _binding(creation)
            authorizer.validate(binding)
        except (InvalidAclError, ValueError) as error:
            results.append(AclCreationResult(error_code=ErrorCode.INVALID_REQUEST, error_message=str(error)))
            continue
        valid.append(binding)
        results.append(AclCreationResult(error_code=ErrorCode.NONE, error_message=None))
    if valid:
        try:
            await authorizer.create_acls(valid)
        except AclStoreError as error:  # ZooKeeper unreachable: as Kafka, each creation gets the error
            log.error("CreateAcls from %s: ACLs not created: %s", _client(context), error)
            failed = AclCreationResult(error_code=ErrorCode.UNKNOWN_SERVER_ERROR, error_message=None)
            results = [failed if r.error_code == ErrorCode.NONE else r for r in results]
    return CreateAclsResponse(throttle_time_ms=0, results=results)


@handles(ApiKey.DELETE_ACLS, 0, 3)
async def handle_delete_acls(request: DeleteAclsRequest, context: RequestContext) -> DeleteAclsResponse:
    authorizer = context.services.authorizer
    refusal = _refusal(context)
    if authorizer is None or refusal is not None:
        code, message = refusal or (ErrorCode.SECURITY_DISABLED, _NO_AUTHORIZER)
        failed = [
            DeleteAclsFilterResult(error_code=code, error_message=message, matching_acls=[])
            for _ in request.filters
        ]
        return DeleteAclsResponse(throttle_time_ms=0, filter_results=failed)
    filters: list[AclBindingFilter | tuple[ErrorCode, str | None]] = []
    for wire in request.filters:
        try:
            acl_filter = _filter(wire)
            acl_filter.validate()
            filters.append(acl_filter)
        except (InvalidAclError, ValueError) as error:
            filters.append((ErrorCode.INVALID_REQUEST, str(error)))
    valid = [f for f in filters if isinstance(f, AclBindingFilter)]
    deleted: Iterator[list[AclBinding]] = iter([])
    try:
        deleted = iter(await authorizer.delete_acls(valid))
    except AclStoreError as error:  # ZooKeeper unreachable: as Kafka, each valid filter gets the error
        log.error("DeleteAcls from %s: ACLs not deleted: %s", _client(context), error)
        unwritten: tuple[ErrorCode, str | None] = (ErrorCode.UNKNOWN_SERVER_ERROR, None)
        filters = [unwritten if isinstance(f, AclBindingFilter) else f for f in filters]
    results = []
    for parsed in filters:
        if isinstance(parsed, tuple):
            code, message = parsed
            results.append(DeleteAclsFilterResult(error_code=code, error_message=message, matching_acls=[]))
            continue
        matching = sorted(next(deleted), key=lambda b: (_pattern_order(b.pattern), _entry_order(b.entry)))
        results.append(
            DeleteAclsFilterResult(
                error_code=ErrorCode.NONE,
                error_message=None,
                matching_acls=[_matching_acl(binding) for binding in matching],
            )
        )
    return DeleteAclsResponse(throttle_time_ms=0, filter_results=results)


# ----- wire to model -------------------------------------------------------------------------------


def _refusal(context: RequestContext) -> tuple[ErrorCode, str | None] | None:
    if context.services.authorizer is not None and not authorize_cluster(context, AclOperation.ALTER):
        return ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ErrorCode.CLUSTER_AUTHORIZATION_FAILED.message
    return None


def _client(context: RequestContext) -> str:
    return f"{context.principal} at {context.client_host}:{context.client_port}"


def _filter(wire: DescribeAclsRequest | DeleteAclsFilter) -> AclBindingFilter:
    """A request's filter; ValueError for a code Kafka does not know (answered INVALID_REQUEST)."""
    return AclBindingFilter(
        ResourceType(wire.resource_type_filter),
        wire.resource_name_filter,
        PatternType(wire.pattern_type_filter),
        wire.principal_filter,
        wire.host_filter,
        AclOperation(wire.operation),
        AclPermissionType(wire.permission_type),
    )


def _binding(creation: AclCreation) -> AclBinding:
    return AclBinding(
        ResourcePattern(
            ResourceType(creation.resource_type),
            creation.resource_name,
            PatternType(creation.resource_pattern_type),
        ),
        AccessControlEntry(
            creation.principal,
            creation.host,
            AclOperation(creation.operation),
            AclPermissionType(creation.permission_type),
        ),
    )


def _matching_acl(binding: AclBinding) -> DeleteAclsMatchingAcl:
    pattern, entry = binding.pattern, binding.entry
    return DeleteAclsMatchingAcl(
        error_code=ErrorCode.NONE,
        error_message=None,
        resource_type=pattern.resource_type,
        resource_name=pattern.name,
        pattern_type=pattern.pattern_type,
        principal=entry.principal,
        host=entry.host,
        operation=entry.operation,
        permission_type=entry.permission_type,
    )


def _describe_failed(code: ErrorCode, message: str | None) -> DescribeAclsResponse:
    return DescribeAclsResponse(throttle_time_ms=0, error_code=code, error_message=message, resources=[])


def _pattern_order(pattern: ResourcePattern) -> tuple[int, str, int]:
    return (pattern.resource_type, pattern.name, pattern.pattern_type)


def _entry_order(entry: AccessControlEntry) -> tuple[str, str, int, int]:
    return (entry.principal, entry.host, entry.operation, entry.permission_type)
