"""The resources the config APIs name (Kafka's ConfigResource): their types, how a broker's and a
group's names are read and checked, how a resource is named in the log."""

from __future__ import annotations

import re
from enum import IntEnum

from odradek.protocol.error_codes import ErrorCode, KafkaError

_BROKER_ID = re.compile(r"[+-]?[0-9]+")


class ResourceType(IntEnum):
    """Kafka's ConfigResource.Type ids."""

    UNKNOWN = 0
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16
    GROUP = 32


def named_resource(resource_type: int, resource_name: str) -> str:
    """A resource as the log names it, e.g. TOPIC 'orders'."""
    try:
        kind = ResourceType(resource_type).name
    except ValueError:
        kind = f"resource type {resource_type}"
    return f"{kind} {resource_name!r}"


def parse_broker_id(name: str, complaint: str) -> int:
    """A broker id as Java's Integer.parseInt reads it (leading zeros and all; more than ten digits
    never fit, and Python's int() refuses over 4300 with an exception of its own)."""
    digits = name.lstrip("+-").lstrip("0") or "0"
    if not _BROKER_ID.fullmatch(name) or len(digits) > 10:
        raise KafkaError(ErrorCode.INVALID_REQUEST, complaint + name)
    number = -int(digits) if name.startswith("-") else int(digits)
    if not -(2**31) <= number < 2**31:
        raise KafkaError(ErrorCode.INVALID_REQUEST, complaint + name)
    return number


def type_name(resource_type: int) -> str:
    try:
        return ResourceType(resource_type).name
    except ValueError:
        return ResourceType.UNKNOWN.name


#: The longest group id whose configs are kept: ZooKeeper's znode path (and a whole request to it)
#: must stay far under its packet limit, or the broker's session is lost.
_MAX_GROUP_NAME_BYTES = 32_767


def check_group_name(name: str) -> None:
    if not name:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Group name must not be empty.")
    if len(name.encode()) > _MAX_GROUP_NAME_BYTES:
        raise KafkaError(
            ErrorCode.INVALID_REQUEST, f"Group name is longer than {_MAX_GROUP_NAME_BYTES} bytes."
        )
