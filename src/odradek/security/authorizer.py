"""The authorizer: Kafka's AclAuthorizer decisions over the ACLs of an AclStore.

A request is allowed when its principal is a super user; else, when no ACL applies to the resource at
all, when ``allow.everyone.if.no.acl.found`` is true; else when no DENY entry matches and an ALLOW
entry does. An entry matches on principal (or ``User:*``), host (or ``*``) and operation (or ALL); an
ALLOW of READ, WRITE, DELETE or ALTER also allows DESCRIBE, and ALTER_CONFIGS allows DESCRIBE_CONFIGS
(a DENY denies only what it names). The ACLs that apply to a resource are those of its literal name,
of the literal ``*`` and of every PREFIXED pattern the name starts with.

Decisions read an in-memory copy of the store's ACLs. Changes go through the store first (durable,
or in ZooKeeper for every broker) and then into the copy; in a cluster, other brokers' changes come
in through `reload` (their change notifications). One lock orders both, so the copy never goes back
to an older state of a pattern than one already applied.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Final

from odradek.security.acl import (
    WILDCARD_HOST,
    WILDCARD_PRINCIPAL,
    WILDCARD_RESOURCE,
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
from odradek.security.acl_store import AclChange, AclsByPattern, AclStore

if TYPE_CHECKING:
    from odradek.config.broker import BrokerConfig

log = logging.getLogger("odradek.security")

_Op = AclOperation
#: Operations whose ALLOW also allows another (Kafka's AclAuthorizer implied operations).
_ALLOWED_BY: Final = {
    _Op.DESCRIBE: frozenset({_Op.DESCRIBE, _Op.READ, _Op.WRITE, _Op.DELETE, _Op.ALTER, _Op.ALL}),
    _Op.DESCRIBE_CONFIGS: frozenset({_Op.DESCRIBE_CONFIGS, _Op.ALTER_CONFIGS, _Op.ALL}),
}


class AclAuthorizer:
    def __init__(
        self, store: AclStore, super_users: Iterable[str], allow_everyone_if_no_acl_found: bool
    ) -> None:
        self.store = store
        self.super_users = frozenset(super_users)
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        self._acls: AclsByPattern = store.load()
        self._updating = asyncio.Lock()
        self._literal: dict[tuple[ResourceType, str], frozenset[AccessControlEntry]] = {}
        self._prefixed: dict[ResourceType, list[tuple[str, frozenset[AccessControlEntry]]]] = {}
        self._reindex()

    # ----- decisions -------------------------------------------------------------------------------

    def authorize(
        self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType, name: str
    ) -> bool:
        if principal in self.super_users:
            return True
        entries = self._matching_entries(resource_type, name)
        if not entries:
            return self.allow_everyone_if_no_acl_found
        principals = (principal, WILDCARD_PRINCIPAL)
        hosts = (host, WILDCARD_HOST)
        denied_by = (operation, _Op.ALL)
        allowed_by = _ALLOWED_BY.get(operation) or (operation, _Op.ALL)
        allowed = False
        for entry in entries:
            if entry.principal not in principals or entry.host not in hosts:
                continue
            if entry.permission_type is AclPermissionType.DENY:
                if entry.operation in denied_by:
                    return False
            elif entry.operation in allowed_by:
                allowed = True
        return allowed

    def authorize_by_resource_type(
        self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType
    ) -> bool:
        """Whether the principal may do the operation on at least one resource of the type (Kafka's
        authorizeByResourceType, which InitProducerId asks): an ALLOW on some pattern no DENY covers."""
        if principal in self.super_users:
            return True
        principals = (principal, WILDCARD_PRINCIPAL)
        hosts = (host, WILDCARD_HOST)
        allowed_by = _ALLOWED_BY.get(operation) or (operation, _Op.ALL)
        denied_by = (operation, _Op.ALL)
        denied: list[ResourcePattern] = []
        allowed: list[ResourcePattern] = []
        any_acl = False
        for pattern, entries in self._acls.items():
            if pattern.resource_type is not resource_type:
                continue
            any_acl = True
            for entry in entries:
                if entry.principal not in principals or entry.host not in hosts:
                    continue
                if entry.permission_type is AclPermissionType.DENY and entry.operation in denied_by:
                    denied.append(pattern)
                elif entry.permission_type is AclPermissionType.ALLOW and entry.operation in allowed_by:
                    allowed.append(pattern)
        if not any_acl:
            return self.allow_everyone_if_no_acl_found
        if any(d.name == WILDCARD_RESOURCE and d.pattern_type is PatternType.LITERAL for d in denied):
            return False
        return any(not _covered(pattern, denied) for pattern in allowed)

    def authorized_operations(
        self,
        principal: str,
        host: str,
        resource_type: ResourceType,
        name: str,
        supported: Sequence[AclOperation],
    ) -> int:
        """KIP-430's bit field: the supported operations this principal may do on the resource."""
        bits = 0
        for operation in supported:
            if self.authorize(principal, host, operation, resource_type, name):
                bits |= 1 << operation
        return bits

    # ----- administration (CreateAcls, DeleteAcls, DescribeAcls) -----------------------------------

    def acls(self, acl_filter: AclBindingFilter) -> list[AclBinding]:
        return [binding for binding in self._bindings() if acl_filter.matches(binding)]

    def validate(self, binding: AclBinding) -> None:
        """Raise InvalidAclError for a binding CreateAcls must refuse (Kafka's rules, then the store's)."""
        binding.validate()
        self.store.check(binding.pattern)

    async def create_acls(self, bindings: Sequence[AclBinding]) -> None:
        """Add the (already validated) bindings and persist them before returning."""
        added: dict[ResourcePattern, set[AccessControlEntry]] = {}
        for binding in bindings:
            added.setdefault(binding.pattern, set()).add(binding.entry)
        await self._apply({pattern: _adding(frozenset(entries)) for pattern, entries in added.items()})
        for binding in bindings:
            log.info("ACL created: %s", _describe(binding))

    async def delete_acls(self, filters: Sequence[AclBindingFilter]) -> list[list[AclBinding]]:
        """Remove what each filter matches: one list per filter, as DeleteAcls answers, each binding
        under the first filter that matches it. As Kafka's AclAuthorizer.deleteAcls, the patterns
        changed are those known here and those a filter names exactly, and each one's entries are
        filtered as the store holds them now: in a cluster another broker may have just changed them,
        its notification not here yet."""
        removals: dict[ResourcePattern, dict[AccessControlEntry, int]] = {}
        async with self._updating:
            named = [pattern for f in filters for pattern in f.exact_patterns() if self._storable(pattern)]
            changes: dict[ResourcePattern, AclChange] = {}
            for pattern in dict.fromkeys([*self._acls, *named]):
                matching = [(index, f) for index, f in enumerate(filters) if f.matches_pattern(pattern)]
                if matching:
                    changes[pattern] = _removing_matched(pattern, matching, removals)
            if changes:
                self._replace(await self.store.update(changes))
        matched: list[list[AclBinding]] = [[] for _ in filters]
        for pattern, removed in removals.items():
            for entry, index in removed.items():
                binding = AclBinding(pattern, entry)
                matched[index].append(binding)
                log.info("ACL deleted: %s", _describe(binding))
        return matched

    async def reload(
        self,
        patterns: Collection[ResourcePattern],
        read: Callable[[Collection[ResourcePattern]], AclsByPattern],
    ) -> None:
        """Take the patterns' entries as `read` (a blocking read of the store, run in a thread)
        finds them now: how a broker follows the changes other brokers make."""
        async with self._updating:
            fresh = await asyncio.to_thread(read, patterns)
            self._replace(fresh)

    # ----- helpers ---------------------------------------------------------------------------------

    def _matching_entries(self, resource_type: ResourceType, name: str) -> list[AccessControlEntry]:
        literal = self._literal
        entries = [
            *literal.get((resource_type, name), ()),
            *literal.get((resource_type, WILDCARD_RESOURCE), ()),
        ]
        for prefix, prefixed in self._prefixed.get(resource_type, ()):
            if name.startswith(prefix):
                entries.extend(prefixed)
        return entries

    def _storable(self, pattern: ResourcePattern) -> bool:
        """Whether the store can hold the pattern (a filter may name one it cannot: nothing there)."""
        if not pattern.name:  # never created (CreateAcls refuses it), and no znode path
            return False
        try:
            self.store.check(pattern)
        except InvalidAclError:
            return False
        return True

    def _bindings(self) -> list[AclBinding]:
        return [AclBinding(pattern, entry) for pattern, entries in self._acls.items() for entry in entries]

    async def _apply(self, changes: Mapping[ResourcePattern, AclChange]) -> None:
        async with self._updating:
            # durable first: an ACL the client was told about survives a crash
            self._replace(await self.store.update(changes))

    def _replace(self, changed: AclsByPattern) -> None:
        for pattern, entries in changed.items():
            if entries:
                self._acls[pattern] = entries
            else:
                self._acls.pop(pattern, None)
        self._reindex()

    def _reindex(self) -> None:
        self._literal = {}
        self._prefixed = {}
        for pattern, entries in self._acls.items():
            if pattern.pattern_type is PatternType.PREFIXED:
                self._prefixed.setdefault(pattern.resource_type, []).append((pattern.name, entries))
            else:
                self._literal[(pattern.resource_type, pattern.name)] = entries


