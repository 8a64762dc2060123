"""Where ACLs are kept: the interface the authorizer writes through, and an entry's JSON shape.

The interface is per resource pattern, as Kafka's ZooKeeper layout is (one znode per pattern under
``/kafka-acl/<Type>/<name>`` or ``/kafka-acl-extended/prefixed/<Type>/<prefix>``, holding that
pattern's entries). A change is a function of the entries as stored now, so a store shared by several
brokers applies it to what another broker may just have written (Kafka's
AclAuthorizer.updateResourceAcls). Each entry is stored in Kafka's own JSON shape
(``{"principal","permissionType","operation","host"}``). The implementations, the single node's file
and ZooKeeper's znodes, are in odradek.cluster.metadata.acls.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Final, Protocol

from odradek.security.acl import (
    OPERATION_NAMES,
    PERMISSION_NAMES,
    AccessControlEntry,
    ResourcePattern,
)

log = logging.getLogger("odradek.security")

_OPERATIONS: Final = {name: code for code, name in OPERATION_NAMES.items()}
_PERMISSIONS: Final = {name: code for code, name in PERMISSION_NAMES.items()}

AclsByPattern = dict[ResourcePattern, frozenset[AccessControlEntry]]


class AclStoreError(Exception):
    pass


#: A change of one pattern's entries: the stored entries in, the entries to store out.
AclChange = Callable[[frozenset[AccessControlEntry]], frozenset[AccessControlEntry]]


class AclStore(Protocol):
    """Durable ACLs, one entry set per resource pattern."""

    def load(self) -> AclsByPattern: ...

    def check(self, pattern: ResourcePattern) -> None:
        """Raise InvalidAclError for a pattern this store cannot hold."""
        ...

    async def update(self, changes: Mapping[ResourcePattern, AclChange]) -> AclsByPattern:
        """Apply each change to its pattern's stored entries and persist the result before returning;
        the new entry set of every changed pattern (an empty set: the pattern is gone)."""
        ...


def entry_to_json(entry: AccessControlEntry) -> dict[str, str]:
    return {
        "principal": entry.principal,
        "permissionType": PERMISSION_NAMES[entry.permission_type],
        "operation": OPERATION_NAMES[entry.operation],
        "host": entry.host,
    }


def entry_from_json(doc: Mapping[str, object]) -> AccessControlEntry:
    return AccessControlEntry(
        str(doc["principal"]),
        str(doc["host"]),
        _OPERATIONS[str(doc["operation"])],
        _PERMISSIONS[str(doc["permissionType"])],
    )
