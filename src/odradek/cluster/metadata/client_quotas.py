"""Where client quotas are kept (security.client_quotas.QuotaStore): a single node's file, or
ZooKeeper's /config/users, /config/clients and /config/ips as Kafka 3.9 keeps them.

On a single node they live in `<first log dir>/__odradek_client_quotas.json`: each entity with its
quota keys as Kafka writes them in ZooKeeper (strings: whole numbers for the byte rates), the file
replaced atomically (written, fsynced, renamed) on every change. Writes go one at a time, waiting their
turn on the event loop (each waiting in a worker thread held it, and enough of them held every one the
broker has); each writes everything acknowledged before it, so the last file renamed into place is the
newest.

In a ZooKeeper cluster:
```
/config/users/<user>                    {"version":1,"config":{"producer_byte_rate":"1024"}}
/config/users/<user>/clients/<client>   (the same shape; <default> for either default)
/config/clients/<client>
/config/ips/<ip>                        {"version":1,"config":{"connection_creation_rate":"10"}}
/config/changes/config_change_<n>       {"version":2,"entity_path":"users/<user>/clients/<client>"}
```
Names are sanitized as Kafka's Sanitizer does (URL-encoded). A change rewrites the entity's znode
keeping every key that is not a quota (/config/users/<user> also holds the user's SCRAM credentials),
by compare-and-set on its version (Kafka's last writer wins: a credential another broker wrote between
its read and its write is lost), removing it once it holds nothing (as Kafka), then notifies. The admin
APIs read ZooKeeper itself (Kafka 3.9's ZkAdminManager): another broker's change is seen before its
notification reaches this one. Every broker (this one too) re-reads the entities its notifications
name into the quotas in force (`ZkQuotaChangeFollower`, as Kafka's ZkConfigManager with its
UserConfigHandler and ClientIdConfigHandler); all quotas are read at start.
ZooKeeper calls block: they run in worker threads, and what they read is applied on the loop.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from kazoo.exceptions import BadVersionError, NodeExistsError

from odradek.cluster.zookeeper import paths
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.cluster.zookeeper.coalesced import CoalescedPasses
from odradek.cluster.zookeeper.config_znodes import EntityConfigZnode
from odradek.cluster.zookeeper.configs import (
    config_changes_after,
    create_config_change_notification,
    entity_config,
    remove_empty_entity,
)
from odradek.cluster.zookeeper.errors import ZooKeeperError
from odradek.cluster.zookeeper.znode_json import MalformedZnodeError
from odradek.security.client_quotas import ClientQuotas
from odradek.security.quota_entities import (
    DEFAULT,
    QuotaEntity,
    QuotaRequestError,
    config_string,
    desanitize,
    entity_from_wire,
    entity_from_zk_path,
    quota_values,
    zk_entity_path,
)
from odradek.storage.files import atomic_write

log = logging.getLogger(__name__)

FILE_NAME: Final = "__odradek_client_quotas.json"
_VERSION: Final = 1
_CLIENTS: Final = "clients"
#: Attempts of one compare-and-set of an entity's config before giving up.
MAX_UPDATE_RETRIES: Final = 10

QuotasByEntity = dict[QuotaEntity, dict[str, float]]


class QuotaStoreError(Exception):
    pass


class LocalQuotaStore:
    """A single node's client quotas: one file in the first log dir."""

    def __init__(self, log_dir: Path) -> None:
        self.path = log_dir / FILE_NAME
        self._entities: QuotasByEntity = {}
        self._writing = threading.Lock()
        self._turn = asyncio.Lock()

    def load(self) -> QuotasByEntity:
        """Every entity's quotas in the file (blocking; at start-up). QuotaStoreError: unreadable."""
        try:
            doc = json.loads(self.path.read_text("utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as error:
            raise QuotaStoreError(f"cannot read client quotas {self.path}: {error}") from None
        if not isinstance(doc, dict) or doc.get("version") != _VERSION:
            raise QuotaStoreError(f"{self.path}: unsupported client quota file version")
        entities: QuotasByEntity = {}
        try:
            for item in doc["quotas"]:
                entity = entity_from_wire([(str(kind), name) for kind, name in item["entity"]])
                entities[entity] = quota_values(entity, item["config"], str(self.path))
        except (KeyError, TypeError, ValueError, QuotaRequestError) as error:
            raise QuotaStoreError(f"{self.path}: malformed client quota entry: {error}") from None
        self._entities = entities
        return dict(entities)

    async def write(self, entity: QuotaEntity, values: Mapping[str, float]) -> None:
        async with self._turn:
            await asyncio.to_thread(self.write_file, entity, values)

    async def read(self, entity: QuotaEntity) -> Mapping[str, float]:
        return self._entities.get(entity, {})

    async def read_all(self) -> Mapping[QuotaEntity, Mapping[str, float]]:
        return self._entities

    def write_file(self, entity: QuotaEntity, values: Mapping[str, float]) -> None:
        """Write the file with the entity's new quotas (blocking; one thread at a time)."""
        with self._writing:
            # a new map, swapped in once written: readers on the loop never see one being changed
            entities = dict(self._entities)
            if values:
                entities[entity] = dict(values)
            else:
                entities.pop(entity, None)
            quotas = [
                {
                    "entity": entity.parts(),
                    "config": {key: config_string(key, value) for key, value in sorted(values.items())},
                }
                for entity, values in sorted(entities.items(), key=lambda item: _order(item[0]))
            ]
            payload = (json.dumps({"version": _VERSION, "quotas": quotas}, indent=1) + "\n").encode()
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(self.path, payload, mode=0o600)
            self._entities = entities


class ZkQuotaStore:
    """A ZooKeeper cluster's client quotas, shared by every broker."""

    def __init__(self, zk: ZooKeeperClient) -> None:
        self.zk = zk

    async def write(self, entity: QuotaEntity, values: Mapping[str, float]) -> None:
        await asyncio.to_thread(self._write, entity, values)

    async def read(self, entity: QuotaEntity) -> Mapping[str, float]:
        return await asyncio.to_thread(self.entity_quotas, entity)

    async def read_all(self) -> Mapping[QuotaEntity, Mapping[str, float]]:
        return await asyncio.to_thread(self.all_quotas)

    # ----- in worker threads --------------------------------------------------------------------

    def all_quotas(self) -> QuotasByEntity:
        found: QuotasByEntity = {}
        for user in self.zk.children(f"{paths.CONFIG}/{paths.USER_CONFIG}"):
            self._read_into(found, QuotaEntity(user=desanitize(user)))
            user_path = f"{paths.CONFIG}/{paths.USER_CONFIG}/{user}/{_CLIENTS}"
            for client in self.zk.children(user_path):
                self._read_into(found, QuotaEntity(desanitize(user), desanitize(client)))
        for client in self.zk.children(f"{paths.CONFIG}/{paths.CLIENT_CONFIG}"):
            self._read_into(found, QuotaEntity(client_id=desanitize(client)))
        for ip in self.zk.children(f"{paths.CONFIG}/{paths.IP_CONFIG}"):
            self._read_into(found, QuotaEntity(ip=desanitize(ip)))
        return found

    def entity_quotas(self, entity: QuotaEntity) -> dict[str, float]:
        config_type, name = zk_entity_path(entity)
        where = f"/config/{config_type}/{name}"
        try:
            return quota_values(entity, entity_config(self.zk, config_type, name), where)
        except MalformedZnodeError as error:  # written by another tool: skipped
            log.error("client quotas of %s not applied: %s", entity, error)
        except QuotaRequestError:
            # (not its text, which quotes the value: a user's znode holds its SCRAM credentials too)
            log.error("client quotas of %s not applied: %s holds a quota that is not a number", entity, where)
        return {}

    def _write(self, entity: QuotaEntity, values: Mapping[str, float]) -> None:
        """Replace the entity's quota keys, keeping its other keys (a user's SCRAM credentials), by
        compare-and-set on the znode's version, tried again when another broker wrote it meanwhile."""
        config_type, name = zk_entity_path(entity)
        path = paths.config_entity(config_type, name)
        for _ in range(MAX_UPDATE_RETRIES + 1):
            found = self.zk.read(path)
            current = {} if found is None else EntityConfigZnode.parse(found[0], path).config
            config = {key: value for key, value in current.items() if key not in entity.keys}
            config.update({key: config_string(key, value) for key, value in values.items()})
            # an entity left with nothing loses its znode, as in Kafka (AdminZkClient.tryCleanQuotaNodes)
            if not config and (
                found is None or remove_empty_entity(self.zk, config_type, name, found[1].version)
            ):
                break
            data = EntityConfigZnode(config).serialize()
            try:
                if found is None:
                    self.zk.create_persistent_path(path, data, exist_ok=False)
                else:
                    self.zk.write(self.zk.kazoo.set_async, path, data, found[1].version)
            except (BadVersionError, NodeExistsError):
                time.sleep(random.uniform(0.05, 0.1))
                continue
            break
        else:
            raise ZooKeeperError(f"{path} changed too often to be updated ({MAX_UPDATE_RETRIES} retries)")
        create_config_change_notification(self.zk, f"{config_type}/{name}")

    def _read_into(self, found: QuotasByEntity, entity: QuotaEntity) -> None:
        values = self.entity_quotas(entity)
        if values:
            found[entity] = values


class ZkQuotaChangeFollower:
    """Every broker's side of /config/changes for quotas: reads them all at start, then the entities
    each new notification names, into the quotas in force here."""

    def __init__(self, store: ZkQuotaStore, quotas: ClientQuotas) -> None:
        self.store = store
        self.zk = store.zk
        self.quotas = quotas
        #: The newest /config/changes notification handled (-1: none yet).
        self.sequence = -1
        self._following = CoalescedPasses(self._read_changes, "client quota changes")

    async def start(self) -> None:
        """Read every quota, then follow the change notifications."""
        loop = asyncio.get_running_loop()
        self.sequence, found = await asyncio.to_thread(self._read_everything)
        for entity, values in found.items():
            self.quotas.apply(entity, values)
        self.zk.watch_children(paths.CONFIG_CHANGES, lambda _: self._following.trigger(), loop)

    # ----- in worker threads --------------------------------------------------------------------

    def _read_everything(self) -> tuple[int, QuotasByEntity]:
        numbers = [
            paths.config_change_sequence(child)
            for child in self.zk.children(paths.CONFIG_CHANGES)
            if child.startswith(paths.CONFIG_CHANGE_PREFIX)
        ]
        return max(numbers, default=-1), self.store.all_quotas()

    def _changed_entities(self) -> list[QuotaEntity]:
        changed = []
        for sequence, change in config_changes_after(self.zk, self.sequence):
            self.sequence = max(self.sequence, sequence)
            entity = entity_from_zk_path(change.entity_path)
            if entity is not None:
                changed.append(entity)
        return changed

    # ----- on the loop ----------------------------------------------------------------------------

    async def _read_changes(self) -> None:
        entities = await asyncio.to_thread(self._changed_entities)
        for entity in dict.fromkeys(entities):
            values = await asyncio.to_thread(self.store.entity_quotas, entity)
            self.quotas.apply(entity, values)


def _order(entity: QuotaEntity) -> tuple[str, str]:
    def name(part: object) -> str:
        return "" if part is None else "<default>" if part is DEFAULT else f"={part}"

    return name(entity.user), name(entity.client_id)
