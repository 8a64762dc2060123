"""ACLs in Kafka's vocabulary: resource patterns, access control entries, bindings, and the filters
DescribeAcls and DeleteAcls send (org.apache.kafka.common.acl / .resource).

The enum codes are Kafka's wire codes. A filter field that is None (or ANY) matches anything; a
MATCH pattern filter matches every pattern that would apply to the named resource (the literal name,
the wildcard ``*`` and every prefix), as Kafka's ResourcePatternFilter does.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Final

#: The one resource of type CLUSTER (Kafka's Resource.CLUSTER_NAME).
CLUSTER_NAME: Final = "kafka-cluster"
#: A literal resource name that matches every resource of its type.
WILDCARD_RESOURCE: Final = "*"
#: The principal that matches every principal, and the host that matches every host.
WILDCARD_PRINCIPAL: Final = "User:*"
WILDCARD_HOST: Final = "*"


class ResourceType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15  # KIP-939, on a transactional id


class AclPermissionType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


class InvalidAclError(ValueError):
    """An ACL or filter Kafka would refuse (answered INVALID_REQUEST)."""


#: The JSON names Kafka stores in /kafka-acl (AclEntry): "Topic", "Read", "Allow", ...
RESOURCE_TYPE_NAMES: Final[dict[ResourceType, str]] = {
    ResourceType.TOPIC: "Topic",
    ResourceType.GROUP: "Group",
    ResourceType.CLUSTER: "Cluster",
    ResourceType.TRANSACTIONAL_ID: "TransactionalId",
    ResourceType.DELEGATION_TOKEN: "DelegationToken",
    ResourceType.USER: "User",
}
OPERATION_NAMES: Final[dict[AclOperation, str]] = {
    op: "".join(word.capitalize() for word in op.name.split("_"))
    for op in AclOperation
    if op not in (AclOperation.UNKNOWN, AclOperation.ANY)
}
PERMISSION_NAMES: Final[dict[AclPermissionType, str]] = {
    AclPermissionType.DENY: "Deny",
    AclPermissionType.ALLOW: "Allow",
}


@dataclass(frozen=True, slots=True)
class ResourcePattern:
    resource_type: ResourceType
    name: str
    pattern_type: PatternType

    def matches(self, resource_type: ResourceType, name: str) -> bool:
        """Whether this pattern applies to the resource (what the authorizer asks)."""
        if resource_type is not self.resource_type:
            return False
        if self.pattern_type is PatternType.PREFIXED:
            return name.startswith(self.name)
        return self.name == name or self.name == WILDCARD_RESOURCE


@dataclass(frozen=True, slots=True)
class AccessControlEntry:
    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType


@dataclass(frozen=True, slots=True)
class AclBinding:
    pattern: ResourcePattern
    entry: AccessControlEntry

    def validate(self) -> None:
        """Refuse what Kafka's CreateAcls refuses: unknown or ANY codes, a malformed principal."""
        pattern, entry = self.pattern, self.entry
        if pattern.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
            raise InvalidAclError("Invalid resource type")
        if pattern.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            raise InvalidAclError("Invalid pattern type: only LITERAL and PREFIXED ACLs can be created")
        if not pattern.name:
            raise InvalidAclError("Resource name must not be empty")
        if pattern.resource_type is ResourceType.CLUSTER and pattern.name != CLUSTER_NAME:
            raise InvalidAclError(f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
        if entry.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
            raise InvalidAclError("Invalid operation")
        if entry.permission_type not in (AclPermissionType.DENY, AclPermissionType.ALLOW):
            raise InvalidAclError("Invalid permission type")
        kind, _, name = entry.principal.partition(":")
        if not kind or not name:
            raise InvalidAclError(f"Could not parse principal from `{entry.principal}` (no colon is found)")
        if not entry.host:
            raise InvalidAclError("Host must not be empty")


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    """What DescribeAcls and DeleteAcls select. None stands for a null field (matches anything)."""

    resource_type: ResourceType
    name: str | None
    pattern_type: PatternType
    principal: str | None
    host: str | None
    operation: AclOperation
    permission_type: AclPermissionType

    def validate(self) -> None:
        codes = (self.resource_type, self.pattern_type, self.operation, self.permission_type)
        if any(code == 0 for code in codes):
            raise InvalidAclError("Filter contains UNKNOWN elements")

    def matches(self, binding: AclBinding) -> bool:
        return self.matches_pattern(binding.pattern) and self.matches_entry(binding.entry)

    def matches_pattern(self, pattern: ResourcePattern) -> bool:
        if self.resource_type is not ResourceType.ANY and self.resource_type is not pattern.resource_type:
            return False
        return self._matches_pattern(pattern)

    def exact_patterns(self) -> tuple[ResourcePattern, ...]:
        """The patterns this filter names exactly (Kafka's matchesAtMostOne, then filterToResources):
        none unless its resource type, name and pattern type are definite (ANY: literal and prefixed)."""
        kind, name = self.resource_type, self.name
        if kind in (ResourceType.ANY, ResourceType.UNKNOWN) or name is None:
            return ()
        if self.pattern_type in (PatternType.LITERAL, PatternType.PREFIXED):
            return (ResourcePattern(kind, name, self.pattern_type),)
        if self.pattern_type is PatternType.ANY:
            return (
                ResourcePattern(kind, name, PatternType.LITERAL),
                ResourcePattern(kind, name, PatternType.PREFIXED),
            )
        return ()

    def matches_entry(self, entry: AccessControlEntry) -> bool:
        if self.principal is not None and self.principal != entry.principal:
            return False
        if self.host is not None and self.host != entry.host:
            return False
        if self.operation is not AclOperation.ANY and self.operation is not entry.operation:
            return False
        return self.permission_type is AclPermissionType.ANY or self.permission_type is entry.permission_type

    def _matches_pattern(self, pattern: ResourcePattern) -> bool:
        if self.pattern_type is PatternType.MATCH:
            # Every pattern that would apply to the named resource (Kafka's ResourcePatternFilter).
            if self.name is None:
                return True
            if pattern.pattern_type is PatternType.PREFIXED:
                return self.name.startswith(pattern.name)
            return pattern.name in (self.name, WILDCARD_RESOURCE)
        if self.pattern_type is not PatternType.ANY and self.pattern_type is not pattern.pattern_type:
            return False
        return self.name is None or self.name == pattern.name
