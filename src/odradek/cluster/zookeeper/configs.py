"""Dynamic configs in /config/<type>/<name> and their change notifications, as Kafka 3.9 writes them
(KafkaZkClient.setOrCreateEntityConfigs + createConfigChangeNotification, in AdminZkClient's order).

A change is two writes: the entity's whole config, then a sequential notification
/config/changes/config_change_<10 digits> naming it. Every broker reads the notifications after the
last one it handled (ZkNodeChangeNotificationListener), in sequence order, and re-reads those entities.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from kazoo.exceptions import NodeExistsError, NoNodeError

from odradek.cluster.zookeeper import paths
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.cluster.zookeeper.config_znodes import ConfigChangeNotification, EntityConfigZnode
from odradek.cluster.zookeeper.znode_json import MalformedZnodeError

log = logging.getLogger(__name__)


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
