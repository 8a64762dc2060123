"""Where ACLs are kept: the interface the authorizer writes through, and the single node's file.

The interface is per resource pattern, as Kafka's ZooKeeper layout is (one znode per pattern under
``/kafka-acl/<Type>/<name>`` or ``/kafka-acl-extended/prefixed/<Type>/<prefix>``, holding that
pattern's entries); the ZooKeeper store (odradek.cluster.zk_acls) implements it with compare-and-set
writes and change notifications. A change is a function of the entries as stored now, so a store
shared by several brokers applies it to what another broker may just have written (Kafka's
AclAuthorizer.updateResourceAcls). Each entry is stored in Kafka's own JSON shape
(``{"principal","permissionType","operation","host"}``).

On a single node the ACLs live in ``<first log dir>/__odradek_acls.json``, replaced atomically on each
change; a file that cannot be read stops the start-up with one line naming it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Final, Protocol

from odradek.security.acl import (
    OPERATION_NAMES,
    PERMISSION_NAMES,
    RESOURCE_TYPE_NAMES,
    AccessControlEntry,
    PatternType,
    ResourcePattern,
)
from odradek.storage.files import atomic_write

log = logging.getLogger("odradek.security")

FILE_NAME: Final = "__odradek_acls.json"
_VERSION: Final = 1
_TYPES: Final = {name: code for code, name in RESOURCE_TYPE_NAMES.items()}
_OPERATIONS: Final = {name: code for code, name in OPERATION_NAMES.items()}
_PERMISSIONS: Final = {name: code for code, name in PERMISSION_NAMES.items()}
_PATTERN_TYPES: Final = {"literal": PatternType.LITERAL, "prefixed": PatternType.PREFIXED}

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


class FileAclStore:
    """The single node's ACLs: one JSON file in the first log dir, pattern type / type / name."""

    def __init__(self, log_dir: Path) -> None:
        self.path = log_dir / FILE_NAME
        self._acls: AclsByPattern = {}

    def load(self) -> AclsByPattern:
        try:
            doc = json.loads(self.path.read_text("utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as error:
            raise AclStoreError(f"cannot read ACLs {self.path}: {error}") from None
        if not isinstance(doc, dict) or doc.get("version") != _VERSION:
            raise AclStoreError(f"{self.path}: unsupported ACL file version")
        acls: AclsByPattern = {}
        try:
            for pattern_type, by_type in doc["acls"].items():
                for type_name, by_name in by_type.items():
                    for name, entries in by_name.items():
                        pattern = ResourcePattern(_TYPES[type_name], name, _PATTERN_TYPES[pattern_type])
                        acls[pattern] = frozenset(entry_from_json(e) for e in entries)
        except (KeyError, TypeError, AttributeError) as error:
            raise AclStoreError(f"{self.path}: malformed ACL entry: {error!r}") from None
        self._acls = dict(acls)
        return acls

    def check(self, pattern: ResourcePattern) -> None:
        pass  # a JSON file holds any name

    async def update(self, changes: Mapping[ResourcePattern, AclChange]) -> AclsByPattern:
        changed = {
            pattern: change(self._acls.get(pattern, frozenset())) for pattern, change in changes.items()
        }
        self.write(changed)
        return changed

    def write(self, changed: Mapping[ResourcePattern, frozenset[AccessControlEntry]]) -> None:
        for pattern, entries in changed.items():
            if entries:
                self._acls[pattern] = entries
            else:
                self._acls.pop(pattern, None)
        self._write_file()

    def _write_file(self) -> None:
        doc: dict[str, dict[str, dict[str, list[dict[str, str]]]]] = {}
        for pattern, entries in sorted(self._acls.items(), key=lambda item: _sort_key(item[0])):
            by_type = doc.setdefault(pattern.pattern_type.name.lower(), {})
            by_name = by_type.setdefault(RESOURCE_TYPE_NAMES[pattern.resource_type], {})
            by_name[pattern.name] = sorted(
                (entry_to_json(e) for e in entries), key=lambda e: tuple(sorted(e.items()))
            )
        payload = (json.dumps({"version": _VERSION, "acls": doc}, indent=1) + "\n").encode()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(self.path, payload, mode=0o600)


def _sort_key(pattern: ResourcePattern) -> tuple[int, int, str]:
    return (pattern.pattern_type, pattern.resource_type, pattern.name)
