"""ACL znodes and their change notifications, as Kafka 3.9's AclAuthorizer writes them (ZkAclStore,
LiteralAclChangeStore, ExtendedAclChangeStore and ResourceZNode in kafka/zk/ZkData.scala).

```
/kafka-acl/Topic/orders                   {"version":1,"acls":[{"principal":"User:alice",
/kafka-acl-extended/prefixed/Group/team-     "permissionType":"Allow","operation":"Read","host":"*"}]}
/kafka-acl-changes/acl_changes_0000000003           TOPIC:orders            (literal patterns)
/kafka-acl-extended-changes/acl_changes_0000000004  {"version":1,"resourceType":"GROUP",
                                                     "name":"team-","patternType":"PREFIXED"}
```
A notification names the resource pattern whose znode changed, never its ACLs: every broker re-reads
that znode. Resource names are not encoded (as in Kafka), so a name ZooKeeper cannot hold as a node
name is refused.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from odradek.cluster.zookeeper.znode_json import (
    MalformedZnodeError,
    as_object,
    decode_object,
    encode,
    int_field,
    shown,
    str_field,
)
from odradek.security.acl import (
    RESOURCE_TYPE_NAMES,
    AccessControlEntry,
    InvalidAclError,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from odradek.security.acl_store import entry_from_json, entry_to_json

LITERAL_ACLS: Final = "/kafka-acl"
EXTENDED_ACLS: Final = "/kafka-acl-extended"
LITERAL_CHANGES: Final = "/kafka-acl-changes"
EXTENDED_CHANGES: Final = "/kafka-acl-extended-changes"
CHANGE_PREFIX: Final = "acl_changes_"
ACL_VERSION: Final = 1
EXTENDED_CHANGE_VERSION: Final = 1
#: The pattern types stored (Kafka's PatternType.isSpecific), each with its root.
PATTERN_ROOTS: Final = {
    PatternType.LITERAL: LITERAL_ACLS,
    PatternType.PREFIXED: f"{EXTENDED_ACLS}/prefixed",
}
_TYPE_BY_NAME: Final = {name: code for code, name in RESOURCE_TYPE_NAMES.items()}


def acl_paths() -> list[str]:
    """The znodes Kafka's createAclPaths makes sure exist: each store's root and its per-type
    children, and both change roots."""
    made = []
    for root in PATTERN_ROOTS.values():
        made.append(root)
        made.extend(f"{root}/{type_name}" for type_name in RESOURCE_TYPE_NAMES.values())
    return [*made, LITERAL_CHANGES, EXTENDED_CHANGES]


def resource_path(pattern: ResourcePattern) -> str:
    check_node_name(pattern.name)
    return (
        f"{PATTERN_ROOTS[pattern.pattern_type]}/{RESOURCE_TYPE_NAMES[pattern.resource_type]}/{pattern.name}"
    )


def change_root(pattern_type: PatternType) -> str:
    return LITERAL_CHANGES if pattern_type is PatternType.LITERAL else EXTENDED_CHANGES


def resource_type_from_path_name(type_name: str) -> ResourceType | None:
    """The type of a `/kafka-acl/<Type>` child (None for a name Kafka does not know: skipped)."""
    return _TYPE_BY_NAME.get(type_name)


def check_node_name(name: str) -> None:
    """Refuse a resource name that cannot be one znode name (ZooKeeper's PathUtils rules)."""
    if "/" in name or "\0" in name or name in (".", ".."):
        raise InvalidAclError(f"Resource name {name!r} cannot be stored in ZooKeeper: no '/', '.' or '..'")


def encode_acls(entries: Iterable[AccessControlEntry]) -> bytes:
    ordered = sorted((entry_to_json(e) for e in entries), key=lambda e: tuple(sorted(e.items())))
    return encode({"version": ACL_VERSION, "acls": ordered})


def decode_acls(data: bytes | None, path: str) -> frozenset[AccessControlEntry]:
    # Kafka reads an empty znode as no ACLs (AclEntry.fromBytes)
    if not data:
        return frozenset()
    obj = decode_object(data, path)
    acls = obj.get("acls")
    if not isinstance(acls, list):
        raise MalformedZnodeError(f"{path} field 'acls' is {shown(acls, path)}, not a list")
    try:
        return frozenset(entry_from_json(as_object(item, f"{path} ACL")) for item in acls)
    except KeyError as error:
        missing = shown(error.args[0], path)
        raise MalformedZnodeError(f"{path} has an ACL with an unknown or missing {missing}") from None


def encode_change(pattern: ResourcePattern) -> bytes:
    """A notification's data: `TYPE:name` for a literal pattern (Java's ResourceType.toString), an
    ExtendedAclChangeEvent for a prefixed one."""
    if pattern.pattern_type is PatternType.LITERAL:
        return f"{pattern.resource_type.name}:{pattern.name}".encode()
    return encode(
        {
            "version": EXTENDED_CHANGE_VERSION,
            "resourceType": pattern.resource_type.name,
            "name": pattern.name,
            "patternType": pattern.pattern_type.name,
        }
    )


def decode_change(data: bytes | None, root: str, path: str) -> ResourcePattern:
    """The resource pattern a notification under `root` names (MalformedZnodeError if none)."""
    if root == LITERAL_CHANGES:
        text = (data or b"").decode("utf-8", "replace")
        type_name, separator, name = text.partition(":")
        if not separator:
            raise MalformedZnodeError(f"{path} holds {shown(text, path)}, not ResourceType:ResourceName")
        return ResourcePattern(_resource_type(type_name, path), name, PatternType.LITERAL)
    obj = decode_object(data, path)
    version = int_field(obj, "version", path)
    if version > EXTENDED_CHANGE_VERSION:
        raise MalformedZnodeError(f"{path} has unsupported ACL change event version {version}")
    pattern_name = str_field(obj, "patternType", path).upper()
    if pattern_name not in ("LITERAL", "PREFIXED"):
        raise MalformedZnodeError(f"{path} has pattern type {shown(pattern_name, path)}")
    return ResourcePattern(
        _resource_type(str_field(obj, "resourceType", path), path),
        str_field(obj, "name", path),
        PatternType[pattern_name],
    )


def _resource_type(name: str, path: str) -> ResourceType:
    # Kafka's ResourceType.fromString: the enum name, any case ("TOPIC", "Topic")
    try:
        resource_type = ResourceType[name.upper()]
    except KeyError:
        raise MalformedZnodeError(f"{path} names resource type {shown(name, path)}") from None
    if resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        raise MalformedZnodeError(f"{path} names resource type {shown(name, path)}")
    return resource_type
