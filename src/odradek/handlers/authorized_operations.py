"""Authorized operations (KIP-430) as Kafka answers them without an authorizer: every operation the
resource type supports, and nothing it does not (Kafka's AclEntry.supportedOperations).

The answer is a bit field of AclOperation codes; INT32_MIN means "not asked for" on the wire.
"""

from __future__ import annotations

import enum
from typing import Final


class AclOperation(enum.IntEnum):
    """Kafka's AclOperation codes (org.apache.kafka.common.acl.AclOperation)."""

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


def operations_bits(*operations: AclOperation) -> int:
    return sum(1 << operation for operation in set(operations))


_Op = AclOperation
TOPIC_OPERATIONS: Final = operations_bits(
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
CLUSTER_OPERATIONS: Final = operations_bits(
    _Op.CREATE,
    _Op.ALTER,
    _Op.DESCRIBE,
    _Op.CLUSTER_ACTION,
    _Op.DESCRIBE_CONFIGS,
    _Op.ALTER_CONFIGS,
    _Op.IDEMPOTENT_WRITE,
)
GROUP_OPERATIONS: Final = operations_bits(_Op.READ, _Op.DELETE, _Op.DESCRIBE)
#: The wire value of an authorized-operations field the request did not ask for.
OMITTED: Final = -2147483648
