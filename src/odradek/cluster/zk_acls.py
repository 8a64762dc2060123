"""ACLs in a ZooKeeper cluster: Kafka 3.9's AclAuthorizer storage, shared by every broker.

`ZkAclStore` is the authorizer's store (security.acl_store.AclStore) on ZooKeeper: one znode per
resource pattern (cluster.zookeeper.acl_znodes), changed by compare-and-set on the znode's version and
tried again on a conflict with what is stored then (AclAuthorizer.updateResourceAcls), each change
followed by a sequential notification naming the pattern. `AclChangeListener` is every broker's side
(ZkNodeChangeNotificationListener): on a new notification it re-reads the named patterns into its
authorizer, and deletes notifications older than 15 minutes, as Kafka does.

Every ZooKeeper call blocks: the store's reads run at start-up or in worker threads.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Callable, Collection, Coroutine, Mapping
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
from odradek.cluster.zookeeper.znode_json import MalformedZnodeError
from odradek.security.acl import AccessControlEntry, ResourcePattern
from odradek.security.acl_store import AclChange, AclsByPattern, AclStoreError
from odradek.security.authorizer import AclAuthorizer

log = logging.getLogger(__name__)

#: Kafka's AclAuthorizer: attempts of one compare-and-set update before giving up.
MAX_UPDATE_RETRIES: Final = 10
#: Kafka's ZkNodeChangeNotificationListener.changeExpirationMs: notifications older are deleted.
CHANGE_EXPIRATION_MS: Final = 15 * 60 * 1000


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
                    await asyncio.to_thread(self._purge, root, names)
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

    def _purge(self, root: str, names: list[str]) -> None:
        now_ms = time.time() * 1000
        for name in names:
            path = f"{root}/{name}"
            found = self.zk.read(path)
            if found is not None and now_ms - found[1].ctime > self.change_expiration_ms:
                with contextlib.suppress(NoNodeError):  # another broker purged it first
                    self.zk.write(self.zk.kazoo.delete_async, path)


def _show(pattern: ResourcePattern) -> str:
    return f"{pattern.resource_type.name}:{pattern.pattern_type.name}:{pattern.name}"
