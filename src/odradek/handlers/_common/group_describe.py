"""The per-group answers of ConsumerGroupDescribe and ShareGroupDescribe: the same checks, in Kafka's
order, over either API's `DescribedGroup`.

Each group id in turn: an empty one is INVALID_GROUP_ID; without DESCRIBE on the group,
GROUP_AUTHORIZATION_FAILED; else the coordinator describes it, with the caller's authorized operations
on the group when asked; a described group that names a topic the caller may not DESCRIBE is answered
TOPIC_AUTHORIZATION_FAILED alone, nothing of the group (as Kafka 4's KafkaApis)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol, TypeVar

from odradek.handlers._common.authorization import authorize, authorize_group, authorized_operations
from odradek.handlers._common.context import RequestContext
from odradek.protocol.error_codes import ErrorCode
from odradek.security.acl import AclOperation, ResourceType

#: What Kafka says in place of a group that names topics the caller may not describe.
UNAUTHORIZED_TOPICS = "The group has described topic(s) that the client is not authorized to describe."


class DescribedGroup(Protocol):
    """What both APIs' described groups have."""

    error_code: int
    authorized_operations: int


Described = TypeVar("Described", bound=DescribedGroup)
Described_co = TypeVar("Described_co", bound=DescribedGroup, covariant=True)


class Refusal(Protocol[Described_co]):
    """The API's `DescribedGroup` made with an error alone."""

    def __call__(
        self, *, error_code: int, group_id: str, error_message: str | None = None
    ) -> Described_co: ...


def describe_groups(
    context: RequestContext,
    group_ids: Iterable[str],
    include_authorized_operations: bool,
    describe: Callable[[str], Described],
    named_topics: Callable[[Described], Iterable[str]],
    refusal: Refusal[Described],
) -> list[Described]:
    """Each group's answer: `describe` is the coordinator's, `named_topics` the topics a described
    group names (its members' assignments, and targets where the API has them)."""
    groups = []
    for group_id in group_ids:
        if not group_id:
            groups.append(refusal(error_code=ErrorCode.INVALID_GROUP_ID, group_id=group_id))
            continue
        if not authorize_group(context, group_id, AclOperation.DESCRIBE):
            groups.append(refusal(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, group_id=group_id))
            continue
        described = describe(group_id)
        if described.error_code == ErrorCode.NONE:
            if include_authorized_operations:
                described.authorized_operations = authorized_operations(context, ResourceType.GROUP, group_id)
            if context.services.authorizer is not None and not all(
                authorize(context, AclOperation.DESCRIBE, ResourceType.TOPIC, name)
                for name in set(named_topics(described))
            ):
                described = refusal(
                    error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                    group_id=group_id,
                    error_message=UNAUTHORIZED_TOPICS,
                )
        groups.append(described)
    return groups
