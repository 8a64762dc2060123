"""Dynamic broker configs in a ZooKeeper cluster: /config/brokers/<default> and /config/brokers/<id>.

As Kafka's ZooKeeper mode: AlterConfigs and IncrementalAlterConfigs on a BROKER resource (this
broker's id, or "" for the cluster-wide default) write the entity's whole config, then a
/config/changes notification (AdminZkClient.changeBrokerConfig). Every broker follows the
notifications (TopicConfigSync) and, for the two entities it is concerned by (the default and its
own id: DynamicConfigManager's BrokerConfigHandler), reads both again and applies them over its
static configuration. A broker reads them at start, before it serves.

Kafka stores a password config (a key store's password...) in ZooKeeper only encrypted with
`password.encoder.secret`, and refuses it without one ("Password encoder secret not configured").
odradek has no password encoder: such configs are refused in a cluster, never written in clear.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

from odradek.cluster.dynamic_configs import DynamicBrokerConfigs
from odradek.cluster.zookeeper import paths
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.cluster.zookeeper.configs import change_entity_config, entity_config
from odradek.config.broker import BrokerConfig
from odradek.config.catalog import BROKER_CONFIGS, LISTENER_PREFIX, listener_base
from odradek.protocol.error_codes import ErrorCode, KafkaError


class ZkBrokerConfigs:
    def __init__(self, zk: ZooKeeperClient, node_id: int, dynamic: DynamicBrokerConfigs) -> None:
        self.zk = zk
        self.node_id = node_id
        self.dynamic = dynamic
        #: Makes a new configuration the one every service reads (set once the services exist).
        self.apply: Callable[[BrokerConfig], None] | None = None

    def entity_name(self, *, cluster_default: bool) -> str:
        return paths.DEFAULT_ENTITY if cluster_default else str(self.node_id)

    def concerns(self, entity_name: str) -> bool:
        """Whether a change of /config/brokers/<entity_name> changes this broker's configuration."""
        return entity_name in (paths.DEFAULT_ENTITY, str(self.node_id))

    async def load(self) -> BrokerConfig:
        """Read both layers and adopt them; the configuration they make."""
        cluster_default, own = await asyncio.to_thread(self._read)
        return self.dynamic.adopt(cluster_default, own)

    async def on_change(self, entity_name: str) -> None:
        """A /config/changes notification named brokers/<entity_name>."""
        if not self.concerns(entity_name):
            return
        config = await self.load()
        if self.apply is not None:
            self.apply(config)

    async def current(self, *, cluster_default: bool) -> dict[str, str]:
        """A layer as ZooKeeper has it now (what an incremental change starts from)."""
        name = self.entity_name(cluster_default=cluster_default)
        return await asyncio.to_thread(entity_config, self.zk, paths.BROKER_CONFIG, name)

    async def write(self, configs: Mapping[str, str], *, cluster_default: bool) -> None:
        """Replace a layer and notify every broker (this one applies it when the notification comes,
        as Kafka's brokers do)."""
        self.check_storable(configs)
        name = self.entity_name(cluster_default=cluster_default)
        await asyncio.to_thread(change_entity_config, self.zk, paths.BROKER_CONFIG, name, dict(configs))

    def check_storable(self, configs: Mapping[str, str]) -> None:
        """Refuse (INVALID_REQUEST) a layer with a password config: it would be stored in clear."""
        passwords = sorted(name for name in configs if _is_password(name))
        if passwords:
            raise KafkaError(
                ErrorCode.INVALID_REQUEST,
                f"Password encoder secret not configured: {', '.join(passwords)} cannot be stored in "
                "ZooKeeper (odradek does not encrypt dynamic passwords)",
            )

    def _read(self) -> tuple[dict[str, str], dict[str, str]]:
        return (
            entity_config(self.zk, paths.BROKER_CONFIG, paths.DEFAULT_ENTITY),
            entity_config(self.zk, paths.BROKER_CONFIG, str(self.node_id)),
        )


def _is_password(name: str) -> bool:
    key = BROKER_CONFIGS.get(listener_base(name) if name.startswith(LISTENER_PREFIX) else name)
    return key is None or key.sensitive  # a name no catalog knows might be a secret
