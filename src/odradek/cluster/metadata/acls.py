"""Where ACLs are kept (security.acl_store.AclStore): a single node's file, or Kafka 3.9's
AclAuthorizer storage in ZooKeeper, shared by every broker.

On a single node the ACLs live in ``<first log dir>/__odradek_acls.json`` (pattern type / type / name,
each entry in Kafka's JSON shape), replaced atomically on each change from a worker thread, one change
at a time (an fsync on the event loop held every connection of the broker); a file that cannot be read
stops the start-up with one line naming it.

`ZkAclStore` keeps one znode per resource pattern (cluster.zookeeper.acl_znodes), changed by
compare-and-set on the znode's version and tried again on a conflict with what is stored then
(AclAuthorizer.updateResourceAcls), each change followed by a sequential notification naming the
pattern. `AclChangeListener` is every broker's side (ZkNodeChangeNotificationListener): on a new
notification it re-reads the named patterns into its authorizer, and deletes notifications older than
15 minutes, as Kafka does. DescribeAcls answers from the authorizer's copy, as Kafka's (its aclCache).

Every ZooKeeper call blocks: the store's reads run at start-up or in worker threads.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import threading
import time
from collections.abc import Callable, Collection, Coroutine, Mapping
from pathlib import Path
from typing import Any, Final

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from odradek.cluster.zookeeper.acl_znodes import (
    CHANGE_PREFIX,
    EXTENDED_CHANGES,
    LITERAL_CHANGES,
    PATTERN_ROOTS,
    acl_paths,
    change_root,
    check_node_name,
    decode_acls,
    decode_change,
    encode_acls,
    encode_change,
    resource_path,
    resource_type_from_path_name,
)
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.cluster.zookeeper.errors import ZooKeeperError
from odradek.cluster.zookeeper.notifications import CHANGE_EXPIRATION_MS, purge_expired_notifications
from odradek.cluster.zookeeper.znode_json import MalformedZnodeError
from odradek.security.acl import RESOURCE_TYPE_NAMES, AccessControlEntry, PatternType, ResourcePattern
from odradek.security.acl_store import (
    AclChange,
    AclsByPattern,
    AclStoreError,
    entry_from_json,
    entry_to_json,
)
from odradek.security.authorizer import AclAuthorizer
from odradek.storage.files import atomic_write

log = logging.getLogger(__name__)

FILE_NAME: Final = "__odradek_acls.json"
_VERSION: Final = 1
_TYPES: Final = {name: code for code, name in RESOURCE_TYPE_NAMES.items()}
_PATTERN_TYPES: Final = {"literal": PatternType.LITERAL, "prefixed": PatternType.PREFIXED}
#: Kafka's AclAuthorizer: attempts of one compare-and-set update before giving up.
MAX_UPDATE_RETRIES: Final = 10


class LocalAclStore:
    """The single node's ACLs: one JSON file in the first log dir, pattern type / type / name."""

    def __init__(self, log_dir: Path) -> None:
        self.path = log_dir / FILE_NAME
        self._acls: AclsByPattern = {}
        self._writing = threading.Lock()
        self._turn = asyncio.Lock()

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
        async with self._turn:
            changed = {
                pattern: change(self._acls.get(pattern, frozenset())) for pattern, change in changes.items()
            }
            await asyncio.to_thread(self.write, changed)
        return changed

    def write(self, changed: Mapping[ResourcePattern, frozenset[AccessControlEntry]]) -> None:
        """Write the file with the patterns' new entries (blocking; one thread at a time)."""
        with self._writing:
            # a new map, swapped in once written: the file and the map change together
            acls = dict(self._acls)
            for pattern, entries in changed.items():
                if entries:
                    acls[pattern] = entries
                else:
                    acls.pop(pattern, None)
            self._write_file(acls)
            self._acls = acls

    def _write_file(self, acls: AclsByPattern) -> None:
        doc: dict[str, dict[str, dict[str, list[dict[str, str]]]]] = {}
        for pattern, entries in sorted(acls.items(), key=lambda item: _sort_key(item[0])):
            by_type = doc.setdefault(pattern.pattern_type.name.lower(), {})
            by_name = by_type.setdefault(RESOURCE_TYPE_NAMES[pattern.resource_type], {})
            by_name[pattern.name] = sorted(
                (entry_to_json(e) for e in entries), key=lambda e: tuple(sorted(e.items()))
            )
        payload = (json.dumps({"version": _VERSION, "acls": doc}, indent=1) + "\n").encode()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(self.path, payload, mode=0o600)


