"""Config entities of one type that Kafka 3.9's ZooKeeper brokers never write (client-metrics
subscriptions, GROUP configs), each kind kept by a local store and a ZooKeeper store (group_configs.py,
client_metrics.py) built on the two generic ones here.

`LocalEntityConfigs`: a single node's, in one file of its first log dir, each entity's configs as
strings (`{"version": 1, "<entries>": {"<name>": {...}}}`), the file replaced atomically (written,
fsynced, renamed) on every change from a worker thread, one change at a time (IncrementalAlterConfigs'
read, change and write of one entity happen as one step); what is in force changes once it is written.
Read at start: a file that cannot be read stops start-up (`EntityConfigStoreError`).

`ZkEntityConfigs`: a ZooKeeper cluster's, kept as Kafka keeps its other entity configs:

```
/config/<type>/<name>               {"version":1,"config":{...}}
/config/changes/config_change_<n>   {"version":2,"entity_path":"<type>/<name>"}
```
Names are URL-encoded as Kafka's Sanitizer does. A change reads the znode, applies the change and
writes it back by compare-and-set on its version (tried again when another broker wrote it meanwhile),
deletes it once it holds nothing, then notifies; every broker (this one too) re-reads the entities its
notifications name. A Kafka 3.9 broker of a mixed cluster logs such a notification as one of an unknown
entity type and carries on. ZooKeeper calls block: they run in worker threads.

Both apply what they read on the loop, by the subclass's `_apply`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import Final

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from odradek.cluster.zookeeper import paths
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.cluster.zookeeper.coalesced import CoalescedPasses
from odradek.cluster.zookeeper.config_znodes import EntityConfigZnode
from odradek.cluster.zookeeper.configs import config_changes_after, create_config_change_notification
from odradek.cluster.zookeeper.errors import ZooKeeperError
from odradek.cluster.zookeeper.znode_json import MalformedZnodeError
from odradek.security.quota_entities import desanitize, sanitize
from odradek.storage.files import atomic_write

log = logging.getLogger(__name__)

MAX_UPDATE_RETRIES: Final = 10

_VERSION: Final = 1

#: An entity's configs as a change leaves them (raises to refuse it).
EntityConfigChange = Callable[[dict[str, str]], dict[str, str]]


class EntityConfigStoreError(Exception):
    """A single node's entity config file cannot be read (start-up stops, naming it)."""


class LocalEntityConfigs(ABC):
    #: The file in the first log dir, and the JSON object in it that holds each entity's configs.
    file_name: str = ""
    entries: str = ""

    def __init__(self, log_dir: Path) -> None:
        self.path = log_dir / self.file_name
        self._stored: dict[str, dict[str, str]] = {}
        self._writing = threading.Lock()
        self._altering = asyncio.Lock()

    @abstractmethod
    def _apply(self, name: str, configs: dict[str, str]) -> None:
        """Make an entity's configs (empty: none) the ones in force here."""

    def load(self) -> None:
        """Read the file (start-up work, before the listeners serve) and apply every entity in it."""
        try:
            doc = json.loads(self.path.read_text("utf-8"))
        except FileNotFoundError:
            return
        except (OSError, ValueError) as error:
            raise EntityConfigStoreError(f"cannot read {self.path}: {error}") from None
        try:
            if doc["version"] != _VERSION:
                raise EntityConfigStoreError(f"{self.path}: unsupported version {doc['version']!r}")
            stored = {
                str(name): {str(k): str(v) for k, v in configs.items()}
                for name, configs in doc[self.entries].items()
            }
        except (KeyError, TypeError, AttributeError) as error:
            raise EntityConfigStoreError(f"{self.path}: malformed: {error}") from None
        self._stored = stored
        for name, configs in stored.items():
            self._apply(name, dict(configs))

    async def alter(self, name: str, change: EntityConfigChange, *, validate_only: bool) -> None:
        async with self._altering:  # a read-modify-write at a time: no change is lost to another
            configs = change(dict(self._stored.get(name, {})))
            if validate_only:
                return
            self._stored = await asyncio.to_thread(self._write, name, configs)
            self._apply(name, configs)

    def _write(self, name: str, configs: dict[str, str]) -> dict[str, dict[str, str]]:
        """In a worker thread: the file with the entity's configs changed; what it now holds."""
        with self._writing:
            stored = dict(self._stored)
            if configs:
                stored[name] = configs
            else:
                stored.pop(name, None)
            payload = json.dumps({"version": _VERSION, self.entries: stored}, indent=1, sort_keys=True)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(self.path, (payload + "\n").encode(), mode=0o600)
            return stored


