"""Dynamic configs in /config/<type>/<name> and their change notifications, as Kafka 3.9 writes them
(KafkaZkClient.setOrCreateEntityConfigs + createConfigChangeNotification, in AdminZkClient's order).

A change is two writes: the entity's whole config, then a sequential notification
/config/changes/config_change_<10 digits> naming it. Every broker reads the notifications after the
last one it handled (ZkNodeChangeNotificationListener), in sequence order, and re-reads those entities.
A user, client or IP left with no config loses its znode instead (`remove_empty_entity`), as Kafka's
AdminZkClient.tryCleanQuotaNodes keeps /config/users, /config/clients and /config/ips from growing
with every user and quota ever made; the notification is written all the same.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError, NotEmptyError

from odradek.cluster.zookeeper import paths
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.cluster.zookeeper.config_znodes import ConfigChangeNotification, EntityConfigZnode
from odradek.cluster.zookeeper.znode_json import MalformedZnodeError

log = logging.getLogger(__name__)

#: The entity types whose znodes go once they hold no config (Kafka's quota entity types).
_REMOVED_WHEN_EMPTY = frozenset({paths.USER_CONFIG, paths.CLIENT_CONFIG, paths.IP_CONFIG})
_CLIENTS = "clients"


def change_entity_config(
    zk: ZooKeeperClient, entity_type: str, entity_name: str, config: Mapping[str, str]
) -> int:
    """Write an entity's config overrides (all of them: this replaces the znode) and notify every
    broker; returns the notification's sequence number."""
    set_entity_config(zk, entity_type, entity_name, config)
    return create_config_change_notification(zk, f"{entity_type}/{entity_name}")


def set_entity_config(
    zk: ZooKeeperClient, entity_type: str, entity_name: str, config: Mapping[str, str]
) -> None:
    path = paths.config_entity(entity_type, entity_name)
    data = EntityConfigZnode(config).serialize()
    try:
        zk.write(zk.kazoo.set_async, path, data)
    except NoNodeError:
        try:
            zk.create_persistent_path(path, data, exist_ok=False)
        except NodeExistsError:  # created meanwhile by another broker: last writer wins, as in Kafka
            zk.write(zk.kazoo.set_async, path, data)


def remove_empty_entity(
    zk: ZooKeeperClient, entity_type: str, entity_name: str, version: int | None = None
) -> bool:
    """Delete the znode of a user, client or IP entity (`entity_name` sanitized, perhaps
    `<user>/clients/<client>`) that is to hold no config, then a user's `clients` znode and the user's
    own when nothing is left in them; True once the entity's znode is gone. False (the caller writes
    the empty config instead) for other entity types, an entity with children, or, given `version`,
    one changed since it was read at that version.

    Each delete is non-recursive and the user's own is conditional on the version read empty: a child
    or a config another broker adds meanwhile stays (Kafka deletes recursively after looking).
    """
    if entity_type not in _REMOVED_WHEN_EMPTY:
        return False
    path = paths.config_entity(entity_type, entity_name)
    try:
        zk.write(zk.kazoo.delete_async, path, -1 if version is None else version)
    except (NotEmptyError, BadVersionError):
        return False
    except NoNodeError:
        pass  # gone already: nothing of it is left to clean
    user, _, client = entity_name.partition(f"/{_CLIENTS}/")
    if entity_type == paths.USER_CONFIG and client:
        user_path = paths.config_entity(entity_type, user)
        try:
            zk.write(zk.kazoo.delete_async, f"{user_path}/{_CLIENTS}")
            found = zk.read(user_path)
            if found is not None and _holds_no_config(found[0]):
                zk.write(zk.kazoo.delete_async, user_path, found[1].version)
        except (NotEmptyError, BadVersionError, NoNodeError):
            pass  # another client, a config or a child of the user's: it stays
    return True


def _holds_no_config(data: bytes | None) -> bool:
    """No data (an intermediate znode's) or an empty `config`; not data it cannot read (kept for
    whoever wrote it)."""
    if not data:
        return True
    try:
        doc = json.loads(data)
    except ValueError:
        return False
    return isinstance(doc, dict) and doc.get("config") == {}


def entity_config(zk: ZooKeeperClient, entity_type: str, entity_name: str) -> dict[str, str]:
    """An entity's config overrides ({} when it has none)."""
    path = paths.config_entity(entity_type, entity_name)
    found = zk.read(path)
    return {} if found is None else dict(EntityConfigZnode.parse(found[0], path).config)


def create_config_change_notification(zk: ZooKeeperClient, entity_path: str) -> int:
    """Create /config/changes/config_change_<n> for `entity_path` (`<type>/<name>`); returns n."""
    zk.create_persistent_path(paths.CONFIG_CHANGES)
    created = zk.write(
        zk.kazoo.create_async,
        f"{paths.CONFIG_CHANGES}/{paths.CONFIG_CHANGE_PREFIX}",
        ConfigChangeNotification(entity_path).serialize(),
        sequence=True,
    )
    return paths.config_change_sequence(str(created).rsplit("/", 1)[1])


def config_changes_after(zk: ZooKeeperClient, sequence: int) -> list[tuple[int, ConfigChangeNotification]]:
    """The notifications with a sequence number above `sequence` (-1: all), in order.

    A notification deleted between listing and reading (Kafka purges those older than 15 minutes)
    is skipped: the entity's current config is what a broker reads anyway. So is one that cannot be
    read (logged): it must not hide the changes after it.
    """
    changes = []
    for name in zk.children(paths.CONFIG_CHANGES):
        if not name.startswith(paths.CONFIG_CHANGE_PREFIX):
            continue
        try:
            number = paths.config_change_sequence(name)
        except ValueError:
            log.warning("config change notification %s skipped: no sequence number", name)
            continue
        if number <= sequence:
            continue
        path = f"{paths.CONFIG_CHANGES}/{name}"
        found = zk.read(path)
        if found is None:
            continue
        try:
            changes.append((number, ConfigChangeNotification.parse(found[0], path)))
        except MalformedZnodeError as error:
            log.warning("config change notification skipped: %s", error)
    return sorted(changes, key=lambda change: change[0])
