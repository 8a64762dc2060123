"""Client quotas in a ZooKeeper cluster: /config/users, /config/clients and /config/ips, as Kafka 3.9
keeps them.

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
its read and its write is lost), removing it once it holds nothing (as Kafka), then notifies; every
broker (this one too) re-reads the entities its notifications name, as Kafka's ZkConfigManager with
its UserConfigHandler and ClientIdConfigHandler. All quotas are read at start.
ZooKeeper calls block: they run in worker threads, and what they read is applied on the loop.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Mapping
from typing import Final

from kazoo.exceptions import BadVersionError, NodeExistsError

from odradek.cluster.zookeeper import paths
from odradek.cluster.zookeeper.client import ZooKeeperClient
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
    QuotaEntity,
    QuotaRequestError,
    config_string,
    desanitize,
    entity_from_zk_path,
    quota_values,
    zk_entity_path,
)

log = logging.getLogger(__name__)

_CLIENTS = "clients"
#: Attempts of one compare-and-set of an entity's config before giving up.
MAX_UPDATE_RETRIES: Final = 10


class ZkClientQuotas:
    def __init__(self, zk: ZooKeeperClient, quotas: ClientQuotas) -> None:
        self.zk = zk
        self.quotas = quotas
        #: The newest /config/changes notification handled (-1: none yet).
        self.sequence = -1
        self._following: asyncio.Task[None] | None = None
        self._again = False

    async def start(self) -> None:
        """Read every quota, then follow the change notifications."""
        loop = asyncio.get_running_loop()
        self.sequence, found = await asyncio.to_thread(self._read_everything)
        for entity, values in found.items():
            self.quotas.apply(entity, values)
        self.quotas.persist = self.write
        self.zk.watch_children(paths.CONFIG_CHANGES, lambda _: self._follow(), loop)

    async def write(self, entity: QuotaEntity, values: Mapping[str, float]) -> None:
        await asyncio.to_thread(self._write, entity, values)
        self.quotas.apply(entity, values)  # at once here; the other brokers by the notification

    # ----- in worker threads --------------------------------------------------------------------

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

    def _read_everything(self) -> tuple[int, dict[QuotaEntity, dict[str, float]]]:
        numbers = [
            paths.config_change_sequence(child)
            for child in self.zk.children(paths.CONFIG_CHANGES)
            if child.startswith(paths.CONFIG_CHANGE_PREFIX)
        ]
        found: dict[QuotaEntity, dict[str, float]] = {}
        for user in self.zk.children(f"{paths.CONFIG}/{paths.USER_CONFIG}"):
            self._read_into(found, QuotaEntity(user=desanitize(user)))
            user_path = f"{paths.CONFIG}/{paths.USER_CONFIG}/{user}/{_CLIENTS}"
            for client in self.zk.children(user_path):
                self._read_into(found, QuotaEntity(desanitize(user), desanitize(client)))
        for client in self.zk.children(f"{paths.CONFIG}/{paths.CLIENT_CONFIG}"):
            self._read_into(found, QuotaEntity(client_id=desanitize(client)))
        for ip in self.zk.children(f"{paths.CONFIG}/{paths.IP_CONFIG}"):
            self._read_into(found, QuotaEntity(ip=desanitize(ip)))
        return max(numbers, default=-1), found

    def _read_into(self, found: dict[QuotaEntity, dict[str, float]], entity: QuotaEntity) -> None:
        values = self._read_entity(entity)
        if values:
            found[entity] = values

    def _read_entity(self, entity: QuotaEntity) -> dict[str, float]:
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

    def _changed_entities(self) -> list[QuotaEntity]:
        changed = []
        for sequence, change in config_changes_after(self.zk, self.sequence):
            self.sequence = max(self.sequence, sequence)
            entity = entity_from_zk_path(change.entity_path)
            if entity is not None:
                changed.append(entity)
        return changed

    # ----- on the loop ----------------------------------------------------------------------------

    def _follow(self) -> None:
        if self._following is not None and not self._following.done():
            self._again = True  # one more pass once this one is done
            return
        self._following = asyncio.get_running_loop().create_task(self._read_changes())

    async def _read_changes(self) -> None:
        while True:
            self._again = False
            try:
                entities = await asyncio.to_thread(self._changed_entities)
                for entity in dict.fromkeys(entities):
                    values = await asyncio.to_thread(self._read_entity, entity)
                    self.quotas.apply(entity, values)
            except Exception:  # ZooKeeper unreachable for long: the next notification reads again
                log.exception("reading client quota changes failed")
            if not self._again:
                return