def _adding(entries: frozenset[AccessControlEntry]) -> AclChange:
    return lambda stored: stored | entries


def _removing_matched(
    pattern: ResourcePattern,
    matching: Sequence[tuple[int, AclBindingFilter]],
    removals: dict[ResourcePattern, dict[AccessControlEntry, int]],
) -> AclChange:
    """Remove the stored entries the filters match, noting each under the first filter matching it
    (in `removals`, as of the last attempt: a compare-and-set tried again calls it again)."""

    def change(stored: frozenset[AccessControlEntry]) -> frozenset[AccessControlEntry]:
        removed: dict[AccessControlEntry, int] = {}
        for entry in stored:
            index = next((index for index, f in matching if f.matches_entry(entry)), None)
            if index is not None:
                removed[entry] = index
        removals[pattern] = removed
        return stored - removed.keys()

    return change


def _covered(pattern: ResourcePattern, denied: list[ResourcePattern]) -> bool:
    """Whether a DENY pattern takes away everything an ALLOW pattern gives."""
    for deny in denied:
        if deny.pattern_type is PatternType.PREFIXED and pattern.name.startswith(deny.name):
            return True
        if deny.pattern_type is pattern.pattern_type and deny.name == pattern.name:
            return True
    return False


def parse_super_users(value: str | None) -> list[str]:
    """``super.users``: principals separated by semicolons (``User:alice;User:bob``)."""
    return [user.strip() for user in (value or "").split(";") if user.strip()]


def _describe(binding: AclBinding) -> str:
    pattern: ResourcePattern = binding.pattern
    entry = binding.entry
    return (
        f"{entry.permission_type.name} {entry.principal} {entry.operation.name} from {entry.host} "
        f"on {pattern.resource_type.name}:{pattern.pattern_type.name}:{pattern.name}"
    )


def authorizer_from_config(config: BrokerConfig, store: AclStore) -> AclAuthorizer | None:
    """The broker's authorizer, or None when ``authorizer.class.name`` is empty (everything allowed;
    the catalog refuses any class name but Kafka's ACL authorizers). Its ACLs are `store`'s (the log
    dir's, or a cluster's ZooKeeper), read here."""
    if not config.authorizer_class_name:
        return None
    return AclAuthorizer(
        store,
        parse_super_users(config.super_users),
        config.allow_everyone_if_no_acl_found,
    )
