"""Authorized operations (KIP-430): which operations a resource type supports (Kafka's
AclEntry.supportedOperations), and the bit field answered without an authorizer: all of them.

With an authorizer, handlers/_common/authorization.py keeps only those the principal may do. The answer is a
bit field of AclOperation codes; INT32_MIN means "not asked for" on the wire.
"""

from __future__ import annotations

from typing import Final

from odradek.security.acl import AclOperation


def operations_bits(*operations: AclOperation) -> int:
    return sum(1 << operation for operation in set(operations))


_Op = AclOperation
SUPPORTED_TOPIC_OPERATIONS: Final = (
    _Op.READ,
    _Op.WRITE,
    _Op.CREATE,
    _Op.DELETE,
    _Op.ALTER,
    _Op.DESCRIBE,
    _Op.DESCRIBE_CONFIGS,
    _Op.ALTER_CONFIGS,
)
#: No WRITE and no DELETE: nothing writes to or deletes the cluster resource (librdkafka checks the 7).
SUPPORTED_CLUSTER_OPERATIONS: Final = (
    _Op.CREATE,
    _Op.ALTER,
    _Op.DESCRIBE,
    _Op.CLUSTER_ACTION,
    _Op.DESCRIBE_CONFIGS,
    _Op.ALTER_CONFIGS,
    _Op.IDEMPOTENT_WRITE,
)
SUPPORTED_GROUP_OPERATIONS: Final = (_Op.READ, _Op.DELETE, _Op.DESCRIBE)
TOPIC_OPERATIONS: Final = operations_bits(*SUPPORTED_TOPIC_OPERATIONS)
CLUSTER_OPERATIONS: Final = operations_bits(*SUPPORTED_CLUSTER_OPERATIONS)
GROUP_OPERATIONS: Final = operations_bits(*SUPPORTED_GROUP_OPERATIONS)
#: The wire value of an authorized-operations field the request did not ask for.
OMITTED: Final = -2147483648
