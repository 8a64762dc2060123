"""The one way handlers ask the authorizer: may this request's principal, from its host, do this
operation on this resource? Without an authorizer (authorizer.class.name empty) the answer is yes
and nothing else is looked at, so an unsecured broker pays one attribute check per resource.
"""

from __future__ import annotations

from collections.abc import Sequence

from odradek.handlers._common.authorized_operations import (
    CLUSTER_OPERATIONS,
    GROUP_OPERATIONS,
    OMITTED,
    SUPPORTED_CLUSTER_OPERATIONS,
    SUPPORTED_GROUP_OPERATIONS,
    SUPPORTED_TOPIC_OPERATIONS,
    TOPIC_OPERATIONS,
)
from odradek.handlers._common.context import RequestContext
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.security.acl import CLUSTER_NAME, AclOperation, ResourceType

_SUPPORTED: dict[ResourceType, tuple[Sequence[AclOperation], int]] = {
    ResourceType.TOPIC: (SUPPORTED_TOPIC_OPERATIONS, TOPIC_OPERATIONS),
    ResourceType.GROUP: (SUPPORTED_GROUP_OPERATIONS, GROUP_OPERATIONS),
    ResourceType.CLUSTER: (SUPPORTED_CLUSTER_OPERATIONS, CLUSTER_OPERATIONS),
}


def authorize(
    context: RequestContext, operation: AclOperation, resource_type: ResourceType, name: str
) -> bool:
    authorizer = context.services.authorizer
    if authorizer is None:
        return True
    return authorizer.authorize(context.principal, context.client_host, operation, resource_type, name)


def authorize_cluster(context: RequestContext, operation: AclOperation) -> bool:
    return authorize(context, operation, ResourceType.CLUSTER, CLUSTER_NAME)


def authorized_operations(
    context: RequestContext, resource_type: ResourceType, name: str, asked: bool = True
) -> int:
    """The KIP-430 field for a resource: OMITTED unless asked, every supported operation without an
    authorizer, else the supported operations the principal is allowed."""
    if not asked:
        return OMITTED
    supported, everything = _SUPPORTED[resource_type]
    authorizer = context.services.authorizer
    if authorizer is None:
        return everything
    return authorizer.authorized_operations(
        context.principal, context.client_host, resource_type, name, supported
    )


def authorize_group(
    context: RequestContext, group_id: str, operation: AclOperation = AclOperation.READ
) -> bool:
    return authorize(context, operation, ResourceType.GROUP, group_id)


def require_group(
    context: RequestContext, group_id: str, operation: AclOperation = AclOperation.READ
) -> None:
    """Raise GROUP_AUTHORIZATION_FAILED unless the principal may do the operation on the group."""
    if not authorize_group(context, group_id, operation):
        raise KafkaError(ErrorCode.GROUP_AUTHORIZATION_FAILED)