class ZkEntityConfigs(ABC):
    #: The entity type: its znode under /config and the first part of its notifications' paths.
    config_type: str = ""
    #: What an entity is, in log lines ("client metrics subscription"), and what its changes are.
    what: str = ""
    changes: str = ""

    def __init__(self, zk: ZooKeeperClient) -> None:
        self.zk = zk
        #: The newest /config/changes notification handled (-1: none yet).
        self.sequence = -1
        self._following = CoalescedPasses(self._read_changes, f"{self.changes} changes")
        self._altering = asyncio.Lock()

    @abstractmethod
    def _apply(self, name: str, configs: dict[str, str]) -> None:
        """Make an entity's configs (empty: none) the ones in force here."""

    async def start(self) -> None:
        """Read every entity of the type, then follow the change notifications."""
        loop = asyncio.get_running_loop()
        self.sequence, found = await asyncio.to_thread(self._read_everything)
        for name, configs in found.items():
            self._apply(name, configs)
        self.zk.watch_children(paths.CONFIG_CHANGES, lambda _: self._following.trigger(), loop)

    async def alter(self, name: str, change: EntityConfigChange, *, validate_only: bool) -> None:
        async with self._altering:
            configs = await asyncio.to_thread(self._alter, name, change, validate_only)
        if configs is not None:
            self._apply(name, configs)  # at once here; the other brokers by the notification

    # ----- in worker threads --------------------------------------------------------------------

    def _path(self, name: str) -> str:
        return paths.config_entity(self.config_type, sanitize(name))

    def _alter(self, name: str, change: EntityConfigChange, validate_only: bool) -> dict[str, str] | None:
        path = self._path(name)
        for _ in range(MAX_UPDATE_RETRIES + 1):
            found = self.zk.read(path)
            current = {} if found is None else dict(EntityConfigZnode.parse(found[0], path).config)
            configs = change(current)
            if validate_only:
                return None
            try:
                if not configs:
                    if found is not None:
                        self.zk.write(self.zk.kazoo.delete_async, path, found[1].version)
                elif found is None:
                    self.zk.create_persistent_path(
                        path, EntityConfigZnode(configs).serialize(), exist_ok=False
                    )
                else:
                    data = EntityConfigZnode(configs).serialize()
                    self.zk.write(self.zk.kazoo.set_async, path, data, found[1].version)
            except (BadVersionError, NodeExistsError, NoNodeError):
                time.sleep(random.uniform(0.05, 0.1))
                continue
            create_config_change_notification(self.zk, f"{self.config_type}/{sanitize(name)}")
            return configs
        raise ZooKeeperError(f"{path} changed too often to be updated ({MAX_UPDATE_RETRIES} retries)")

    def _read_everything(self) -> tuple[int, dict[str, dict[str, str]]]:
        numbers = [
            paths.config_change_sequence(child)
            for child in self.zk.children(paths.CONFIG_CHANGES)
            if child.startswith(paths.CONFIG_CHANGE_PREFIX)
        ]
        found = {}
        for child in self.zk.children(f"{paths.CONFIG}/{self.config_type}"):
            name = str(desanitize(child))
            found[name] = self._read(name)
        return max(numbers, default=-1), found

    def _read(self, name: str) -> dict[str, str]:
        path = self._path(name)
        try:
            found = self.zk.read(path)
            return {} if found is None else dict(EntityConfigZnode.parse(found[0], path).config)
        except MalformedZnodeError as error:  # written by another tool: not applied
            log.error("%s %r not applied: %s", self.what, name, error)
            return {}

    def _changed(self) -> list[tuple[str, dict[str, str]]]:
        names = []
        for sequence, change in config_changes_after(self.zk, self.sequence):
            self.sequence = max(self.sequence, sequence)
            kind, _, sanitized = change.entity_path.partition("/")
            if kind == self.config_type and sanitized:
                names.append(str(desanitize(sanitized)))
        return [(name, self._read(name)) for name in dict.fromkeys(names)]

    # ----- on the loop ----------------------------------------------------------------------------

    async def _read_changes(self) -> None:
        for name, configs in await asyncio.to_thread(self._changed):
            self._apply(name, configs)