class ZkAclStore:
    def __init__(self, zk: ZooKeeperClient) -> None:
        self.zk = zk

    def load(self) -> AclsByPattern:
        """Every pattern's ACLs (blocking; at start-up), after creating the ACL roots as Kafka does."""
        try:
            return self._load()
        except MalformedZnodeError as error:
            raise AclStoreError(f"cannot read ACLs from ZooKeeper: {error}") from None

    def _load(self) -> AclsByPattern:
        for path in acl_paths():
            self.zk.create_persistent_path(path)
        acls: AclsByPattern = {}
        for pattern_type, root in PATTERN_ROOTS.items():
            for type_name in self.zk.children(root):
                resource_type = resource_type_from_path_name(type_name)
                if resource_type is None:
                    log.warning("ACLs of unknown resource type %s/%s skipped", root, type_name)
                    continue
                for name in self.zk.children(f"{root}/{type_name}"):
                    pattern = ResourcePattern(resource_type, name, pattern_type)
                    entries = self._read(pattern)[0]
                    if entries:
                        acls[pattern] = entries
        return acls

    def check(self, pattern: ResourcePattern) -> None:
        check_node_name(pattern.name)

    async def update(self, changes: Mapping[ResourcePattern, AclChange]) -> AclsByPattern:
        return await asyncio.to_thread(self._update_all, dict(changes))

    def read(self, patterns: Collection[ResourcePattern]) -> AclsByPattern:
        """The patterns' entries as stored now (blocking; an empty set for a pattern that is gone)."""
        return {pattern: self._read(pattern)[0] for pattern in patterns}

    # ----- helpers ---------------------------------------------------------------------------------

    def _update_all(self, changes: dict[ResourcePattern, AclChange]) -> AclsByPattern:
        try:
            return {pattern: self._update(pattern, change) for pattern, change in changes.items()}
        except (ZooKeeperError, MalformedZnodeError) as error:
            raise AclStoreError(f"ACLs not changed in ZooKeeper: {error}") from None

    def _update(self, pattern: ResourcePattern, change: AclChange) -> frozenset[AccessControlEntry]:
        path = resource_path(pattern)
        for _ in range(MAX_UPDATE_RETRIES + 1):
            stored, version = self._read(pattern)
            wanted = change(stored)
            if wanted == stored and (wanted or version is None):
                return wanted  # nothing to write, nothing to notify
            try:
                if not wanted:
                    self.zk.write(self.zk.kazoo.delete_async, path, version)
                elif version is None:
                    self.zk.create_persistent_path(path, encode_acls(wanted), exist_ok=False)
                else:
                    self.zk.write(self.zk.kazoo.set_async, path, encode_acls(wanted), version)
            except (BadVersionError, NodeExistsError, NoNodeError):
                # another broker changed the pattern since it was read: apply the change to that
                time.sleep(random.uniform(0.05, 0.1))
                continue
            self.zk.write(
                self.zk.kazoo.create_async,
                f"{change_root(pattern.pattern_type)}/{CHANGE_PREFIX}",
                encode_change(pattern),
                sequence=True,
            )
            return wanted
        raise AclStoreError(f"Failed to update ACLs for {path} after {MAX_UPDATE_RETRIES} retries")

    def _read(self, pattern: ResourcePattern) -> tuple[frozenset[AccessControlEntry], int | None]:
        path = resource_path(pattern)
        found = self.zk.read(path)
        if found is None:
            return frozenset(), None
        return decode_acls(found[0], path), found[1].version


class AclChangeListener:
    """Follows /kafka-acl-changes and /kafka-acl-extended-changes into this broker's authorizer."""

    def __init__(
        self,
        zk: ZooKeeperClient,
        store: ZkAclStore,
        authorizer: AclAuthorizer,
        change_expiration_ms: int = CHANGE_EXPIRATION_MS,
    ) -> None:
        self.zk = zk
        self.store = store
        self.authorizer = authorizer
        self.change_expiration_ms = change_expiration_ms
        #: The newest notification handled under each root (-1: none; all are read at start, as Kafka).
        self.sequence = {LITERAL_CHANGES: -1, EXTENDED_CHANGES: -1}
        self._processing = {root: asyncio.Lock() for root in self.sequence}
        self._tasks: set[asyncio.Task[None]] = set()

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        for root in self.sequence:
            self.zk.watch_children(root, self._on_change(root), loop)

    def _on_change(self, root: str) -> Callable[[list[str]], None]:
        def changed(_names: list[str]) -> None:
            self._spawn(self._process(root))

        return changed

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _process(self, root: str) -> None:
        async with self._processing[root]:
            try:
                changes, newest, names = await asyncio.to_thread(
                    self._changes_after, root, self.sequence[root]
                )
                self.sequence[root] = max(self.sequence[root], newest)
                if changes:
                    patterns = set(changes.values())
                    await self.authorizer.reload(patterns, self.store.read)
                    log.info("ACLs reloaded after a change of %s", ", ".join(sorted(map(_show, patterns))))
                if names:
                    await asyncio.to_thread(
                        purge_expired_notifications, self.zk, root, names, self.change_expiration_ms
                    )
            except (ZooKeeperError, MalformedZnodeError) as error:
                log.error("ACL change notifications under %s not processed: %s", root, error)

    def _changes_after(self, root: str, sequence: int) -> tuple[dict[int, ResourcePattern], int, list[str]]:
        """The patterns named by notifications after `sequence`, the newest number seen, all names."""
        changes: dict[int, ResourcePattern] = {}
        newest = sequence
        names = [name for name in self.zk.children(root) if name.startswith(CHANGE_PREFIX)]
        for name in names:
            number = int(name[len(CHANGE_PREFIX) :])
            if number <= sequence:
                continue
            newest = max(newest, number)
            path = f"{root}/{name}"
            found = self.zk.read(path)
            if found is None:
                continue  # purged meanwhile: its pattern's znode is read by whoever comes next
            try:
                changes[number] = decode_change(found[0], root, path)
            except MalformedZnodeError as error:  # as Kafka: logged, and the others still apply
                log.error("ACL change notification skipped: %s", error)
        return changes, newest, names


def _show(pattern: ResourcePattern) -> str:
    return f"{pattern.resource_type.name}:{pattern.pattern_type.name}:{pattern.name}"


def _sort_key(pattern: ResourcePattern) -> tuple[int, int, str]:
    return (pattern.pattern_type, pattern.resource_type, pattern.name)
